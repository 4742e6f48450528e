"""GRR, Subset Selection, Theorem 14 and the non-binary OPT: exact laws, privacy and optimality.

Spec: ../shared/specs/seed-003-thesis.md §5.1–5.5, §9.1 items 5, 7, 8.
Statistical tests use a chi-square goodness-of-fit test at level 1e-4 with fixed seeds (a correct
sampler fails with probability 1e-4 per seed; a wrong law with these sample sizes fails surely).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from repro.errors import InvalidParameterError
from repro.fairness.data_fairness import delta, perturbed_stats
from repro.privacy.ldp_mechanisms import (
    grr_matrix,
    ldp_epsilon,
    nonbinary_constraint_violation,
    optimal_binary_matrix,
    optimal_nonbinary_matrix,
    perturb,
    ss_inclusion_matrix,
    ss_keep_probability,
    ss_subset_size,
    subset_selection,
    subset_selection_matrix,
    zeta_min,
)

ALPHA = 1e-4
EPS_GRID = [0.05, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0]

# Full-data statistics of spec Appendix A (4 decimals), used where exact data are not needed.
ADULT_RACE_P = np.array([0.0095, 0.0284, 0.0924, 0.0077, 0.8620])
ADULT_RACE_P1 = np.array([0.3601, 0.5357, 0.3402, 0.3683, 0.5393])
ADULT_RG_P = np.array([0.0036, 0.0059, 0.0095, 0.0189, 0.0455, 0.0469, 0.0027, 0.0050, 0.2624, 0.5996])
ADULT_RG_P1 = np.array([0.2711, 0.4148, 0.4037, 0.6021, 0.2288, 0.4482, 0.2698, 0.4229, 0.3431, 0.6251])


def _norm(p: np.ndarray) -> np.ndarray:
    return p / p.sum()


def _chi2_rows(values: np.ndarray, z: np.ndarray, matrix: np.ndarray) -> None:
    for a in np.unique(values):
        obs = np.bincount(z[values == a], minlength=matrix.shape[1])
        exp = matrix[a] * obs.sum()
        assert stats.chisquare(obs, exp).pvalue > ALPHA, (a, obs, exp)


# ----------------------------------------------------------------------------- GRR


@pytest.mark.parametrize(("k", "eps"), [(2, 1.0), (5, 0.5), (10, 2.0)])
def test_grr_matrix_closed_form_and_exact_epsilon(k: int, eps: float) -> None:
    q = grr_matrix(k, eps)
    e = math.exp(eps)
    assert np.allclose(np.diag(q), e / (e + k - 1))
    assert np.allclose(q[~np.eye(k, dtype=bool)], 1 / (e + k - 1))
    assert np.allclose(q.sum(axis=1), 1.0)
    assert ldp_epsilon(q) == pytest.approx(eps, abs=1e-12)


@pytest.mark.parametrize(("k", "eps"), [(2, 0.5), (5, 1.0), (10, 0.25)])
def test_grr_empirical_frequencies_match_matrix(k: int, eps: float) -> None:
    rng = np.random.default_rng(11)
    values = rng.integers(0, k, 200_000)
    q = grr_matrix(k, eps)
    _chi2_rows(values, perturb(values, q, rng=rng), q)


def test_perturb_rejects_out_of_range_values() -> None:
    with pytest.raises(InvalidParameterError, match="values must lie"):
        perturb(np.array([0, 3]), grr_matrix(3, 1.0), rng=np.random.default_rng(0))


def test_grr_rejects_bad_epsilon_and_k() -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        grr_matrix(3, 0.0)
    with pytest.raises(InvalidParameterError, match="k"):
        grr_matrix(1, 1.0)


# ----------------------------------------------------------------------------- Subset Selection


def test_ss_subset_size_rounds_like_reference() -> None:
    # ω = max(1, rint(k/(e^ε+1))): k=10, ε=0.05 → rint(4.875) = 5; ε=1 → rint(2.689) = 3; ε=10 → 1
    assert ss_subset_size(10, 0.05) == 5
    assert ss_subset_size(10, 1.0) == 3
    assert ss_subset_size(10, 10.0) == 1
    assert ss_subset_size(5, 0.05) == 2  # rint(2.4375)
    assert ss_subset_size(2, 0.05) == 1  # rint(0.975)


@pytest.mark.parametrize(("k", "eps"), [(5, 0.05), (5, 1.0), (10, 0.05), (10, 1.0), (10, 2.0), (10, 10.0)])
def test_ss_exact_law_is_a_distribution_with_exact_epsilon(k: int, eps: float) -> None:
    q, subsets = subset_selection_matrix(k, eps)
    w = ss_subset_size(k, eps)
    assert len(subsets) == math.comb(k, w)
    assert np.allclose(q.sum(axis=1), 1.0)
    assert ldp_epsilon(q) == pytest.approx(eps, abs=1e-9)
    # marginal inclusion probabilities of the exact law equal the closed form of §9.1 item 8
    member = np.array([[a in s for s in subsets] for a in range(k)], dtype=float)
    incl = q @ member.T
    assert np.allclose(incl, ss_inclusion_matrix(k, eps))
    assert np.allclose(np.diag(incl), ss_keep_probability(k, eps))


@pytest.mark.parametrize("k", [2, 3, 5, 10])
def test_ss_equals_grr_when_subset_size_is_one(k: int) -> None:
    eps = 8.0
    assert ss_subset_size(k, eps) == 1
    q, subsets = subset_selection_matrix(k, eps)
    assert subsets == [(i,) for i in range(k)]
    assert np.allclose(q, grr_matrix(k, eps), atol=1e-15)
    assert np.allclose(ss_inclusion_matrix(k, eps), grr_matrix(k, eps))


@pytest.mark.parametrize(("k", "eps"), [(5, 0.05), (10, 0.5), (10, 1.0)])
def test_ss_sampler_matches_exact_subset_law(k: int, eps: float) -> None:
    rng = np.random.default_rng(5)
    values = rng.integers(0, k, 120_000)
    out = subset_selection(values, k, eps, rng=rng)
    w = ss_subset_size(k, eps)
    assert out.shape == (values.size, k)
    assert np.all(out.sum(axis=1) == w)
    q, subsets = subset_selection_matrix(k, eps)
    index = {s: i for i, s in enumerate(subsets)}
    z = np.array([index[tuple(np.flatnonzero(row))] for row in out])
    _chi2_rows(values, z, q)


def test_ss_multi_hot_with_one_element_is_grr_one_hot_in_law() -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(0, 5, 100_000)
    out = subset_selection(values, 5, 6.0, rng=rng)
    assert np.all(out.sum(axis=1) == 1)
    _chi2_rows(values, out.argmax(axis=1), grr_matrix(5, 6.0))


# ----------------------------------------------------------------------------- Theorem 14


def _ratio(p0: float, p: float, q: float) -> float:
    from repro.fairness.data_fairness import binary_ratio

    return binary_ratio(p0, p, q)


def _grid_best(p0: float, eps: float, n: int = 200_001) -> float:
    """Best ratio over both tight LDP boundaries inside the feasible set (App. B, Step 1)."""
    e = math.exp(eps)
    best = math.inf
    x = np.linspace(0.5, 1.0, n)
    for p, q in ((1 - x / e, x), (x, 1 - x / e)):  # q = e^ε(1−p) tight, or p = e^ε(1−q) tight
        ok = (p >= 0.5) & (p <= 1) & (q >= 0.5) & (q <= 1) & (p <= e * (1 - q) + 1e-12) & (q <= e * (1 - p) + 1e-12)
        if ok.any():
            best = min(best, float(np.min(_ratio(p0, p[ok], q[ok]))))
    return best


@pytest.mark.parametrize(("p0", "eps", "opt", "other", "rr"), [
    (0.3, 0.2, 0.07636, 0.07738, 0.08385),
    (0.3, 1.0, 0.27539, 0.33013, 0.40191),
    (0.3, 4.0, 0.45146, 0.78120, 0.95123),
    (0.7, 1.0, 0.27539, 0.33013, 0.40191),
])
def test_theorem14_fixtures_and_grid_search(p0: float, eps: float, opt: float, other: float, rr: float) -> None:
    minority = 0 if p0 < 0.5 else 1
    q = optimal_binary_matrix(eps, minority)
    closed = _ratio(p0, q[0, 0], q[1, 1])
    assert closed == pytest.approx(opt, abs=5e-5)
    # the other branch's closed form: swap which group is randomized
    q_other = optimal_binary_matrix(eps, 1 - minority)
    assert _ratio(p0, q_other[0, 0], q_other[1, 1]) == pytest.approx(other, abs=5e-5)
    e = math.exp(eps)
    assert _ratio(p0, e / (e + 1), e / (e + 1)) == pytest.approx(rr, abs=5e-5)
    # closed form = global optimum over both tight boundaries (grid search never beats it)
    best = _grid_best(p0, eps)
    assert closed <= best + 1e-12
    assert best - closed < 1e-4
    assert closed < _ratio(p0, e / (e + 1), e / (e + 1))  # RR is never optimal


@pytest.mark.parametrize("eps", EPS_GRID)
def test_theorem14_matrix_is_exactly_eps_ldp(eps: float) -> None:
    for minority in (0, 1):
        q = optimal_binary_matrix(eps, minority)
        assert np.allclose(q.sum(axis=1), 1.0)
        assert ldp_epsilon(q) == pytest.approx(eps, abs=1e-12)
        assert q[minority, minority] == pytest.approx(1 - math.exp(-eps) / 2)
        assert np.allclose(q[1 - minority], 0.5)


# Dataset-level fixtures of spec §5.4 (p0 from the processed files: 14,845/45,849 and 8,926/20,427).
@pytest.mark.parametrize(("eps", "adult_opt", "adult_rr", "lsac_opt", "lsac_rr"), [
    (0.05, 0.0214, 0.0219, 0.0240, 0.0246), (0.25, 0.0974, 0.1091, 0.1099, 0.1224),
    (0.5, 0.1751, 0.2161, 0.1995, 0.2413), (1, 0.2889, 0.4158, 0.3367, 0.4563),
    (2, 0.4108, 0.7188, 0.4963, 0.7565), (4, 0.4782, 0.9545, 0.5920, 0.9629),
    (8, 0.4890, 0.9991, 0.6079, 0.9993), (10, 0.4892, 0.9999, 0.6082, 0.9999),
])
def test_theorem14_dataset_fixtures(eps: float, adult_opt: float, adult_rr: float, lsac_opt: float,
                                    lsac_rr: float) -> None:
    e = math.exp(eps)
    for p0, opt, rr in ((14_845 / 45_849, adult_opt, adult_rr), (8_926 / 20_427, lsac_opt, lsac_rr)):
        q = optimal_binary_matrix(eps, 0)
        # fixtures are printed to 4 decimals (one, Adult RR at ε = 1 = 0.415744, sits on a rounding edge)
        assert _ratio(p0, q[0, 0], q[1, 1]) == pytest.approx(opt, abs=6e-5)
        assert _ratio(p0, e / (e + 1), e / (e + 1)) == pytest.approx(rr, abs=6e-5)


def test_theorem14_limit_does_not_converge_to_identity() -> None:
    p0 = 0.3238
    q = optimal_binary_matrix(50.0, 0)
    assert _ratio(p0, q[0, 0], q[1, 1]) == pytest.approx(2 * p0 / (1 + p0), abs=1e-9)


# ----------------------------------------------------------------------------- non-binary OPT


@pytest.mark.parametrize("eps", [0.05, 1.0, 4.0])
@pytest.mark.parametrize("case", ["race5", "race_gender10"])
def test_nonbinary_opt_satisfies_every_constraint_and_zeta1_gives_zero_delta(eps: float, case: str) -> None:
    p, p1 = (ADULT_RACE_P, ADULT_RACE_P1) if case == "race5" else (ADULT_RG_P, ADULT_RG_P1)
    p = _norm(p)
    sol = optimal_nonbinary_matrix(p, p1, eps)
    assert nonbinary_constraint_violation(sol.matrix, eps, p, 1.0) <= 1e-9
    assert ldp_epsilon(sol.matrix) <= eps + 1e-9
    pz, p1z = perturbed_stats(p, p1, sol.matrix)
    assert sol.delta == pytest.approx(delta(pz, p1z), abs=1e-12)
    assert sol.delta <= 1.01e-6  # optimum 0 (+ the tie-break slack 1e-6)
    assert sol.utility == pytest.approx(p @ np.diag(sol.matrix))


@pytest.mark.parametrize(("eps", "util"), [(0.05, 0.208), (0.25, 0.241), (0.5, 0.279), (1, 0.345), (2, 0.430),
                                           (4, 0.496), (8, 0.512), (10, 0.513)])
def test_nonbinary_opt_zeta1_max_utility_adult_race(eps: float, util: float) -> None:
    sol = optimal_nonbinary_matrix(_norm(ADULT_RACE_P), ADULT_RACE_P1, eps)
    assert sol.utility == pytest.approx(util, abs=2e-3)  # spec §5.5 [V], 3 decimals; inputs rounded to 4


def test_nonbinary_opt_is_globally_optimal_against_random_feasible_matrices() -> None:
    """With ζ = ζ_min (utility binding) no feasible matrix found by random search beats the LP optimum."""
    rng = np.random.default_rng(0)
    k, eps = 3, 1.0
    p = np.array([0.2, 0.3, 0.5])
    p1 = np.array([0.2, 0.5, 0.7])
    zeta = 0.6
    sol = optimal_nonbinary_matrix(p, p1, eps, zeta=zeta)
    assert nonbinary_constraint_violation(sol.matrix, eps, p, zeta) <= 1e-9
    best = math.inf
    for _ in range(20_000):
        q = rng.dirichlet(np.ones(k) * 0.7, size=k)
        if nonbinary_constraint_violation(q, eps, p, zeta) > 0:
            continue
        pz, p1z = perturbed_stats(p, p1, q)
        best = min(best, delta(pz, p1z))
    assert math.isfinite(best)
    assert sol.delta <= best + 1e-6


def test_zeta_min_and_infeasible_zeta() -> None:
    p = _norm(ADULT_RACE_P)
    z = zeta_min(p, 1.0)
    assert z == pytest.approx(0.4078, abs=1e-3)
    with pytest.raises(InvalidParameterError, match="infeasible"):
        optimal_nonbinary_matrix(p, ADULT_RACE_P1, 1.0, zeta=z - 0.01)
    with pytest.raises(InvalidParameterError, match="zeta"):
        optimal_nonbinary_matrix(p, ADULT_RACE_P1, 1.0, zeta=0.0)


def test_constraint_violation_detects_each_constraint() -> None:
    eps = 1.0
    q = grr_matrix(3, eps)
    assert nonbinary_constraint_violation(q, eps) <= 1e-12
    assert nonbinary_constraint_violation(grr_matrix(3, 2.0), eps) > 0.1          # LDP
    bad = q.copy()
    bad[0] = [0.3, 0.4, 0.3]
    assert nonbinary_constraint_violation(bad, 5.0) > 0.09                         # truthfulness
    assert nonbinary_constraint_violation(q * 1.1, eps) > 0.09                     # row sums
    p = np.ones(3) / 3
    assert nonbinary_constraint_violation(q, eps, p, zeta=0.1) > 0.3               # utility


def test_every_mechanism_is_eps_ldp_on_the_grid() -> None:
    for eps, k in itertools.product(EPS_GRID, (2, 5, 10)):
        assert ldp_epsilon(grr_matrix(k, eps)) <= eps + 1e-9
        assert ldp_epsilon(subset_selection_matrix(k, eps)[0]) <= eps + 1e-9
        if k == 2:
            assert ldp_epsilon(optimal_binary_matrix(eps, 0)) <= eps + 1e-9
    for eps in EPS_GRID:
        assert ldp_epsilon(optimal_nonbinary_matrix(_norm(ADULT_RACE_P), ADULT_RACE_P1, eps).matrix) <= eps + 1e-9
