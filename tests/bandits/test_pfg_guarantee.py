"""What Private-Fair-Greedy's stated (ε, δ) promises: the rank releases' and the whole policy's guarantees."""

from __future__ import annotations

import pytest

from repro.bandits.policies import budget_split, pfg_guarantee
from repro.privacy import tree_mechanism as tm
from repro.privacy.guarantee import Label, Neighbouring


@pytest.mark.parametrize(("eps", "delta", "T"), [(1.5, 0.01, 50_000), (0.5, 1e-3, 1_000)])
def test_rank_releases_are_accounted_at_their_budget(eps: float, delta: float, T: int) -> None:
    """ρ = zcdp_rho(ε, δ) converts back to exactly ε (BS16), and dp-accounting's RDP accountant of the T Gaussian
    releases the policy makes at that ρ is at most ε: the *accounted* label holds."""
    g = tm.rank_guarantee(eps, delta)
    assert (g.epsilon, g.delta, g.label, g.relation) == (eps, delta, Label.ACCOUNTED, Neighbouring.REPLACE_ONE)
    rho = tm.zcdp_rho(eps, delta)
    assert tm.zcdp_to_dp_epsilon(rho, delta) == pytest.approx(eps, rel=1e-12)
    assert tm.rdp_epsilon(tm.rank_dp_event(T, rho), delta) <= eps


def test_paper_split_sums_to_the_stated_budget() -> None:
    g = pfg_guarantee(15.0, 0.1, 0.9, 0.9, "paper")
    s = budget_split(15.0, 0.1, 0.9, 0.9, "paper")
    assert g.epsilon == pytest.approx(15.0) and g.delta == pytest.approx(0.1)
    assert (s.epsilon_reg, s.epsilon_rank) == pytest.approx((13.5, 1.5))
    assert g.label is Label.PUBLIC_STATISTICS and "L-tilde" in g.caveat     # the tree's caveat, the weakest part


def test_reference_code_spends_more_than_it_states() -> None:
    """The authors' code runs the regression at the whole (ε, δ) and the ranks on top: ε = 15 spends 16.5."""
    g = pfg_guarantee(15.0, 0.1, 0.9, 0.9, "reference")
    assert (g.epsilon, g.delta, g.label) == (15.0, 0.1, Label.NOMINAL)
    assert "spends (ε, δ) = (16.5, 0.11)" in g.caveat
