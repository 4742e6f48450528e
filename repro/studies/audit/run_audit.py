"""One-run privacy audits of a finished result's cells (``repro run ID --audit``).

For every cell of the result whose ε is calibrated by a learner unit for the Poisson-subsampled Gaussian
under add/remove (the DP-SGD steps of the tabular DP-FERMI figures' baselines, :data:`BASELINES`; DP-FERMI
``strict-all`` cells of a privacy table; Algorithm 2's DP-SGD cells of the thesis's Part I tables, from their
trials), the white-box one-run audit of :func:`repro.studies.audit.one_run.one_run_configured` runs at the cell's
own n, q, T, z, clip and (ε, δ): the configuration is rebuilt by the same ``configure`` the study called (and
checked against the recorded q, T and z), one trial is drawn by the unit (the baselines: their core's own step
draw), and all n records are canaries. The bound is written to ``tables/one_run_audit.csv`` of the result beside
the cell's claimed ε and its label; the other cells are listed with the reason they are not audited (DP-FERMI's
``reference`` cells: :data:`REFERENCE_REASON`). The bound is also written beside the claimed label in the result's
``tables/privacy.csv`` and ``summary.csv`` (:func:`annotate`: columns :data:`AUDIT_COLUMNS`, ``audited_epsilon``
and ``audit``, on the rows of the audited cells, selected by the typed columns :data:`CELL_KEYS`); a result with
no audited cell is left unchanged, so readers must treat the columns as optional.

**Randomness.** A study builds no generator: ``repro run ID --audit`` passes ``rng_for(*labels)``, which gives
each cell its own stream (:func:`repro.cli.run.one_run_audit_rng`, entropy: the base seed, then the stable words
of the result id, "one-run-audit" and the labels): the run's base seed (``run.json``) mixed with the cell's labels
(method, setting, and its ε and δ, or its n and z), as the runner seeds a trial. A rerun of the same result gives
the same bounds, another ``--base-seed`` other draws, and a cell's bound does not depend on the other cells.
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

__all__ = ["audit_result", "annotate", "audit_refusal", "COLUMNS", "AUDIT_COLUMNS", "AUDITABLE", "CELL_KEYS"]

#: ``claimed_epsilon``: the ε of the mechanism the audit attacks (the cell's ε, or a baseline's DP-SGD steps' own
#: accounted ε: PF-LD's primal share, Jagielski et al.'s learner share), the one ``ratio`` divides by
COLUMNS = ("method", "variant", "setting", "data", "epsilon", "delta", "label", "claimed_epsilon", "relation", "n",
           "q", "steps",
           "noise_multiplier", "canaries", "guesses", "correct", "audited_epsilon", "ratio", "confidence",
           "status", "seconds")


#: the columns :func:`annotate` adds beside the claimed label (``eps_label``) of an audited result's files
AUDIT_COLUMNS = ("audited_epsilon", "audit")

#: the typed columns that select an audited cell's rows in ``privacy.csv`` and ``summary.csv`` (with ``method``),
#: each where the file has it: the grid keys of the audited studies besides the method (a summary row also
#: carries its λ or hyperparameter, which the cell's audit covers)
CELL_KEYS = ("data", "epsilon")

#: study modules whose results can hold an auditable cell, and the variants that do (None: every variant)
AUDITABLE: dict[str, tuple[str, ...] | None] = {"repro.studies.dpfermi.tradeoff_figures": None,
                                                 "repro.studies.thesis.part1_tables": None}

#: what the one-run audit covers, in words (the refusal of ``--audit`` names it)
COVERS = ("the DP-SGD steps of the tabular DP-FERMI figures' baselines (Tran et al., PF-LD, Jagielski et al.), "
          "their DP-FERMI strict-all cells (--variant strict-all) and Algorithm 2's DP-SGD cells of the thesis's "
          "Tables 3.1-3.4")


def audit_refusal(result_id: str, trial: str, variant: str) -> str | None:
    """Why a result of study module ``trial`` run at ``variant`` can hold no auditable cell (None: it can), in
    one line for ``repro run ID --audit``, before any trial runs."""
    if trial in AUDITABLE and (AUDITABLE[trial] is None or variant in AUDITABLE[trial]):
        return None
    variants = AUDITABLE.get(trial)
    fix = f"run it with --variant {variants[0]}" if variants else "drop --audit for this result"
    return (f"--audit: {result_id} (variant {variant}) has no cell the one-run audit covers (it audits {COVERS}); "
            f"{fix}")


def _cells(privacy: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in ("method", "variant", "data", "epsilon", "delta") if c in privacy.columns]
    return privacy.drop_duplicates(subset=keys)


#: the method name of Algorithm 2's DP-SGD part in the thesis's Part I tables (its own ε is recorded as eps_dpsgd)
DP_SGD_METHOD = "DP-SGD (before post-processing)"


def _dp_sgd_rows(directory: Path, run: dict, rng_for: Callable[..., np.random.Generator],
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
        base = {"method": DP_SGD_METHOD, "variant": run.get("variant"), "setting": c.get("setting"), "data": c["data"],
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
        rng = rng_for(DP_SGD_METHOD, str(c.get("setting")), n, z)
        r = one_run.one_run_configured("dp-sgd-shipped", conf, n, rng, level=level)
        rows.append(_audited_row(base, r, conf, t0, level))
    return rows


def audit_result(directory: Path, rng_for: Callable[..., np.random.Generator], *,
                 level: float = 0.05) -> pd.DataFrame:
    """Audit the cells of the result in ``directory`` (module docstring); writes ``tables/one_run_audit.csv``,
    annotates ``tables/privacy.csv`` and ``summary.csv`` (:func:`annotate`) and returns the table (empty, and
    nothing written, for a result without privacy cells). ``rng_for(*labels)`` gives a cell's generator from its
    labels (module docstring)."""
    directory = Path(directory)
    path = directory / "tables" / "privacy.csv"
    run = json.loads((directory / "run.json").read_text())
    params = run.get("params", {})
    rows = _dp_sgd_rows(directory, run, rng_for, level)
    privacy = pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=["epsilon"])
    if privacy.empty and not rows:     # the result records no privacy cells: nothing to audit
        return pd.DataFrame(columns=list(COLUMNS))
    for _, c in _cells(privacy).iterrows():
        base = {"method": c.get("method"), "variant": c.get("variant"), "setting": c.get("setting"),
                "data": c.get("data"),
                "epsilon": float(c["epsilon"]), "delta": float(c.get("delta", math.nan)),
                "label": c.get("eps_label", ""), "n": c.get("n_train"), "q": c.get("sampling_probability"),
                "steps": c.get("steps"), "noise_multiplier": c.get("noise_multiplier")}
        if not math.isfinite(base["epsilon"]):
            rows.append({**base, "status": "not audited: non-private cell"})
            continue
        if c.get("method") in BASELINES:
            rows.append(_baseline_row(c, base, run, rng_for, level))
            continue
        if not (c.get("method") == "dp-fermi" and c.get("variant") == "strict-all"):
            rows.append({**base, "status": REFERENCE_REASON if c.get("method") == "dp-fermi" else
                         "not audited: no accountant-calibrated mechanism of this method is audited"})
            continue
        t0 = time.perf_counter()
        n = int(c["n_train"])
        ship = sub.Shipped(n, int(params["batch_size"]), int(params["epochs"]), float(c["clip_norm"]),
                           base["epsilon"], base["delta"], f"{run.get('result_id', '')} {base['data']}")
        conf = sub._configure("dp-fermi-strict-all-shipped", ship)
        q, steps, z = conf.sampling_probability, conf.steps, conf.noise_multiplier
        recorded = (float(c["sampling_probability"]), int(c["steps"]), float(c["noise_multiplier"]))
        if not (math.isclose(q, recorded[0], rel_tol=1e-9) and steps == recorded[1]
                and math.isclose(z, recorded[2], rel_tol=1e-6)):
            rows.append({**base, "status": f"not audited: configure gives (q, T, z) = ({q}, {steps}, {z}), the cell "
                                           f"recorded {recorded}"})
            continue
        rng = rng_for(str(base["method"]), str(base["setting"]), base["epsilon"], base["delta"])
        r = one_run.one_run_configured("dp-fermi-strict-all-shipped", conf, n, rng, level=level)
        rows.append(_audited_row(base, r, conf, t0, level))
    table = pd.DataFrame(rows).reindex(columns=list(COLUMNS))
    atomic_write_text(directory / "tables" / "one_run_audit.csv", table.to_csv(index=False))
    annotate(directory, table)
    return table


#: the DP-FERMI figures' baselines whose DP-SGD steps the one-run audit covers, by method: the shipped audit that
#: rebuilds them (:func:`repro.studies.audit.subsampled._configure`: the core unit's, PF-LD's primal and
#: Jagielski et al.'s learner calibration)
BASELINES = {"tran-2021a": "tran-2021a-shipped", "pf-ld": "pf-ld-shipped", "jagielski-2019": "jagielski-2019-shipped"}

#: why a DP-FERMI reference cell is not audited
REFERENCE_REASON = ("not audited: the reference code's ε is Theorem 3.3's formula (nominal) for a batch-clipped "
                    "gradient that no accountant models; run --variant strict-all for audited DP-FERMI cells")


def _baseline_row(c: pd.Series, base: dict, run: dict, rng_for: Callable[..., np.random.Generator],
                  level: float) -> dict:
    """A baseline cell's one-run audit: its DP-SGD steps rebuilt by the unit's ``configure`` at the cell's n, batch,
    epochs, clip and (ε, δ), checked against the recorded z and T, then one trial drawn by the baselines' core with
    every record a canary. The audited claim is those steps' own ε (PF-LD: the primal's share; Jagielski et al.:
    the learner's ε/2), named in the status."""
    params, name, n = run.get("params", {}), BASELINES[str(c["method"])], int(c["n_train"])
    jagielski = name == "jagielski-2019-shipped"
    ship = sub.Shipped(n, int(params["batch_size"]),
                       int(params["jagielski_learner_epochs"] if jagielski else params["baseline_epochs"]),
                       float(params["baseline_clip"]), base["epsilon"], base["delta"],
                       f"{run.get('result_id', '')} {base['data']}",
                       rounds=int(params["jagielski_rounds"]) if jagielski else 1)
    t0 = time.perf_counter()
    conf = sub._configure(name, ship)
    recorded = (int(c["steps"]), float(c["noise_multiplier"]))
    if not (conf.steps == recorded[0] and math.isclose(conf.noise_multiplier, recorded[1], rel_tol=1e-6)):
        return {**base, "status": f"not audited: configure gives (T, z) = ({conf.steps}, {conf.noise_multiplier}), "
                                  f"the cell recorded {recorded}"}
    rng = rng_for(str(base["method"]), str(base["setting"]), base["epsilon"], base["delta"])
    r = one_run.one_run_configured(name, conf, n, rng, level=level)
    part = (f"its DP-SGD steps, accounted at ε = {conf.guarantee.epsilon:.4g} (the cell's ε: {base['epsilon']:g})"
            if not math.isclose(conf.guarantee.epsilon, base["epsilon"], rel_tol=1e-3) else "its DP-SGD steps")
    return _audited_row({**base, "q": conf.sampling_probability}, r, conf, t0, level, part)


def _audited_row(base: dict, r: one_run.OneRunResult, conf, t0: float, level: float, part: str = "") -> dict:
    """An audited cell's row: ``base`` (the cell as recorded), the run's bound and counts, the relation of the
    ``Configured`` it attacked, the status (naming ``part`` where the attacked mechanism is part of the cell's) and
    the seconds since ``t0``."""
    return {**base, "relation": conf.guarantee.relation.value, "canaries": r.canaries, "guesses": r.guesses,
            "correct": r.correct, "audited_epsilon": r.audited_epsilon, "claimed_epsilon": r.claimed_epsilon,
            "ratio": r.ratio, "confidence": 1 - level,
            "status": "audited (one run, white-box)" + (f": {part}" if part else ""),
            "seconds": time.perf_counter() - t0}


def _same(column: pd.Series, value: object) -> pd.Series:
    """Rows of ``column`` equal to the typed ``value`` (numbers within 1e-9 relative)."""
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    if pd.notna(number) and pd.api.types.is_numeric_dtype(column):
        return pd.Series(np.isclose(column.astype(float), float(number), rtol=1e-9, atol=0.0), index=column.index)
    return column.astype(str) == str(value)


def describe(row: pd.Series | dict) -> str:
    """The ``audit`` column of an audited cell: design, canaries, guesses and confidence, in words."""
    guesses = (f"{int(row['correct'])} of {int(row['guesses'])} guesses correct" if int(row["guesses"]) else
               "no guess count certifies ε > 0")
    return (f"one-run audit (Steinke, Nasr & Jagielski 2023), white-box, {row['relation']}: "
            f"{int(row['canaries'])} canaries, {guesses}, {float(row['confidence']):.0%} lower bound")


def annotate(directory: Path, table: pd.DataFrame) -> list[Path]:
    """Write each audited cell's bound beside its claimed label in the result's ``tables/privacy.csv`` and
    ``summary.csv``: columns :data:`AUDIT_COLUMNS` after ``eps_label`` (else last), filled on the rows of the same
    method whose typed :data:`CELL_KEYS` columns (those the file has) equal the audited cell's, empty elsewhere. Where several audited cells fall on one row (cells of one label with
    different n), the smallest bound is written. A table with no audited cell changes nothing. Each file is
    replaced atomically; returns the files written."""
    directory = Path(directory)
    audited = table[table["status"].astype(str).str.startswith("audited")] if not table.empty else table
    if audited.empty:
        return []
    written = []
    for path in (directory / "tables" / "privacy.csv", directory / "summary.csv"):
        if not path.is_file():
            continue
        frame = pd.read_csv(path)
        frame = frame.drop(columns=[c for c in AUDIT_COLUMNS if c in frame])   # a result audited again
        if "method" not in frame:
            continue
        bound = pd.Series(np.nan, index=frame.index, dtype=float)
        words = pd.Series("", index=frame.index, dtype=object)
        keys = [k for k in CELL_KEYS if k in frame]
        for _, a in audited.iterrows():
            hit = frame["method"] == a["method"]
            for k in keys:
                hit &= _same(frame[k], a[k])
            better = hit & ~(bound <= float(a["audited_epsilon"]))
            bound[better] = float(a["audited_epsilon"])
            words[better] = describe(a)
        if not bound.notna().any():
            continue
        at = frame.columns.get_loc("eps_label") + 1 if "eps_label" in frame else len(frame.columns)
        frame.insert(at, "audited_epsilon", bound)
        frame.insert(at + 1, "audit", words.where(bound.notna(), None))
        atomic_write_text(path, frame.to_csv(index=False))
        written.append(path)
    return written
