"""``repro run ID --audit``: the one-run audit of a finished result's cells (repro/studies/audit/run_audit.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from repro.cli import main
from repro.cli.run import one_run_audit_rng as cell_rng
from repro.learners import dp_fermi_unit
from repro.studies.audit.run_audit import AUDIT_COLUMNS, audit_refusal, audit_result


def _rng(*labels: object) -> np.random.Generator:
    return np.random.default_rng(len(str(labels)))


def _result(tmp_path: Path, z_factor: float = 1.0, base_seed: int = 0, name: str = "res") -> Path:
    d = tmp_path / name
    (d / "tables").mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"result_id": "toy", "base_seed": base_seed,
                                            "params": {"batch_size": 100, "epochs": 3, "baseline_epochs": 3,
                                                       "baseline_clip": 1.0}}))
    c = dp_fermi_unit.configure("strict-all", n=600, epsilon=4.0, delta=1e-5, batch_size=100, epochs=3)
    rows = [{"method": "dp-fermi", "setting": "data=toy;epsilon=4.0", "repetition": r, "variant": "strict-all",
             "data": "toy", "epsilon": 4.0, "delta": 1e-5,
             "n_train": 600, "steps": c.steps, "sampling_probability": c.sampling_probability,
             "noise_multiplier": c.config.noise_multiplier * z_factor, "clip_norm": c.config.clip_norm,
             "eps_label": "public-statistics caveat", "data_source": "toy"} for r in (0, 1)]
    rows.append({"method": "tran-2021a", "setting": "data=toy;epsilon=4.0", "repetition": 0, "variant": None,
                 "data": "toy", "epsilon": 4.0, "delta": 1e-5, "n_train": 600, "steps": 18, "noise_multiplier": 1.0,
                 "eps_label": "nominal", "data_source": "toy"})
    pd.DataFrame(rows).to_csv(d / "tables" / "privacy.csv", index=False)
    summary = [{"result_id": "toy", "method": m, "setting": f"data=toy;epsilon=4.0;knob={k}", "metric": "error",
                "n": 2, "mean": 0.2, "std": 0.01, "data": "toy", "epsilon": 4.0, "knob": k, "eps_label": label}
               for m, label in (("dp-fermi", "public-statistics caveat"), ("tran-2021a", "nominal")) for k in (0.0, 1.0)]
    pd.DataFrame(summary).to_csv(d / "summary.csv", index=False)
    return d


def test_audit_result_audits_the_unit_configured_cells_at_their_own_settings(tmp_path: Path) -> None:
    d = _result(tmp_path)
    table = audit_result(d, _rng)
    assert (d / "tables" / "one_run_audit.csv").is_file()
    ok = table.iloc[0]
    assert len(table) == 2   # one row per cell, not per repetition
    assert ok["status"].startswith("audited") and ok["canaries"] == 600 and ok["steps"] == 18
    assert 0.0 <= ok["audited_epsilon"] <= ok["epsilon"] and ok["relation"] == "add or remove one record"
    assert table.iloc[1]["status"].startswith("not audited")
    # the same seed gives the same bound
    assert audit_result(d, _rng).iloc[0]["audited_epsilon"] == ok["audited_epsilon"]


def test_a_cell_whose_recorded_noise_is_not_what_configure_gives_is_not_audited(tmp_path: Path) -> None:
    table = audit_result(_result(tmp_path, z_factor=0.5), _rng)
    assert table.iloc[0]["status"].startswith("not audited: configure gives")


def test_the_bound_is_written_beside_the_claimed_label_in_privacy_and_summary(tmp_path: Path) -> None:
    d = _result(tmp_path)
    bound = audit_result(d, _rng).iloc[0]["audited_epsilon"]
    for path in (d / "tables" / "privacy.csv", d / "summary.csv"):
        frame = pd.read_csv(path)
        cols = list(frame.columns)
        assert cols[cols.index("eps_label") + 1: cols.index("eps_label") + 3] == list(AUDIT_COLUMNS), path
        fermi = frame[frame["method"] == "dp-fermi"]
        assert len(fermi) == 2 and (fermi["audited_epsilon"] == bound).all()   # every repetition / λ row
        assert fermi["audit"].str.contains("one-run audit").all() and fermi["audit"].str.contains("600 canaries").all()
        assert fermi["audit"].str.contains("95% lower bound").all()
        other = frame[frame["method"] == "tran-2021a"]
        assert other["audited_epsilon"].isna().all() and other["audit"].isna().all()
    # auditing again replaces the columns, it does not add a second pair
    audit_result(d, _rng)
    assert list(pd.read_csv(d / "summary.csv").columns).count("audited_epsilon") == 1


def test_a_result_with_no_audited_cell_keeps_its_files_unchanged(tmp_path: Path) -> None:
    d = _result(tmp_path, z_factor=0.5)           # the dp-fermi cell does not match configure: not audited
    before = {p: p.read_bytes() for p in (d / "tables" / "privacy.csv", d / "summary.csv")}
    table = audit_result(d, _rng)
    assert not table["status"].str.startswith("audited").any()
    assert {p: p.read_bytes() for p in before} == before


def test_each_cell_is_seeded_by_the_run_base_seed_and_its_identity() -> None:
    first = cell_rng({"result_id": "r", "base_seed": 0}, "dp-fermi", "data=a;epsilon=1.0").random(4)
    again = cell_rng({"result_id": "r", "base_seed": 0}, "dp-fermi", "data=a;epsilon=1.0").random(4)
    other_seed = cell_rng({"result_id": "r", "base_seed": 1}, "dp-fermi", "data=a;epsilon=1.0").random(4)
    other_cell = cell_rng({"result_id": "r", "base_seed": 0}, "dp-fermi", "data=a;epsilon=3.0").random(4)
    assert (first == again).all() and not np.allclose(first, other_seed) and not np.allclose(first, other_cell)
    from repro.engine.identity import stable_words

    expected = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        [0, *stable_words("r", "one-run-audit", "dp-fermi", "data=a;epsilon=1.0")]))).random(4)
    assert (first == expected).all()


def test_the_default_generator_follows_the_run_base_seed(tmp_path: Path) -> None:
    def rows(base_seed: int, name: str) -> pd.Series:
        d = _result(tmp_path, base_seed=base_seed, name=name)
        run = json.loads((d / "run.json").read_text())
        return audit_result(d, lambda *labels: cell_rng(run, *labels)).iloc[0]

    a, b, c = rows(0, "a"), rows(0, "b"), rows(7, "c")
    assert (a["correct"], a["audited_epsilon"]) == (b["correct"], b["audited_epsilon"])   # deterministic
    # another base seed draws other canaries: the bound comes from other draws
    assert (a["guesses"], a["correct"], a["audited_epsilon"]) != (c["guesses"], c["correct"], c["audited_epsilon"])


def test_the_baselines_dp_sgd_steps_are_audited_at_their_cells_settings(tmp_path: Path) -> None:
    """A Tran et al. and a PF-LD cell recorded as the study records them (the unit's z and T at the cell's n, batch,
    epochs and clip) are audited by one run of the baselines' core; a DP-FERMI reference cell is listed with its
    reason; PF-LD's audited claim is its primal's own share of the cell's ε."""
    from repro.learners.baselines import dpsgd_unit, pf_ld

    d = tmp_path / "fig"
    (d / "tables").mkdir(parents=True)
    params = {"batch_size": 100, "baseline_epochs": 3, "baseline_clip": 1.0}
    (d / "run.json").write_text(json.dumps({"result_id": "toy", "params": params}))
    tran = dpsgd_unit.configure(n=600, epsilon=4.0, delta=1e-5, epochs=3, batch_size=100, clip_norm=1.0)
    primal = pf_ld.configure_primal(n=600, epsilon=4.0, delta=1e-5, epochs=3, batch_size=100, clip_norm=1.0)
    cell = {"setting": "data=toy;epsilon=4.0", "repetition": 0, "data": "toy", "epsilon": 4.0, "delta": 1e-5,
            "n_train": 600, "eps_label": "nominal", "data_source": "toy"}
    pd.DataFrame([{**cell, "method": "tran-2021a", "steps": tran.steps, "noise_multiplier": tran.noise_multiplier},
                  {**cell, "method": "pf-ld", "steps": primal.steps, "noise_multiplier": primal.noise_multiplier},
                  {**cell, "method": "dp-fermi", "variant": "reference", "steps": 18, "noise_multiplier": 0.0}]
                 ).to_csv(d / "tables" / "privacy.csv", index=False)
    table = audit_result(d, _rng).set_index("method")
    for method, c in (("tran-2021a", tran), ("pf-ld", primal)):
        row = table.loc[method]
        assert row["status"].startswith("audited (one run, white-box): its DP-SGD steps"), row["status"]
        assert row["canaries"] == 600 and row["q"] == c.sampling_probability
        assert 0.0 <= row["audited_epsilon"] <= c.guarantee.epsilon * 1.01
    assert f"accounted at ε = {primal.guarantee.epsilon:.4g} (the cell's ε: 4)" in table.loc["pf-ld", "status"]
    assert table.loc["pf-ld", "claimed_epsilon"] == primal.guarantee.epsilon           # what the ratio divides by
    assert table.loc["dp-fermi", "status"].startswith("not audited: the reference code's ε is Theorem 3.3's formula")


def test_audit_refuses_a_result_without_auditable_cells_before_it_runs(tmp_path: Path) -> None:
    assert audit_refusal("dpfermi-fig-2", "repro.studies.dpfermi.tradeoff_figures", "strict-all") is None
    assert audit_refusal("thesis-table-3.1", "repro.studies.thesis.part1_tables", "calibrated") is None
    # the default variant's baselines are audited, so a tabular DP-FERMI figure is auditable at every variant
    assert audit_refusal("dpfermi-fig-2", "repro.studies.dpfermi.tradeoff_figures", "reference") is None
    why = audit_refusal("dpfermi-fig-5", "repro.studies.dpfermi.utkface", "reference")
    assert why is not None and "drop --audit" in why and "\n" not in why
    res = CliRunner().invoke(main, ["run", "compat-impossibility", "--out", str(tmp_path), "--audit"])
    assert res.exit_code != 0
    assert res.output.strip().count("\n") == 0 and "--audit: compat-impossibility" in res.output
    assert not (tmp_path / "compat-impossibility").exists()        # refused before any trial ran


def test_algorithm2_dp_sgd_cells_of_a_thesis_result_are_audited(tmp_path: Path) -> None:
    from repro.learners import dp_sgd_unit

    d = tmp_path / "thesis"
    (d / "tables").mkdir(parents=True)
    params = {"delta": 1e-5, "clip_norm": 1.5, "lr": 0.01, "batch_size": 100, "epochs": 5, "sampling_rule": "opacus"}
    (d / "run.json").write_text(json.dumps({"result_id": "toy-thesis", "variant": "calibrated", "params": params}))
    hyper = {k: v for k, v in params.items() if k != "delta"}
    c = dp_sgd_unit.configure(n=600, epsilon=3.0, delta=1e-5, **hyper)
    trial = {"method": "DP-SGD (before post-processing)", "data": "toy", "repetition": 0,
             "noise_multiplier": c.config.noise_multiplier, "q": c.sampling_probability, "steps": c.steps,
             "eps_dpsgd": c.guarantee.epsilon, "eps_label": "public-statistics caveat"}
    pd.DataFrame([trial, {**trial, "repetition": 1}, {**trial, "method": "Algorithm 2"}]).to_csv(d / "trials.csv",
                                                                                                index=False)
    pd.DataFrame([{"data": "toy", "repetition": r, "n_fit": 600} for r in (0, 1)]).to_csv(d / "tables" / "data.csv",
                                                                                         index=False)
    table = audit_result(d, _rng)
    assert len(table) == 1 and table.iloc[0]["status"].startswith("audited")
    row = table.iloc[0]
    assert (row["n"], row["steps"]) == (600, c.steps) and 0 <= row["audited_epsilon"] <= row["epsilon"]


def test_run_all_with_audit_names_the_results_it_cannot_audit_and_runs_them_unaudited(capsys) -> None:
    import pytest

    from repro.cli.run import _audited
    from repro.engine.runner import RunConfig
    from repro.engine.spec import load_all
    from repro.errors import InvalidParameterError

    specs = [load_all()[i] for i in ("thesis-table-3.1", "compat-impossibility")]
    configs = [RunConfig(profile="smoke")] * 2
    assert _audited(specs, configs, run_all=True) == {"thesis-table-3.1"}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "compat-impossibility" in err and "runs without the audit" in err
    with pytest.raises(InvalidParameterError, match="--audit: compat-impossibility"):
        _audited(specs, configs, run_all=False)
