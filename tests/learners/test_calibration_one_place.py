"""Each mechanism's calibration lives in one module: its schedule (q, T), its noise calibration and σ = z·C.

Checked on the sources of ``repro/`` (AST and source text), so a learner, study, estimator or audit that
computes (q, T) or σ itself, or calls the accountant's calibration directly, fails here:

- the Poisson-subsampled Gaussian (DP-SGD, Algorithm 2, the DP-SGD baselines' primal, DP-FERMI's
  ``per_sample`` mode): :mod:`repro.learners.dp_sgd` (``schedule``, ``calibrate_noise``, ``noise_std``);
- DP-FERMI (the strict accountant, Theorem 3.3's σ's, its per-model noise stds, its shuffled schedule):
  :mod:`repro.learners.dp_fermi` (``schedule``, ``calibrate_privacy``, ``reference_noise``, ``noise_stds``);
- PF-LD (DP-SGD primal composed with the Gaussian dual releases): :mod:`repro.learners.baselines.pf_ld`;
- the accountant's primitives themselves: ``repro/privacy/``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "repro"

DP_SGD = "learners/dp_sgd.py"
DP_FERMI = "learners/dp_fermi.py"
PF_LD = "learners/baselines/pf_ld.py"

#: accountant primitives (called by name) and the one module allowed to call each
CALLS = {
    "opacus_sampling": {DP_SGD},
    "calibrate_noise_multiplier": {DP_SGD},
    "calibrate_strict_noise_multiplier": {DP_FERMI},
    "theorem33_noise": {DP_FERMI},
    "calibrate_pf_ld": {PF_LD},
    "calibrate_dp_mechanism": set(),
}
#: (q, T) written out: ⌈n/B⌉ and min(1, B/n)
SCHEDULE = [re.compile(r"ceil\(\s*n\w*\s*/"), re.compile(r"min\(\s*1(\.0)?\s*,\s*[\w.]+\s*/\s*n\w*\s*\)")]
SCHEDULE_MODULES = {DP_SGD, DP_FERMI}
#: σ = z·C: a product of a noise multiplier (``z``, ``noise_multiplier``) and a clip norm
NOISE_MODULES = {DP_SGD, DP_FERMI}
#: the shipped-configuration audits write the std the accountant assumes (z·C) themselves, on purpose: read from
#: the engine's noise function, a broken function would move "intended" with "observed" and hide the break
#: (tests/studies/audit/test_subsampled.py halves that function and expects the audit to see it)
NOISE_MODULES |= {"studies/audit/subsampled.py", "studies/audit/one_run.py"}


def _sources() -> dict[str, str]:
    return {p.relative_to(PACKAGE).as_posix(): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_multiplier(node: ast.AST) -> bool:
    return any(_name(n) in ("z", "noise_multiplier") for n in ast.walk(node))


def _is_clip(node: ast.AST) -> bool:
    return "clip" in (_name(node) or "")


def offences(sources: dict[str, str]) -> list[str]:
    """Every (q, T), σ = z·C or accountant-calibration site outside its mechanism's module."""
    found = []
    for rel, text in sources.items():
        if rel.startswith("privacy/"):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and _name(node.func) in CALLS and rel not in CALLS[_name(node.func)]:
                found.append(f"{rel}:{node.lineno}: calls {_name(node.func)}")
            if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and rel not in NOISE_MODULES
                    and ((_is_clip(node.right) and _is_multiplier(node.left))
                         or (_is_clip(node.left) and _is_multiplier(node.right)))):
                found.append(f"{rel}:{node.lineno}: computes σ = z·C")
        if rel not in SCHEDULE_MODULES:
            for i, line in enumerate(text.splitlines(), start=1):
                if any(p.search(line) for p in SCHEDULE):
                    found.append(f"{rel}:{i}: computes (q, T): {line.strip()}")
    return found


def test_calibration_is_in_one_module_per_mechanism() -> None:
    assert offences(_sources()) == []


@pytest.mark.parametrize(("snippet", "home"), [
    ("q, T = opacus_sampling(n, B, epochs)\n", DP_SGD),
    ("z = calibrate_noise_multiplier(1.0, 1e-5, q, T)\n", DP_SGD),
    ("z = accounting.calibrate_strict_noise_multiplier(1.0, q, T, 1e-5)\n", DP_FERMI),
    ("noise = theorem33_noise(n, T, B, rho, 1.0)\n", DP_FERMI),
    ("z, zd = calibrate_pf_ld(1.0, 1e-5, q, T, 10)\n", PF_LD),
    ("sigma = noise_multiplier * clip_norm\n", DP_SGD),
    ("th_std = lam * 2 * z * 2 * cfg.clip_norm\n", DP_FERMI),
    ("q = min(1.0, batch_size / n)\n", DP_SGD),
    ("steps = int(epochs * math.ceil(n / batch_size))\n", DP_FERMI),
])
def test_the_check_catches_a_copy(snippet: str, home: str) -> None:
    """Each kind of copy is reported in a study or another learner, and not in its mechanism's module."""
    assert offences({"studies/x.py": snippet})
    assert offences({"learners/dp_sgd_unit.py": snippet})
    assert offences({home: snippet}) == []
