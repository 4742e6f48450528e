"""The one-run audit (Steinke, Nasr & Jagielski 2023; repro/studies/audit/one_run.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from repro.learners import dp_sgd_unit
from repro.studies.audit import one_run


def test_p_value_is_the_binomial_tail_at_delta_0_and_grows_with_delta() -> None:
    q = 1 / (1 + math.exp(-1.0))
    assert one_run.p_value(1000, 100, 80, 1.0, 0.0) == pytest.approx(stats.binom.sf(79, 100, q))
    assert one_run.p_value(1000, 100, 80, 1.0, 1e-4) > one_run.p_value(1000, 100, 80, 1.0, 0.0)
    ps = [one_run.p_value(1000, 100, 80, e, 1e-5) for e in (0.5, 1.0, 2.0)]
    assert ps[0] < ps[1] < ps[2]
    e = one_run.epsilon_lower_bound(1000, 100, 80, 0.0)
    assert one_run.p_value(1000, 100, 80, e, 0.0) == pytest.approx(0.05, abs=1e-4)


def test_bound_holds_for_randomized_response_at_its_level() -> None:
    """ε-DP randomized response on each canary's membership (the worst case the bound is tight for): over 400
    audits the bound exceeds ε in at most 5 % of them (plus 3 standard errors)."""
    eps, m, reps = 1.0, 400, 400
    rng = np.random.default_rng(0)
    keep = math.exp(eps) / (1 + math.exp(eps))
    over = 0
    for _ in range(reps):
        included = rng.random(m) < 0.5
        report = np.where(rng.random(m) < keep, included, ~included)
        score = report + 1e-6 * rng.random(m)             # ties broken at random
        over += one_run.guess_audit(score, included, 0.0)[0] > eps
    assert over / reps <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)


def test_one_run_audit_of_shipped_dp_sgd_reaches_half_its_claim_and_flags_every_row(monkeypatch) -> None:
    ok = one_run.one_run_shipped("dp-sgd-shipped", 30_162, np.random.default_rng(0))
    assert ok.claimed_epsilon == pytest.approx(2.9, rel=1e-2)
    # one run, 30,162 canaries: measured 1.49 (0.51 of the claim) at seed 0
    assert 0.3 * ok.claimed_epsilon < ok.audited_epsilon <= ok.claimed_epsilon
    monkeypatch.setattr(dp_sgd_unit, "poisson_batch", lambda n, q, *, rng: np.arange(n))
    bad = one_run.one_run_shipped("dp-sgd-shipped", 30_162, np.random.default_rng(0))
    assert bad.audited_epsilon > bad.claimed_epsilon
