"""``repro run ID --audit``: the one-run audit of a finished result's cells (repro/studies/audit/run_audit.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from repro.cli import main
from repro.learners import dp_fermi_unit
from repro.studies.audit.run_audit import audit_result


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng(len(key))


def _result(tmp_path: Path, z_factor: float = 1.0) -> Path:
    d = tmp_path / "res"
    (d / "tables").mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"result_id": "toy", "params": {"batch_size": 100, "epochs": 3}}))
    c = dp_fermi_unit.configure("strict-all", n=600, epsilon=4.0, delta=1e-5, batch_size=100, epochs=3)
    rows = [{"method": "dp-fermi", "variant": "strict-all", "data": "toy", "epsilon": 4.0, "delta": 1e-5,
             "n_train": 600, "steps": c.steps, "sampling_probability": c.sampling_probability,
             "noise_multiplier": c.config.noise_multiplier * z_factor, "clip_norm": c.config.clip_norm,
             "eps_label": "public-statistics caveat"},
            {"method": "tran-2021a", "variant": None, "data": "toy", "epsilon": 4.0, "delta": 1e-5, "n_train": 600,
             "steps": 18, "noise_multiplier": 1.0, "eps_label": "nominal"}]
    pd.DataFrame(rows).to_csv(d / "tables" / "privacy.csv", index=False)
    return d


def test_audit_result_audits_the_unit_configured_cells_at_their_own_settings(tmp_path: Path) -> None:
    d = _result(tmp_path)
    table = audit_result(d, _rng)
    assert (d / "tables" / "one_run_audit.csv").is_file()
    ok = table.iloc[0]
    assert ok["status"].startswith("audited") and ok["canaries"] == 600 and ok["steps"] == 18
    assert 0.0 <= ok["audited_epsilon"] <= ok["epsilon"] and ok["relation"] == "add or remove one record"
    assert table.iloc[1]["status"].startswith("not audited")
    # the same seed gives the same bound
    assert audit_result(d, _rng).iloc[0]["audited_epsilon"] == ok["audited_epsilon"]


def test_a_cell_whose_recorded_noise_is_not_what_configure_gives_is_not_audited(tmp_path: Path) -> None:
    table = audit_result(_result(tmp_path, z_factor=0.5), _rng)
    assert table.iloc[0]["status"].startswith("not audited: configure gives")


def test_the_run_flag_on_a_result_without_privacy_cells(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["run", "compat-impossibility", "--out", str(tmp_path), "--audit"])
    assert res.exit_code == 0, res.output
    assert "one-run audit: this result records no privacy cells" in res.output


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
