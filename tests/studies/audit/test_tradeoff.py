"""Empirical trade-off and the profile verdict (issue 38 items 2–3): the simultaneous Clopper–Pearson bands
cover, the verdict flags a deliberately broken mechanism and not a correct one, and the best-δ bound stays
below the claim."""

from __future__ import annotations

import numpy as np
import pytest

from repro.privacy.profile import gaussian_profile
from repro.studies.audit import tradeoff as tr
from repro.studies.audit.bounds import gaussian_mu


def test_simultaneous_clopper_pearson_bands_cover() -> None:
    """2K one-sided bounds at level a/(2K) all cover in ≥ 1 − a of 4,000 repetitions, up to a stated
    tolerance of 3 binomial standard errors (Bonferroni is conservative, so coverage is usually higher)."""
    rng = np.random.default_rng(0)
    k, n, a, reps = 24, 400, 0.05, 4000
    p = np.linspace(0.002, 0.6, 2 * k)
    counts = rng.binomial(n, p, size=(reps, 2 * k))
    up = tr.upper_bounds(counts, n, a / (2 * k))
    coverage = float(np.mean(np.all(up >= p, axis=1)))
    tolerance = 3 * np.sqrt(a * (1 - a) / reps)
    assert coverage >= 1 - a - tolerance
    # each single bound is exact Clopper–Pearson: its miss rate is at most its level (same tolerance)
    level = 0.2
    single = tr.upper_bounds(rng.binomial(n, 0.1, size=reps), n, level)
    assert np.mean(single < 0.1) <= level + 3 * np.sqrt(level * (1 - level) / reps)
    assert tr.upper_bounds(np.array([n]), n, 0.05)[0] == 1.0


def test_verdict_flags_a_broken_mechanism_and_not_a_correct_one() -> None:
    """Gaussian shift calibrated to ε = 1 at δ = 1e-3; the broken mechanism has half the noise (2μ)."""
    mu = gaussian_mu(1.0, 1e-3)
    prof = gaussian_profile(mu)
    false_alarms, flagged, ratios = 0, 0, []
    reps, runs = 40, 4000
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        ok = tr.profile_audit(rng.standard_normal(runs), mu + rng.standard_normal(runs), prof, 1.0)
        false_alarms += ok.violated
        ratios.append(ok.ratio_at_best)
        assert ok.audited_at_best <= ok.claimed_at_best + 1e-9
        bad = tr.profile_audit(rng.standard_normal(runs), 2 * mu + rng.standard_normal(runs), prof, 1.0)
        flagged += bad.violated
    assert false_alarms <= 1            # the level is 5 %; Bonferroni keeps it far below
    assert flagged == reps
    assert np.median(ratios) > 0.4


def test_best_delta_and_epsilon_at() -> None:
    # rates 0.1 / 0.1 certify ln((1 − δ − 0.1)/0.1) at every δ
    assert tr.epsilon_at(0.0, np.array([0.1]), np.array([0.1])) == pytest.approx(np.log(9))
    assert tr.epsilon_at(0.1, np.array([0.1]), np.array([0.1])) == pytest.approx(np.log(8))
    assert tr.epsilon_at(0.0, np.array([0.6]), np.array([0.6])) == 0.0
    mu = gaussian_mu(1.0, 1e-3)
    rng = np.random.default_rng(3)
    r = tr.profile_audit(rng.standard_normal(20_000), mu + rng.standard_normal(20_000), gaussian_profile(mu), 1.0,
                         select=0.2, model="gaussian")
    assert not r.violated and 0 < r.best_delta < 1 and 0.5 < r.ratio_at_best <= 1.0
    assert r.claimed_at_best == pytest.approx(gaussian_profile(mu).epsilon(r.best_delta), rel=1e-6)


@pytest.mark.parametrize(("name", "runs"), [("laplace-step", 2000), ("dp-sgd", 200), ("dp-fermi-strict", 50),
                                            ("dp-fermi-strict-all", 100), ("pfg-tree-mechanism", 500),
                                            ("pfg-rank-noise", 2000)])
def test_each_audit_carries_the_profile_of_its_claim(name: str, runs: int) -> None:
    """The audit's claimed profile, from the accountant that calibrated the noise, gives the claimed ε at the
    claimed δ (δ = 0 claims: at δ = 1e-9, the PLD's rounding), and the audit reports its best δ."""
    from repro.studies.audit import mechanisms as mc

    r = mc.MECHANISMS[name].run(runs, np.random.default_rng(0))
    assert r.profile is not None and r.tradeoff is not None
    assert r.profile.epsilon(max(r.delta, 1e-9)) == pytest.approx(r.claimed_epsilon, abs=5e-3)
    assert 0 <= r.best_delta < 1 and 0 < r.claimed_at_best <= r.claimed_epsilon + 1e-9
    assert r.claimed_at_best == pytest.approx(r.profile.epsilon(r.best_delta), abs=5e-3)
