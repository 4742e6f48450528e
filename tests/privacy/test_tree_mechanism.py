"""Tree mechanism and zCDP rank calibration of Private-Fair-Greedy (spec seed-001 §3.2–§3.5, §9 items 1–5)."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from repro.bandits.policies import PrivateFairGreedy, budget_split
from repro.errors import InvalidParameterError
from repro.privacy import tree_mechanism as tm

T_PAPER, D_PAPER, L_PAPER = 50_000, 25, 21.6746


# ------------------------------------------------------------------ zCDP identities (§9 items 1–2)


@pytest.mark.parametrize("eps", [0.01, 0.1, 1.5, 4.5, 7.5, 50.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-4, 0.01, 0.05])
def test_zcdp_to_dp_identity_is_exact(eps: float, delta: float) -> None:
    rho = tm.zcdp_rho(eps, delta)
    assert tm.zcdp_to_dp_epsilon(rho, delta) == pytest.approx(eps, rel=1e-12, abs=1e-14)


def test_rho_example_from_spec() -> None:
    assert tm.zcdp_rho(1.5, 0.01) == pytest.approx(0.10556, rel=1e-4)  # spec §3.5 (5 significant digits)


@pytest.mark.parametrize("n_window", [1, 7, 100, 25_000])
def test_each_rank_release_is_rho_over_T_zcdp(n_window: int) -> None:
    rho = tm.zcdp_rho(1.5, 0.01)
    sigma = tm.rank_noise_sigma(T_PAPER, n_window, rho)
    per_release = (1.0 / n_window) ** 2 / (2.0 * sigma**2)  # Gaussian with sensitivity 1/N_t [BS16 Prop 1.6]
    assert per_release == pytest.approx(rho / T_PAPER, rel=1e-12)
    assert T_PAPER * per_release == pytest.approx(rho, rel=1e-12)


def test_rank_event_matches_zcdp_event_and_bs16_is_conservative() -> None:
    """T Gaussian releases with multiplier √(T/2ρ) is ρ-zCDP: the RDP accountant agrees with ZCDpEvent(ρ),
    and its ε at δ is below the BS16 conversion ρ + 2√(ρ ln 1/δ) = ε_rank (which is valid but loose)."""
    for eps_rank, delta_rank in ((1.5, 0.01), (0.1, 0.01), (5.0, 0.01), (1.5, 1e-4)):
        rho = tm.zcdp_rho(eps_rank, delta_rank)
        eps_gauss = tm.rdp_epsilon(tm.rank_dp_event(T_PAPER, rho), delta_rank)
        eps_zcdp = tm.rdp_epsilon(dp_accounting.ZCDpEvent(rho), delta_rank)
        assert eps_gauss == pytest.approx(eps_zcdp, rel=1e-3)
        assert eps_gauss <= eps_rank + 1e-9
        assert eps_gauss >= 0.0
    # the main setting: the accountant's ε is of the same order as the nominal ε_rank = 1.5
    rho = tm.zcdp_rho(1.5, 0.01)
    assert 0.5 < tm.rdp_epsilon(tm.rank_dp_event(T_PAPER, rho), 0.01) < 1.5


# ------------------------------------------------------------------ budget split (§9 item 3)


@pytest.mark.parametrize("eps,delta,ae,ad", [(15, 0.1, 0.9, 0.9), (1, 0.1, 0.9, 0.9), (15, 0.001, 0.9, 0.9),
                                             (15, 0.1, 0.5, 0.7)])
def test_budget_split(eps: float, delta: float, ae: float, ad: float) -> None:
    paper = budget_split(eps, delta, ae, ad, "paper")
    assert paper.epsilon_reg + paper.epsilon_rank == pytest.approx(eps)
    assert paper.delta_reg + paper.delta_rank == pytest.approx(delta)
    assert paper.epsilon_reg == pytest.approx(ae * eps)
    ref = budget_split(eps, delta, ae, ad, "reference")
    assert ref.epsilon_reg == eps and ref.delta_reg == delta  # the code's bug: total budget to the regression
    assert ref.epsilon_spent == pytest.approx(eps * (2 - ae))
    assert ref.delta_spent == pytest.approx(delta * (2 - ad))
    assert ref.epsilon_rank == pytest.approx(paper.epsilon_rank)


def test_budget_split_rejects_bad_alpha() -> None:
    with pytest.raises(InvalidParameterError, match="alpha_eps"):
        budget_split(15, 0.1, 1.0, 0.9, "paper")


# ------------------------------------------------------------------ tree properties (§9 item 4)


def test_tree_height() -> None:
    assert tm.tree_height(T_PAPER / 2) == 16
    assert tm.tree_height(1) == 1
    assert tm.tree_height(2) == 2
    assert tm.tree_height(1024) == 11
    assert tm.tree_height(1025) == 12


def test_every_prefix_uses_at_most_m_nodes() -> None:
    n_max = T_PAPER // 2
    m = tm.tree_height(n_max)
    counts = np.array([tm.nodes_per_prefix(i) for i in range(1, n_max + 1)])
    assert counts.max() <= m
    assert counts.max() == 14  # 16383 = 2^14 − 1 is the largest popcount below 25,000


def test_each_leaf_is_in_at_most_m_nodes_and_noiseless_tree_is_exact() -> None:
    n_max = 45
    mech = tm.TreeMechanism(dim=n_max, n_max=n_max, sigma=0.0)
    m = mech.m
    membership = np.zeros(n_max, dtype=int)
    for i in range(n_max):
        item = np.zeros((n_max, n_max))
        item[i, i] = 1.0
        out = mech.update(item)
        # exact prefix sum: diag(1,...,1,0,...)
        assert np.array_equal(np.diag(out), (np.arange(n_max) <= i).astype(float))
        level = ((i + 1) & -(i + 1)).bit_length() - 1
        membership += np.diag(mech._alpha[level]).astype(int)  # leaves of the node just created
    assert membership.max() <= m
    with pytest.raises(InvalidParameterError, match="n_max"):
        mech.update(np.zeros((n_max, n_max)))


@pytest.mark.parametrize("per_node", [True, False])
def test_noiseless_prefix_sums_with_shift(per_node: bool) -> None:
    rng = np.random.default_rng(0)
    items = [(lambda a: a + a.T)(rng.normal(size=(4, 4))) for _ in range(37)]
    mech = tm.TreeMechanism(dim=4, n_max=40, sigma=0.0, shift=3.0, shift_per_node=per_node)
    total = np.zeros((4, 4))
    for i, item in enumerate(items, start=1):
        total += item
        out = mech.update(item)
        shift = 3.0 * (tm.nodes_per_prefix(i) if per_node else 1)
        np.testing.assert_allclose(out, total + shift * np.eye(4), rtol=1e-12, atol=1e-12)


def test_symmetric_noise_is_symmetric_with_stated_variances() -> None:
    rng = np.random.default_rng(1)
    sigma = 2.5
    z = tm.symmetric_gaussian(5, sigma, rng=rng, size=40_000)
    assert np.array_equal(z, np.swapaxes(z, -1, -2))
    var = z.var(axis=0)
    off = var[~np.eye(5, dtype=bool)]
    diag = np.diag(var)
    # sample variance of n = 40,000 normals has relative sd √(2/n) ≈ 0.7 %; allow 4 %
    np.testing.assert_allclose(off, sigma**2, rtol=0.04)
    np.testing.assert_allclose(diag, 2 * sigma**2, rtol=0.04)


def test_tree_release_noise_variance_adds_over_nodes() -> None:
    """The release after update i sums popcount(i) independent nodes: off-diagonal variance popcount·σ²."""
    sigma, n = 1.0, 4000
    outs = []
    for s in range(n):
        mech = tm.TreeMechanism(dim=2, n_max=8, sigma=sigma, rng=np.random.default_rng(s))
        for _ in range(7):  # popcount(7) = 3
            out = mech.update(np.zeros((2, 2)))
        outs.append(out[0, 1])
    assert np.var(outs) == pytest.approx(3 * sigma**2, rel=0.1)


# ------------------------------------------------------------------ σ and Γ vs spec §3.5 (§9 item 5)

# (ε, δ, α_ε, α_δ) → (σ code, Γ code, σ paper, Γ paper, ε_rank, δ_rank, ρ_rank, c, σ_t at N = 25,000)
TABLE = [
    ((15, 0.1, 0.9, 0.9), (1848.5, 6.617e5, 2112.6, 5.142e5, 1.5, 0.01, 0.10556, 486.7, 0.0195)),
    ((1, 0.1, 0.9, 0.9), (27727.9, 9.925e6, 31688.7, 7.713e6, 0.1, 0.01, 5.3705e-4, 6822.8, 0.2729)),
    ((5, 0.1, 0.9, 0.9), (5545.6, 1.985e6, 6337.7, 1.543e6, 0.5, 0.01, 0.012881, 1393.1, 0.0557)),
    ((50, 0.1, 0.9, 0.9), (554.6, 1.985e5, 633.8, 1.543e5, 5, 0.01, 0.90869, 165.9, 0.0066)),
    ((15, 0.01, 0.9, 0.9), (3002.4, 1.075e6, 3394.6, 8.262e5, 1.5, 0.001, 0.073632, 582.7, 0.0233)),
    ((15, 0.001, 0.9, 0.9), (4156.2, 1.488e6, 4676.7, 1.138e6, 1.5, 1e-4, 0.056554, 664.9, 0.0266)),
    ((15, 0.1, 0.7, 0.9), (1848.5, 6.617e5, 2716.2, 6.611e5, 4.5, 0.01, 0.75953, 181.4, 0.0073)),
    ((15, 0.1, 0.5, 0.9), (1848.5, 6.617e5, 3802.6, 9.255e5, 7.5, 0.01, 1.7776, 118.6, 0.0047)),
    ((15, 0.1, 0.9, 0.7), (1848.5, 6.617e5, 2252.5, 5.482e5, 1.5, 0.03, 0.13319, 433.2, 0.0173)),
    ((15, 0.1, 0.9, 0.5), (1848.5, 6.617e5, 2439.9, 5.938e5, 1.5, 0.05, 0.15171, 405.9, 0.0162)),
]


def _pfg(cfg, variant: str) -> PrivateFairGreedy:
    eps, delta, ae, ad = cfg
    return PrivateFairGreedy(4, D_PAPER, T_PAPER, epsilon=eps, delta=delta, alpha_eps=ae, alpha_delta=ad,
                             L_tilde=L_PAPER, variant=variant, rng=np.random.default_rng(0),
                             reg_rng=np.random.default_rng(1), rank_normals=np.zeros((T_PAPER, 4)),
                             history=np.zeros((T_PAPER, 4, D_PAPER)))


@pytest.mark.parametrize("cfg,row", TABLE)
def test_noise_levels_match_spec_table(cfg, row) -> None:
    s_code, g_code, s_paper, g_paper, e_rank, d_rank, rho, c, sig25k = row
    ref, pap = _pfg(cfg, "reference"), _pfg(cfg, "paper")
    assert ref.m == pap.m == 16
    assert ref.sigma_noise == pytest.approx(s_code, rel=5e-4)
    assert ref.gamma == pytest.approx(g_code, rel=5e-4)
    assert pap.sigma_noise == pytest.approx(s_paper, rel=5e-4)
    assert pap.gamma == pytest.approx(g_paper, rel=5e-4)
    for p in (ref, pap):
        assert p.split.epsilon_rank == pytest.approx(e_rank)
        assert p.split.delta_rank == pytest.approx(d_rank)
        assert p.rho_rank == pytest.approx(rho, rel=5e-4)
        assert p.rank_c == pytest.approx(c, rel=5e-4)
        assert p.rank_c / 25_000 == pytest.approx(sig25k, abs=5e-5)  # table rounded to 1e-4
    assert ref.tree.shift_per_node and not pap.tree.shift_per_node


def test_sigma_formula_closed_form() -> None:
    assert tm.gaussian_tree_sigma(2.0, 9, 3.0, 0.04) == pytest.approx(4 * 4.0 * 3 * math.log(100) / 3.0)
    assert tm.psd_shift_gamma(1.0, 8, 16, math.e) == pytest.approx(4 * (16 + 2))


def test_tree_event_is_within_the_regression_budget() -> None:
    """Our Gaussian accounting of the tree (m releases per item, sensitivity L̃²) gives ε ≤ ε_reg at δ_reg:
    the paper's advanced-composition calibration is conservative."""
    for cfg, _ in TABLE:
        p = _pfg(cfg, "paper")
        eps = tm.rdp_epsilon(tm.tree_dp_event(p.sigma_noise, L_PAPER, p.m), p.split.delta_reg)
        assert 0 <= eps <= p.split.epsilon_reg


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε(δ) of one Gaussian mechanism with sensitivity/noise μ (Balle & Wang 2018, Thm 8):
    δ = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)."""
    from scipy import optimize, stats

    def gap(e):
        return stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta

    return optimize.brentq(gap, 0.0, 100.0, xtol=1e-12)


@pytest.mark.parametrize(("sigma", "L", "m"), [(6.0, 1.5, 6), (20.0, 2.0, 16), (3.0, 1.0, 4)])
def test_tree_event_is_one_gaussian_of_the_composed_mu(sigma: float, L: float, m: int) -> None:
    """D6: m releases of sensitivity L̃² (replace one; L̃²/√2 add/remove) with noise σ compose to one Gaussian
    of μ = √m·L̃²/σ (add/remove: μ/√2). The PLD ε of tree_dp_event at δ = 10⁻⁵ equals the exact Gaussian ε(μ)
    to 10⁻⁵ relative (PLD discretization 10⁻⁴ gives ≈ 10⁻⁸ here); a sensitivity L̃²/2 halves μ and roughly halves ε."""
    import dp_accounting.pld

    delta = 1e-5
    for replace_one, mu in ((True, math.sqrt(m) * L**2 / sigma), (False, math.sqrt(m) * L**2 / (math.sqrt(2) * sigma))):
        event = tm.tree_dp_event(sigma, L, m, replace_one=replace_one)
        acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
        acc.compose(event)
        assert acc.get_epsilon(delta) == pytest.approx(_gaussian_epsilon(mu, delta), rel=1e-5)
        # RDP composes exactly: the same ε as one Gaussian with noise multiplier 1/μ
        one = dp_accounting.GaussianDpEvent(1 / mu)
        assert tm.rdp_epsilon(event, delta) == pytest.approx(tm.rdp_epsilon(one, delta), rel=1e-9)


def test_bad_inputs_raise() -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        tm.gaussian_tree_sigma(1.0, 4, 0.0, 0.1)
    with pytest.raises(InvalidParameterError, match="delta"):
        tm.zcdp_rho(1.0, 1.5)
    with pytest.raises(InvalidParameterError, match="rng"):
        tm.TreeMechanism(dim=2, n_max=4, sigma=1.0)
