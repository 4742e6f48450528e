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
