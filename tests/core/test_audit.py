"""Empirical privacy audit (issue 14): Clopper–Pearson bound, threshold test, flags broken mechanisms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner

from repro import audit as au
from repro.cli import main
from repro.errors import InvalidParameterError


def test_clopper_pearson_upper_closed_forms() -> None:
    # k = 0: the bound solves (1 − p)^n = α
    assert au.clopper_pearson_upper(0, 50, 0.05) == pytest.approx(1 - 0.05 ** (1 / 50))
    assert au.clopper_pearson_upper(50, 50, 0.05) == 1.0
    assert au.clopper_pearson_upper(10, 100, 0.05) > 0.1
    with pytest.raises(InvalidParameterError, match="need 0 <= k <= n"):
        au.clopper_pearson_upper(5, 3, 0.05)


def test_epsilon_lower_bound_from_rates() -> None:
    # rates 0.1 / 0.1 on huge samples: ε ≥ ln(0.9/0.1) = ln 9 up to the confidence slack
    lb = au.epsilon_lower_bound(100_000, 100_000, 1_000_000, 1_000_000, 0.0, 0.05)
    assert math.log(9) - 0.02 < lb < math.log(9)
    assert au.epsilon_lower_bound(50, 50, 100, 100, 0.0) == 0.0  # a coin flip certifies nothing


def test_laplace_step_audit_passes_calibrated_and_flags_broken() -> None:
    ok = au.audit_laplace_step(6_000, np.random.default_rng(1))
    assert ok.verdict == "no violation found" and ok.epsilon_lower_bound > 0.5  # close to ε₀ = 1: not vacuous
    bad = au.audit_laplace_step(6_000, np.random.default_rng(1), scale_factor=0.25)  # 4× too little noise
    assert bad.verdict == "violated" and bad.epsilon_lower_bound > 2.0


def test_dp_sgd_audit_passes_calibrated_and_flags_broken() -> None:
    ok = au.audit_dp_sgd(600, np.random.default_rng(2))
    assert ok.verdict == "no violation found"
    bad = au.audit_dp_sgd(600, np.random.default_rng(2), trained_noise_multiplier=0.1)  # claims z = 1.5
    assert bad.verdict == "violated"
    with pytest.raises(InvalidParameterError, match="different"):
        au.audit_dp_sgd(10, np.random.default_rng(2), n=20)


def test_cli_audit_smoke() -> None:
    res = CliRunner().invoke(main, ["audit", "laplace-step"])
    assert res.exit_code == 0, res.output
    assert "laplace-step" in res.output and "no violation found" in res.output
    assert CliRunner().invoke(main, ["audit", "nope"]).exit_code != 0


# ---------------------------------------------------------------------------- issue 14: the remaining audits


def test_exact_epsilon_closed_forms() -> None:
    # randomized response with flip probability p: ε = ln((1 − p)/p) at δ = 0
    p = 0.2
    lp, lq = np.log([1 - p, p]), np.log([p, 1 - p])
    assert au.exact_epsilon(lp, lq, 0.0) == pytest.approx(math.log((1 - p) / p), abs=1e-8)
    # at δ the ε shrinks: δ(ε) = (1 − p) − e^ε p  ⇒  ε = ln((1 − p − δ)/p)
    assert au.exact_epsilon(lp, lq, 0.1) == pytest.approx(math.log((1 - p - 0.1) / p), abs=1e-6)
    assert au.exact_epsilon(lp, lp, 0.0) == 0.0


def test_ldp_audit_exact_and_sampler() -> None:
    rows = au.audit_ldp(3_000, np.random.default_rng(4), epsilon=1.3)
    assert [r.mechanism for r in rows] == ["ldp-grr", "ldp-binary-thm14", "ldp-subset-selection", "ldp-optimal-5.5.9"]
    for r in rows:
        assert r.method == "exact" and "follows" in r.note
        assert r.epsilon_lower_bound <= 1.3 + 1e-6 and r.verdict == "no violation found"
    assert rows[0].epsilon_lower_bound == pytest.approx(1.3)   # GRR: e^ε/(e^ε+k−1) vs 1/(e^ε+k−1)
    assert rows[1].epsilon_lower_bound == pytest.approx(1.3)   # Theorem 14: tight
    # a sampler that does not follow its matrix is caught
    assert not au._sampler_check(np.zeros(500, dtype=int), np.array([0.5, 0.5]), 0.05)


def test_exact_exponential_mechanism_audits() -> None:
    em_row = au.audit_expmech(0, np.random.default_rng(0), n=64)
    assert em_row.method == "exact" and 0 < em_row.epsilon_lower_bound <= em_row.claimed_epsilon
    step = au.audit_fairnr_step(0, np.random.default_rng(0))
    assert 0 < step.epsilon_lower_bound <= step.claimed_epsilon == 0.5
    assert step.verdict == "no violation found"


def test_pfg_audits_sane() -> None:
    tree = au.audit_tree_mechanism(400, np.random.default_rng(5))
    rank = au.audit_rank_noise(20_000, np.random.default_rng(5))
    assert tree.verdict == rank.verdict == "no violation found"
    assert 0 < rank.epsilon_lower_bound < 1.0   # the attack sees the noise: not vacuous, below the claim


def test_dp_fermi_strict_all_and_baselines_run() -> None:
    r = au.audit_dp_fermi_strict_all(150, np.random.default_rng(6))
    assert r.label == "public-statistics caveat" and r.verdict == "no violation found"
    t = au.audit_tran_2021a(200, np.random.default_rng(6))
    assert t.label == "nominal" and t.verdict in ("no violation found", "nominal: exceeded")
    assert t.epsilon_lower_bound > 0.5       # the penalty couples the batch: the canary is visible


def test_audit_flags_old_defect1_accounting_and_passes_the_fix() -> None:
    """Regression (issue 14, defect 1): strict accounted WITH amplification by subsampling is flagged."""
    old = au.audit_dp_fermi_strict(600, np.random.default_rng(3), sampling_rule=au.old_defect1_sampling_probability)
    assert old.verdict == "violated" and old.epsilon_lower_bound > old.claimed_epsilon
    fixed = au.audit_dp_fermi_strict(600, np.random.default_rng(3))
    assert fixed.verdict == "no violation found"


def test_nominal_claims_do_not_fail_the_command() -> None:
    nominal = au.AuditResult("x", 1.0, 0.0, 2.0, 0.95, 10, label="nominal")
    accounted = au.AuditResult("x", 1.0, 0.0, 2.0, 0.95, 10)
    assert nominal.verdict == "nominal: exceeded" and accounted.verdict == "violated"


def test_cli_audit_writes_csv_and_figure(tmp_path) -> None:
    res = CliRunner().invoke(main, ["audit", "ldp", "fairnr-corrected-ftpl-step", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = (tmp_path / "audit.csv").read_text().splitlines()
    assert rows[0].split(",")[:5] == ["mechanism", "claimed_epsilon", "label", "delta", "epsilon_lower_bound"]
    assert len(rows) == 1 + 5
    assert (tmp_path / "audit.png").stat().st_size > 0 and (tmp_path / "audit.pdf").stat().st_size > 0
