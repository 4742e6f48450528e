"""One-run privacy audits of a finished result's cells (``repro run ID --audit``).

For every cell of the result whose ε is calibrated by a learner unit for the Poisson-subsampled Gaussian
under add/remove (today: DP-FERMI ``strict-all`` cells of a privacy table, and Algorithm 2's DP-SGD cells of the
thesis's Part I tables, from their trials), the white-box one-run audit of
:func:`repro.studies.audit.one_run.one_run_shipped` runs at the cell's own n, q, T, z, clip and (ε, δ): the
configuration is rebuilt by the same ``configure`` the study called (and checked against the recorded q, T and
z), one trial is drawn by the unit, and all n records are canaries. The bound is written to
``tables/one_run_audit.csv`` of the result beside the cell's claimed ε and its label; cells of other methods are
listed with the reason they are not audited.

Not yet: the bound in ``privacy.csv``, ``summary.csv`` and the report, and the other mechanisms (the DP-SGD
baselines draw inside their training loop).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from repro.engine.cache import atomic_write_text
from repro.learners import dp_sgd_unit
from repro.studies.audit import one_run
from repro.studies.audit import subsampled as sub

__all__ = ["audit_result", "COLUMNS"]

COLUMNS = ("method", "variant", "data", "epsilon", "delta", "label", "relation", "n", "q", "steps",
           "noise_multiplier", "canaries", "guesses", "correct", "audited_epsilon", "ratio", "confidence",
           "status", "seconds")


def _cells(privacy: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in ("method", "variant", "data", "epsilon", "delta") if c in privacy.columns]
    return privacy.drop_duplicates(subset=keys)


#: the method name of Algorithm 2's DP-SGD part in the thesis's Part I tables (its own ε is recorded as eps_dpsgd)
DP_SGD_METHOD = "DP-SGD (before post-processing)"


def _dp_sgd_rows(directory: Path, run: dict, rng_for: Callable[[str], np.random.Generator],
                 level: float) -> list[dict]:
    """Algorithm 2's DP-SGD cells of a thesis Part I result (trials.csv and tables/data.csv), rebuilt by
    :func:`repro.learners.dp_sgd_unit.configure` at the recorded noise multiplier and checked against the
    recorded q, T and ε."""
    trials_path, data_path = directory / "trials.csv", directory / "tables" / "data.csv"
    if not trials_path.is_file() or not data_path.is_file():
        return []
    trials = pd.read_csv(trials_path)
    if "method" not in trials or "noise_multiplier" not in trials:
        return []
    trials = trials[(trials["method"] == DP_SGD_METHOD) & (trials["noise_multiplier"] > 0)]
    sizes = pd.read_csv(data_path)[["data", "repetition", "n_fit"]].drop_duplicates()
    cells = trials.merge(sizes, on=["data", "repetition"]).drop_duplicates(
        subset=["data", "n_fit", "noise_multiplier", "q", "steps"])
    params = run.get("params", {})
    rows = []
    for _, c in cells.iterrows():
        t0 = time.perf_counter()
        n, z = int(c["n_fit"]), float(c["noise_multiplier"])
        base = {"method": DP_SGD_METHOD, "variant": run.get("variant"), "data": c["data"],
                "epsilon": float(c["eps_dpsgd"]), "delta": float(params["delta"]), "label": c.get("eps_label", ""),
                "n": n, "q": float(c["q"]), "steps": int(c["steps"]), "noise_multiplier": z}
        conf = dp_sgd_unit.configure(n=n, epsilon=None, delta=float(params["delta"]), noise_multiplier=z,
                                     clip_norm=float(params["clip_norm"]), lr=float(params["lr"]),
                                     batch_size=int(params["batch_size"]), epochs=int(params["epochs"]),
                                     sampling_rule=str(params.get("sampling_rule", "opacus")))
        if not (math.isclose(conf.sampling_probability, base["q"], rel_tol=1e-9) and conf.steps == base["steps"]
                and math.isclose(conf.guarantee.epsilon, base["epsilon"], rel_tol=1e-6)):
            rows.append({**base, "status": f"not audited: configure gives (q, T, ε) = ({conf.sampling_probability}, "
                                           f"{conf.steps}, {conf.guarantee.epsilon}), the cell recorded "
                                           f"({base['q']}, {base['steps']}, {base['epsilon']})"})
            continue
        key = f"{run.get('result_id')}|{c['data']}|{n}|{z}"
        r = one_run.one_run_configured("dp-sgd-shipped", conf.config, conf.guarantee, conf.sampling_probability,
                                       conf.steps, n, n, rng_for(key), level=level)
        rows.append({**base, "relation": conf.guarantee.relation.value, "canaries": r.canaries,
                     "guesses": r.guesses, "correct": r.correct, "audited_epsilon": r.audited_epsilon,
                     "ratio": r.ratio, "confidence": 1 - level, "status": "audited (one run, white-box)",
                     "seconds": time.perf_counter() - t0})
    return rows


def audit_result(directory: Path, rng_for: Callable[[str], np.random.Generator], *,
                 level: float = 0.05) -> pd.DataFrame:
    """Audit the cells of the result in ``directory`` (module docstring); writes and returns the table (empty,
    and nothing written, for a result without a privacy table). ``rng_for(key)`` gives each cell's generator
    from its key (result id, data, ε, δ), so a cell's bound does not depend on the others."""
    directory = Path(directory)
    path = directory / "tables" / "privacy.csv"
    run = json.loads((directory / "run.json").read_text())
    params = run.get("params", {})
    rows = _dp_sgd_rows(directory, run, rng_for, level)
    privacy = pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=["epsilon"])
    if privacy.empty and not rows:     # the result records no privacy cells: nothing to audit
        return pd.DataFrame(columns=list(COLUMNS))
    for _, c in _cells(privacy).iterrows():
        base = {"method": c.get("method"), "variant": c.get("variant"), "data": c.get("data"),
                "epsilon": float(c["epsilon"]), "delta": float(c.get("delta", math.nan)),
                "label": c.get("eps_label", ""), "n": c.get("n_train"), "q": c.get("sampling_probability"),
                "steps": c.get("steps"), "noise_multiplier": c.get("noise_multiplier")}
        if not (c.get("method") == "dp-fermi" and c.get("variant") == "strict-all"):
            rows.append({**base, "status": "not audited: only unit-configured strict-all cells are, so far"})
            continue
        if not math.isfinite(base["epsilon"]):
            rows.append({**base, "status": "not audited: non-private cell"})
            continue
        t0 = time.perf_counter()
        n = int(c["n_train"])
        ship = sub.Shipped(n, int(params["batch_size"]), int(params["epochs"]), float(c["clip_norm"]),
                           base["epsilon"], base["delta"], f"{run.get('result_id', '')} {base['data']}")
        claim, q, steps, z, _ = sub._configured("dp-fermi-strict-all-shipped", ship)
        recorded = (float(c["sampling_probability"]), int(c["steps"]), float(c["noise_multiplier"]))
        if not (math.isclose(q, recorded[0], rel_tol=1e-9) and steps == recorded[1]
                and math.isclose(z, recorded[2], rel_tol=1e-6)):
            rows.append({**base, "status": f"not audited: configure gives (q, T, z) = ({q}, {steps}, {z}), the cell "
                                           f"recorded {recorded}"})
            continue
        key = f"{run.get('result_id')}|{base['data']}|{base['epsilon']}|{base['delta']}"
        r = one_run.one_run_shipped("dp-fermi-strict-all-shipped", n, rng_for(key), ship=ship, level=level)
        rows.append({**base, "relation": claim.relation.value, "canaries": r.canaries, "guesses": r.guesses,
                     "correct": r.correct, "audited_epsilon": r.audited_epsilon, "ratio": r.ratio,
                     "confidence": 1 - level, "status": "audited (one run, white-box)",
                     "seconds": time.perf_counter() - t0})
    table = pd.DataFrame(rows).reindex(columns=list(COLUMNS))
    atomic_write_text(directory / "tables" / "one_run_audit.csv", table.to_csv(index=False))
    return table
