"""Theorem 2 and Theorem 3 bound calculators (spec §3.6, §4.3, §5.6 spot values)."""

from __future__ import annotations

import math

import pytest

from repro.errors import InvalidParameterError
from repro.theory import sample_complexity as sc


def _p(eps: float = 1.0, alpha: float = 0.1, beta: float = 0.05, p_min: float = 0.25, h: float = 1000.0):
    return sc.Thm2Params(epsilon=eps, alpha=alpha, beta=beta, p_min=p_min, h_size=h)


@pytest.mark.parametrize(
    ("eps", "alpha", "printed", "corrected"),
    [
        (0.1, 0.05, 3.41e6, 2.97e6), (0.1, 0.1, 1.72e6, 0.743e6), (0.1, 0.2, 0.87e6, 0.186e6),
        (0.5, 0.05, 2.97e6, 2.97e6), (1.0, 0.1, 0.743e6, 0.743e6), (2.0, 0.2, 0.186e6, 0.186e6),
    ],
)
def test_n_min_matches_spec_table(eps: float, alpha: float, printed: float, corrected: float) -> None:
    p = _p(eps, alpha)
    assert sc.thm2_min_n(p, "printed") == pytest.approx(printed, rel=0.006)
    assert sc.thm2_min_n(p, "corrected") == pytest.approx(corrected, rel=0.006)


def test_n_min_exact_spot_value_and_closed_form() -> None:
    p = _p()
    n = sc.thm2_min_n(p, "corrected")
    assert n == 742_996
    # Here the generalisation term dominates: n_min = ceil(144 L / (α² P_min)).
    assert n == math.ceil(144 * math.log(20 * 1000 / 0.05) / (0.1**2 * 0.25))


@pytest.mark.parametrize("variant", sc.VARIANTS)
@pytest.mark.parametrize("eps", [0.1, 0.5, 2.0])
@pytest.mark.parametrize("p_min", [0.05, 0.25])
def test_n_min_is_minimal(variant: str, eps: float, p_min: float) -> None:
    p = _p(eps=eps, p_min=p_min)
    n = sc.thm2_min_n(p, variant)
    assert sc.thm2_holds(n, p, variant)
    assert not sc.thm2_holds(n - 1, p, variant)
    # Admissible n form an interval: spot-check larger n.
    assert all(sc.thm2_holds(n * k, p, variant) for k in (2, 10, 1000))


@pytest.mark.parametrize(
    ("n", "printed", "corrected"),
    [(1e3, 18.9, 2.73), (1e4, 1.73, 0.86), (1e5, 0.27, 0.27), (1e6, 0.086, 0.086), (1e7, 0.027, 0.027)],
)
def test_alpha_at_n_matches_spec_table(n: float, printed: float, corrected: float) -> None:
    p = _p()
    assert sc.thm2_alpha_at_n(n, p, "printed") == pytest.approx(printed, rel=0.01)
    assert sc.thm2_alpha_at_n(n, p, "corrected") == pytest.approx(corrected, rel=0.01)


@pytest.mark.parametrize("variant", sc.VARIANTS)
@pytest.mark.parametrize("n", [2e4, 3e5, 5e6])
def test_alpha_at_n_inverts_the_condition(variant: str, n: float) -> None:
    base = _p(eps=0.3)
    a = sc.thm2_alpha_at_n(n, base, variant)
    assert math.isfinite(a)
    assert sc.thm2_holds(n, _p(eps=0.3, alpha=a * (1 + 1e-9)), variant)
    assert not sc.thm2_holds(n, _p(eps=0.3, alpha=a * (1 - 1e-6)), variant)


def test_corrected_reduces_to_printed_where_algebra_agrees() -> None:
    # Large ε: both conditions reduce to n ≥ 144 L/(α² P_min); small ε: printed is stricter (144 vs 6).
    for alpha in (0.05, 0.1, 0.2):
        for h in (100.0, 1e6):
            p = _p(eps=2.0, alpha=alpha, h=h)
            assert sc.thm2_min_n(p, "printed") == sc.thm2_min_n(p, "corrected")
    p = _p(eps=0.1, alpha=0.2)
    assert sc.thm2_min_n(p, "printed") > sc.thm2_min_n(p, "corrected")
    assert sc.thm2_alpha_at_n(1e8, p, "printed") == sc.thm2_alpha_at_n(1e8, p, "corrected")


def test_side_conditions_make_the_guarantee_vacuous() -> None:
    p = _p(eps=0.1, p_min=0.05)
    assert sc.thm2_alpha_at_n(1000, p, "corrected") == math.inf  # den ≤ 1
    assert sc.thm2_alpha_at_n(1000, p, "printed") == math.inf


@pytest.mark.parametrize(
    "kwargs", [dict(eps=0.0), dict(alpha=-1.0), dict(beta=1.0), dict(p_min=0.7), dict(h=0.5)]
)
def test_bad_parameters_raise(kwargs: dict) -> None:
    with pytest.raises(InvalidParameterError):
        _p(**kwargs)


def test_unknown_variant_raises() -> None:
    with pytest.raises(InvalidParameterError, match="variant"):
        sc.thm2_holds(1e6, _p(), "literal")


@pytest.mark.parametrize(
    ("n", "T", "m", "gamma_l", "gamma_a"),
    [(1e3, 4.7e6, 4.4e6, 622, 0.024), (1e4, 1.476e7, 6.15e6, 537, 0.022), (1e6, 1.5e8, 1.0e7, 318, 0.019),
     (1e10, 1.5e10, 2.1e7, 73, 0.016), (1e16, 1.5e13, 4.1e7, 5.2, 0.013)],
)
def test_alg3_parameters_match_spec_table(n: float, T: float, m: float, gamma_l: float, gamma_a: float) -> None:
    alpha, beta = 0.1, 0.05
    t = sc.alg3_paper_T(n, alpha, beta)
    mm = sc.alg3_paper_m(n, alpha, beta)
    assert t == pytest.approx(T, rel=0.03)
    assert mm == pytest.approx(m, rel=0.03)
    # Closed form of m when C = 1/α (spec §5.4).
    assert mm == pytest.approx(4 * math.log(n) * math.log(2 * t / beta) / (alpha**4 * (1 + alpha) ** 2), rel=1e-12)
    assert sc.alg3_gamma_L(n, 1.0, 1e-5, t, mm, 10.0) == pytest.approx(gamma_l, rel=0.03)
    assert sc.alg3_gamma_A(n, t, mm, 10.0, beta) == pytest.approx(gamma_a, rel=0.05)
    lhs, rhs = sc.alg3_eq2_sides(n, alpha, beta, 1.0, 1e-5)
    assert lhs == pytest.approx(0.2947, rel=1e-3)
    assert lhs < rhs


@pytest.mark.parametrize(("alpha", "eps", "n_min"), [(0.1, 1.0, 7e24), (0.2, 1.0, 1.3e22), (0.3, 0.5, 6.9e21)])
def test_eq2_min_n_matches_spec(alpha: float, eps: float, n_min: float) -> None:
    n = sc.alg3_eq2_min_n(alpha, 0.05, eps, 1e-5)
    assert n == pytest.approx(n_min, rel=0.02)
    lhs, rhs = sc.alg3_eq2_sides(n, alpha, 0.05, eps, 1e-5)
    assert lhs >= rhs


@pytest.mark.parametrize("eps", [0.5, 1.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
@pytest.mark.parametrize("k", [100, 10**4, 10**8])
def test_lemma4_missing_sqrt8_ratio(eps: float, delta: float, k: int) -> None:
    ratio = sc.lemma4_total_epsilon(eps, k, delta) / eps
    # ε_total ≈ √2·ε + ε²/ln(1/δ) (spec §4.3: ratio 1.44–1.50 over this grid).
    assert ratio == pytest.approx(math.sqrt(2) + eps / math.log(1 / delta), rel=2e-3)
    assert 1.43 <= ratio <= 1.503
    # With the √8 the clean form of Thm 6 gives at most ε.
    assert sc.advanced_composition_epsilon(eps / math.sqrt(8 * k * math.log(1 / delta)), k, delta) <= eps


def test_strict_side_condition_at_the_boundary() -> None:
    # 4/(P_min ε)² = 160,000 exactly at P_min = 0.05, ε = 0.1: n = 160,000 is not admissible (n > 4/(kε)²).
    p = _p(eps=0.1, alpha=1.0, p_min=0.05, h=100.0)
    assert sc.thm2_min_n(p, "corrected") == 160_001
    assert sc.thm2_alpha_at_n(160_000, p, "corrected") == math.inf
