"""The mutation table: each known way to break a DP implementation, applied to a temporary copy of the package,
and which audit or unit test catches it (docs/privacy-audit.md, "Mutation table").

For every break the script copies ``repro/`` and ``tests/`` (and ``pyproject.toml``) to a temporary folder,
replaces one exact piece of code (the script stops if the piece is no longer there, so the table cannot go
stale silently), then, in fresh processes importing the copy:

- runs the audits named for the break on their *claimed* instance (``repro.studies.audit.mechanism_audit``'s
  registry, the runs of the profile given) and reports the verdict: **caught** when the claim is violated;
- runs the unit tests named for the break: **caught** when one fails.

    python benchmarks/privacy_mutations.py                       # every break, smoke audits and the tests
    python benchmarks/privacy_mutations.py --profile full        # the audits at the full profile's runs
    python benchmarks/privacy_mutations.py --only "every row" --no-tests

A break that no check catches is printed as such. ``tests/benchmarks/test_privacy_mutations.py`` runs a smoke
subset (:data:`SMOKE`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    """One break: where (file, the exact code and its replacement), and what should catch it."""

    name: str
    file: str
    old: str
    new: str
    audits: tuple[str, ...]
    tests: tuple[str, ...]
    why_not: str = ""     # where a check cannot see the break: why
    seed: int = field(default=0)


MUTATIONS: tuple[Mutation, ...] = (
    Mutation("noise ×0.5", "repro/learners/dp_sgd.py",
             "    return noise_multiplier * clip_norm\n", "    return 0.5 * noise_multiplier * clip_norm\n",
             ("dp-sgd", "dp-sgd-shipped", "tran-2021a-shipped"), ("tests/learners/test_dp_sgd.py",)),
    Mutation("sampler at 2q", "repro/privacy/sampling.py",
             "    return np.flatnonzero(rng.random(n) < q)\n", "    return np.flatnonzero(rng.random(n) < 2 * q)\n",
             ("dp-sgd-shipped", "dp-fermi-strict-all-shipped", "tran-2021a-shipped"),
             ("tests/privacy/test_sampling.py",)),
    Mutation("every row", "repro/privacy/sampling.py",
             "    return np.flatnonzero(rng.random(n) < q)\n", "    return np.flatnonzero(rng.random(n) < 2)\n",
             ("dp-sgd-shipped", "dp-fermi-strict-all-shipped", "tran-2021a-shipped"),
             ("tests/privacy/test_sampling.py",)),
    Mutation("fixed-size batches accounted as Poisson", "repro/privacy/sampling.py",
             "    return np.flatnonzero(rng.random(n) < q)\n",
             "    return np.sort(rng.choice(n, size=round(n * q), replace=False))\n",
             ("dp-sgd-shipped",), ("tests/privacy/test_sampling.py",),
             why_not="audits: the canary's own inclusions are i.i.d. Bernoulli(B/n) under both schemes, so a "
                     "white-box canary whose neighbours have no gradient sees the same law; the difference is in "
                     "the other records (batch size fixed), which the law tests see"),
    Mutation("clipping skipped", "repro/learners/dp_sgd_unit.py",
             '    rc = r * jnp.minimum(1.0, a["clip"] / (jnp.abs(r) * rn + 1e-6))\n', "    rc = r\n",
             ("dp-sgd",), ("tests/learners/test_dp_sgd_unit.py",),
             why_not="the shipped audits: their canary's gradient is taken as clipped to C (white-box design)"),
    Mutation("accountant at the wrong relation (replace-one as add/remove)", "repro/learners/dp_fermi.py",
             "            th_std = lam * math.sqrt(2) * z * 2 * clip\n",
             "            th_std = lam * math.sqrt(2) * z * clip\n",
             ("dp-fermi-strict", "dp-fermi-strict-shipped"), ("tests/learners/test_dp_fermi.py",)),
    Mutation("composition counts T/2 steps", "repro/privacy/accounting.py",
             "dpa.GaussianDpEvent(noise_multiplier)), int(steps))",
             "dpa.GaussianDpEvent(noise_multiplier)), max(int(steps) // 2, 1))",
             ("dp-sgd", "dp-sgd-shipped"), ("tests/privacy/test_accounting_references.py",)),
)

#: the subset a CI test runs (≲ 2 min of CPU): two sampler breaks and the noise break, the shipped DP-SGD audit
SMOKE = {"every row": ("dp-sgd-shipped",), "sampler at 2q": ("dp-sgd-shipped",), "noise ×0.5": ("dp-sgd-shipped",)}

_AUDIT = """
import json, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
from repro.studies.audit.mechanism_audit import REGISTRY
name, budget, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
mech = REGISTRY[name]
r = mech.run(mech.runs[budget], np.random.default_rng(seed))
print(json.dumps({"verdict": r.verdict, "exceeded": bool(r.exceeded), "claimed": r.claimed_epsilon,
                  "audited_at_best": r.audited_at_best, "claimed_at_best": r.claimed_at_best}))
"""


def copy_package(dest: Path) -> None:
    """``repro/``, ``tests/`` and ``pyproject.toml`` of this checkout into ``dest`` (no caches)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(ROOT / "repro", dest / "repro", ignore=ignore)
    shutil.copytree(ROOT / "tests", dest / "tests", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")


def apply(dest: Path, m: Mutation) -> None:
    """Make the break in the copy; stop if its code is not there exactly once."""
    path = dest / m.file
    text = path.read_text()
    if text.count(m.old) != 1:
        raise SystemExit(f"error: the code of break {m.name!r} is not in {m.file} exactly once; update MUTATIONS.")
    path.write_text(text.replace(m.old, m.new))


def _env(dest: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(dest), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def run_audit(dest: Path, name: str, budget: str, seed: int = 0) -> dict:
    """The audit ``name``'s claimed instance in the copy: its verdict (``caught`` when violated)."""
    out = subprocess.run([sys.executable, "-c", _AUDIT, name, budget, str(seed)], cwd=dest, env=_env(dest),
                         capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        return {"verdict": "error: " + (out.stderr.strip().splitlines() or ["?"])[-1], "caught": True}
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["caught"] = res["exceeded"]
    return res


def run_tests(dest: Path, paths: tuple[str, ...]) -> dict:
    """The unit tests ``paths`` in the copy (``caught`` when one fails)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0",
           *paths]
    out = subprocess.run(cmd, cwd=dest, env=_env(dest), capture_output=True, text=True, timeout=3600)
    last = (out.stdout.strip().splitlines() or ["?"])[-1]
    return {"caught": out.returncode != 0, "summary": last}


def check(m: Mutation, profile: str, audits: tuple[str, ...] | None = None, tests: bool = True) -> dict:
    """Apply ``m`` to a fresh copy and run its checks; the row of the table."""
    with tempfile.TemporaryDirectory(prefix="repro-mutation-") as tmp:
        dest = Path(tmp)
        copy_package(dest)
        apply(dest, m)
        t0 = time.perf_counter()
        row = {"break": m.name, "file": m.file, "profile": profile,
               "audits": {a: run_audit(dest, a, profile, m.seed) for a in (audits if audits is not None else m.audits)},
               "tests": run_tests(dest, m.tests) if tests else None, "why_not": m.why_not}
        row["seconds"] = time.perf_counter() - t0
    return row


def markdown(rows: list[dict]) -> str:
    out = ["| break | where | audits (profile): verdict of the claimed instance | unit tests | caught by |",
           "|---|---|---|---|---|"]
    for r in rows:
        aud = "; ".join(f"{a} ({r['profile']}): {v['verdict']}" for a, v in r["audits"].items()) or "—"
        tst = "not run" if r["tests"] is None else ("**fail** (caught)" if r["tests"]["caught"] else "pass")
        by = [a for a, v in r["audits"].items() if v["caught"]]
        if r["tests"] is not None and r["tests"]["caught"]:
            by.append("unit tests")
        caught = ", ".join(by) if by else "**NOT CAUGHT**"
        if r["why_not"]:
            caught += f" ({r['why_not']})"
        out.append(f"| {r['break']} | `{r['file']}` | {aud} | {tst} | {caught} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=("smoke", "full"), default="smoke", help="runs of the audits")
    ap.add_argument("--only", action="append", default=None, help="break name (repeatable)")
    ap.add_argument("--no-tests", action="store_true", help="audits only")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = ap.parse_args(argv)
    names = {m.name for m in MUTATIONS}
    unknown = [n for n in args.only or () if n not in names]
    if unknown:
        ap.error(f"unknown break {unknown[0]!r}; choose from: {', '.join(sorted(names))}")
    rows = []
    for m in MUTATIONS:
        if args.only and m.name not in args.only:
            continue
        rows.append(check(m, args.profile, tests=not args.no_tests))
        print(f"{m.name}: {rows[-1]['seconds']:.0f} s", file=sys.stderr, flush=True)
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0 if all(any(v["caught"] for v in r["audits"].values()) or (r["tests"] or {}).get("caught")
                    for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
