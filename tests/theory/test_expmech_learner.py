"""Algorithm 1 (exponential-mechanism fair learner) and its exact audit (spec §3.1–§3.2, §3.7)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from repro.errors import InvalidParameterError
from repro.theory import expmech_learner as em

# A universe small enough to enumerate by hand: x ∈ {0, 1}, H = {1[x ≥ t_a]: t_a ∈ {0, 1, 2}} (9 hypotheses).
HYP, TS = em.threshold_class(2)
# counts[x, a, y]
TINY = np.array([[[3, 2], [2, 1]], [[1, 4], [1, 2]]])  # n = 16, |Z₁₀| = 6, |Z₁₁| = 3


def _h(t0: int, t1: int) -> int:
    return TS.index((t0, t1))


def test_threshold_class_shape_and_values() -> None:
    assert HYP.shape == (9, 2, 2)
    assert HYP[_h(0, 2)].tolist() == [[1, 0], [1, 0]]  # h(x, 0) = 1, h(x, 1) = 0
    assert HYP[_h(1, 1)].tolist() == [[0, 0], [1, 1]]  # h = 1[x ≥ 1]


def test_sample_scores_by_hand() -> None:
    s = em.sample_scores(TINY, HYP)
    # h = 1[x ≥ 1]: errors = negatives with x = 1 (1 + 1) + positives with x = 0 (2 + 1) = 5 of 16;
    # γ₁₀ = 4/6, γ₁₁ = 2/3 → Γ = 0.
    i = _h(1, 1)
    assert s["err"][i] == pytest.approx(5 / 16)
    assert s["Gamma"][i] == pytest.approx(0.0)
    # h = (t0, t1) = (0, 2): predicts 1 on a = 0, 0 on a = 1: γ₁₀ = 1, γ₁₁ = 0 → Γ = 1;
    # errors: a=0 negatives (3 + 1) + a=1 positives (1 + 2) = 7.
    j = _h(0, 2)
    assert s["Gamma"][j] == pytest.approx(1.0)
    assert s["err"][j] == pytest.approx(7 / 16)
    assert np.allclose(s["u"], s["Gamma"] + s["err"])


def test_population_scores_match_sample_scores_on_the_empirical_distribution() -> None:
    pop = em.population_scores(TINY / TINY.sum(), HYP)
    s = em.sample_scores(TINY, HYP)
    assert np.allclose(pop["u"], s["u"])


@pytest.mark.parametrize("sens", [0.05, 0.3, 2.0])
def test_exp_mech_sums_to_one_and_follows_the_score(sens: float) -> None:
    u = em.sample_scores(TINY, HYP)["u"]
    p = em.exp_mech_probs(u, 1.3, sens)
    assert p.sum() == pytest.approx(1.0, abs=1e-14)
    # Ratios are exactly exp(−ε(u_i − u_j)/(2Δ)), and lower loss means higher probability.
    for i in range(len(u)):
        for j in range(len(u)):
            assert p[i] / p[j] == pytest.approx(math.exp(-1.3 * (u[i] - u[j]) / (2 * sens)), rel=1e-10)
    order = np.argsort(u, kind="stable")
    assert np.all(np.diff(p[order]) <= 1e-15)


def _reference_probs(counts: np.ndarray, eps: float) -> np.ndarray:
    """Independent implementation: scipy.integrate.quad over Y in the original variable."""
    n = int(counts.sum())
    u = em.sample_scores(counts, HYP)["u"]
    c = counts[:, :, 1].sum(axis=0).min()
    y0 = 1 - c + math.sqrt(n) / eps
    cdf = 0.5 * math.exp(eps * y0) if y0 < 0 else 1 - 0.5 * math.exp(-eps * y0)

    def integrand(y: float, h: int) -> float:
        m = c + y - math.sqrt(n) / eps
        d = 2 / (m - 1) + 1 / n
        w = np.exp(-eps * u / (2 * d))
        return 0.5 * eps * math.exp(-eps * abs(y)) * w[h] / w.sum()

    out = []
    for h in range(len(u)):
        pts = [y0, max(y0, 0.0)] if y0 < 0 else [y0]
        total = cdf / len(u)
        for lo, hi in zip(pts, pts[1:] + [math.inf], strict=True):
            if hi > lo:
                total += integrate.quad(integrand, lo, hi, args=(h,), epsabs=0, epsrel=1e-12, limit=200)[0]
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_output_distribution_matches_independent_quadrature(eps: float) -> None:
    out = em.alg1_output_distribution(TINY, HYP, eps)
    ref = _reference_probs(TINY, eps)
    assert ref.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.allclose(out.probs, ref, rtol=1e-8, atol=0)
    assert out.quad_error < 1e-8
    # Pinned values (tiny universe, n = 16): the fallback probability is the Laplace CDF at
    # y₀ = 1 − 3 + 4/ε, exactly.
    y0 = -2 + 4 / eps
    expected_fb = 0.5 * math.exp(eps * y0) if y0 < 0 else 1 - 0.5 * math.exp(-eps * y0)
    assert out.p_fallback == pytest.approx(expected_fb, rel=1e-14)


def test_pinned_audit_numbers_on_the_tiny_universe() -> None:
    """Exact audit of all replace-one neighbours of TINY at ε = 4 (numbers checked with scipy.quad)."""
    res = em.audit_replace_one(TINY, HYP, 4.0, (4.0, 8.0))
    assert res.rows and len(res.rows) == 8 * 7  # every type is present: 8 removals × 7 additions
    worst = max(res.rows, key=lambda r: r["max_log_ratio"])
    nb = TINY.copy()
    src = tuple(int(worst["removed"][i]) for i in (1, 3, 5))
    dst = tuple(int(worst["added"][i]) for i in (1, 3, 5))
    nb[src] -= 1
    nb[dst] += 1
    ref_p, ref_q = _reference_probs(TINY, 4.0), _reference_probs(nb, 4.0)
    assert res.realised_epsilon == pytest.approx(np.max(np.abs(np.log(ref_p) - np.log(ref_q))), rel=1e-7)
    assert res.realised_epsilon == pytest.approx(PINNED_TINY_EPS4, rel=1e-6)
    assert res.realised_epsilon < 8.0 and res.deltas[8.0] == 0.0


# Recorded from the implementation and confirmed by the independent scipy.quad implementation above.
PINNED_TINY_EPS4 = 0.8572401402306884


def test_fallback_only_gives_uniform_output() -> None:
    # ε tiny: y₀ = 1 − 3 + 4/ε is huge, so M ≤ 1 with probability ≈ 1 and the output is ≈ uniform.
    out = em.alg1_output_distribution(TINY, HYP, 1e-3)
    assert out.p_fallback == pytest.approx(1 - 0.5 * math.exp(-1e-3 * (-2 + 4000)), rel=1e-12)
    assert np.allclose(out.probs, 1 / 9, rtol=0.03)


class _ScriptedRng:
    """Returns ``lap_unit``·scale from ``laplace`` and records its arguments and the probabilities given to
    ``choice`` (which returns 0); ``integers`` (the fallback) returns −1."""

    def __init__(self, lap_unit: float):
        self.lap_unit, self.calls = lap_unit, []

    def laplace(self, loc, scale):
        self.calls.append(("laplace", loc, scale))
        return loc + self.lap_unit * scale

    def choice(self, k, p):
        self.calls.append(("choice", k, np.asarray(p)))
        return 0

    def integers(self, k):
        self.calls.append(("integers", k))
        return -1


def test_alg1_sample_draws_the_stated_laplace_and_exp_mech() -> None:
    """One run of Algorithm 1 on TINY (n = 16, c = min_a |Z₁ₐ| = 3) with the Laplace draw pinned:
    M = c + Lap(1/ε) − √n/ε; M ≤ 1 → uniform fallback, else the exponential mechanism with
    Δ = 2/(M − 1) + 1/n, Pr[h] ∝ exp(−ε·u(h)/(2Δ))."""
    u = em.sample_scores(TINY, HYP)["u"]
    eps, unit = 4.0, 0.5
    rng = _ScriptedRng(unit)
    assert em.alg1_sample(TINY, HYP, eps, rng=rng, scores=u) == 0
    (kind, loc, scale), (kind2, k, p) = rng.calls
    assert (kind, loc, kind2, k) == ("laplace", 0.0, "choice", 9) and scale == pytest.approx(1 / eps, rel=1e-15)
    m = 3 + unit / eps - 4 / eps                                       # = 2.125
    delta = 2 / (m - 1) + 1 / 16
    logits = -eps * u / (2 * delta)
    np.testing.assert_allclose(p, np.exp(logits) / np.exp(logits).sum(), rtol=1e-12)
    # a Laplace draw −4.5/ε = −1.125 ≤ y₀ = 1 − c + √n/ε = −1 makes M ≤ 1: the uniform fallback
    rng = _ScriptedRng(-4.5)
    assert em.alg1_sample(TINY, HYP, eps, rng=rng, scores=u) == -1
    assert [c[0] for c in rng.calls] == ["laplace", "integers"] and rng.calls[1][1] == 9


class _CountingRng:
    """A real generator that counts uniform fallbacks (``integers``) and mechanism draws (``choice``)."""

    def __init__(self, seed: int):
        self.rng, self.fallbacks, self.mechanism = np.random.default_rng(seed), 0, 0

    def laplace(self, loc, scale):
        return self.rng.laplace(loc, scale)

    def integers(self, k):
        self.fallbacks += 1
        return self.rng.integers(k)

    def choice(self, k, p):
        self.mechanism += 1
        return self.rng.choice(k, p=p)


def test_fallback_frequency_is_the_laplace_cdf() -> None:
    """Pr[M ≤ 1] = Pr[Lap(1/ε) ≤ y₀], y₀ = 1 − c + √n/ε = 2 at ε = 1 on TINY: 1 − ½e^{−2} ≈ 0.932.

    5000 runs, SE = √(p(1−p)/5000) ≈ 0.0036; ±4 SE (0.014). A Laplace scale 2/ε gives 1 − ½e^{−1} ≈ 0.816
    (≈ 32 SE away), a scale 1/(2ε) gives 1 − ½e^{−4} ≈ 0.991 (≈ 16 SE)."""
    u = em.sample_scores(TINY, HYP)["u"]
    p_fb = 1 - 0.5 * math.exp(-2.0)
    assert em.alg1_output_distribution(TINY, HYP, 1.0).p_fallback == pytest.approx(p_fb, rel=1e-14)
    rng = _CountingRng(2024)
    draws = 5000
    out = [em.alg1_sample(TINY, HYP, 1.0, rng=rng, scores=u) for _ in range(draws)]
    assert rng.fallbacks + rng.mechanism == draws and set(out) <= set(range(9))
    assert rng.fallbacks / draws == pytest.approx(p_fb, abs=4 * math.sqrt(p_fb * (1 - p_fb) / draws))


@pytest.mark.parametrize("eps", [4.0, 8.0])
def test_monte_carlo_matches_exact_distribution(eps: float) -> None:
    """Sampled outputs of Algorithm 1 vs the exact law (quadrature) on TINY: Pearson χ² goodness of fit,
    8 degrees of freedom, rejected at p < 10⁻³ (smallest expected count ≈ 56 at ε = 8, so the χ² law
    holds). With 6000 draws a sensitivity 1/(M−1) + 1/n (instead of 2/(M−1) + 1/n) moves some cell by
    ≈ 14 (ε = 4) / 29 (ε = 8) binomial SEs, and a sampler stuck on the uniform fallback moves the ε = 8
    law by > 50 SEs; both give χ² in the hundreds (the critical value is 26.1)."""
    rng = np.random.default_rng(12345 + int(eps))
    draws = 6_000
    exact = em.alg1_output_distribution(TINY, HYP, eps).probs
    u = em.sample_scores(TINY, HYP)["u"]
    counts = np.bincount([em.alg1_sample(TINY, HYP, eps, rng=rng, scores=u) for _ in range(draws)], minlength=9)
    assert exact.min() * draws > 50
    chi2 = float(np.sum((counts - draws * exact) ** 2 / (draws * exact)))
    assert stats.chi2.sf(chi2, df=8) > 1e-3, chi2


def test_replace_one_neighbours_are_neighbours() -> None:
    nbs = em.replace_one_neighbours(TINY)
    assert len(nbs) == 56
    for _src, _dst, nb in nbs:
        assert nb.sum() == TINY.sum() and np.abs(nb - TINY).sum() == 2 and nb.min() >= 0


def test_hockey_stick_and_log_ratio_closed_forms() -> None:
    p = np.log(np.array([0.5, 0.3, 0.2]))
    q = np.log(np.array([0.2, 0.3, 0.5]))
    assert em.hockey_stick(p, q, 0.0) == pytest.approx(0.3)
    assert em.hockey_stick(p, q, math.log(2.5)) == pytest.approx(0.0, abs=1e-15)
    assert em.hockey_stick(p, q, math.log(2)) == pytest.approx(0.5 - 0.4)
    assert em.max_log_ratio(p, q) == pytest.approx(math.log(2.5))


def test_lemma2_local_sensitivity_bound_brute_force() -> None:
    # Spec §3.2: max |ΔΓ| over replace-one neighbours ≤ 2/(min_a |Z₁ₐ| − 1), Δerr ≤ 1/n.
    rng = np.random.default_rng(7)
    hyp, _ = em.threshold_class(3)
    for _ in range(30):
        counts = rng.integers(0, 4, size=(3, 2, 2))
        counts[0, :, 1] += 2  # |Z₁ₐ| ≥ 2
        base = em.sample_scores(counts, hyp)
        c = counts[:, :, 1].sum(axis=0).min()
        n = counts.sum()
        for _s, _d, nb in em.replace_one_neighbours(counts):
            other = em.sample_scores(nb, hyp)
            assert np.max(np.abs(other["Gamma"] - base["Gamma"])) <= Fraction(2, int(c) - 1) + 1e-12
            assert np.max(np.abs(other["err"] - base["err"])) <= 1 / n + 1e-12


def test_bad_input_raises() -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        em.alg1_output_distribution(TINY, HYP, 0.0)
    with pytest.raises(InvalidParameterError, match="shape"):
        em.sample_scores(np.zeros((2, 2)), HYP)
    with pytest.raises(InvalidParameterError, match="non-negative"):
        em.sample_scores(-TINY, HYP)
