"""Private-FairNR building blocks (spec §4–§5): oracles, FTPL, sensitivities, auditor, accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import stats

from repro.errors import InvalidParameterError
from repro.privacy import composition
from repro.theory import fairnr as fn


def _records(rng: np.random.Generator, n: int) -> fn.TypeData:
    """Record-level data (each record its own type), with negatives in both groups."""
    while True:
        y = rng.integers(0, 2, n)
        g = rng.integers(0, 2, n)
        n0, ng0 = int(np.sum(y == 0)), int(np.sum((y == 0) & (g == 1)))
        if n0 >= 3 and 2 <= ng0 <= n0 - 2:
            return fn.TypeData(np.ones(n, dtype=int), y, g)


def _fp_defs(h: np.ndarray, y: np.ndarray, g: np.ndarray) -> float:
    """Φ₊ from the definitions: A_FP(g)·(FP(h) − FP(h, g)) (spec §5.1)."""
    n = len(y)
    a_fp = np.sum((g == 1) & (y == 0)) / n
    fp = h[y == 0].mean()
    fp_g = h[(y == 0) & (g == 1)].mean()
    return a_fp * (fp - fp_g)


def test_fp_violations_and_errors_match_definitions() -> None:
    rng = np.random.default_rng(0)
    data = _records(rng, 30)
    pred = rng.integers(0, 2, (20, 30)).astype(float)
    phi = fn.fp_violations(pred, data)
    err = fn.errors(pred, data)
    for i, h in enumerate(pred):
        assert phi[i] == pytest.approx(_fp_defs(h, data.y, data.g), abs=1e-14)
        assert err[i] == pytest.approx(np.mean(h != data.y), abs=1e-14)


def test_oracle_is_the_lagrangian_best_response_brute_force() -> None:
    """CSC(H) with zero noise returns argmin_h t·err(h) + Λ·Φ₊(h) over a tiny class (spec §5.3)."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        data = _records(rng, 12)
        pred = rng.integers(0, 2, (16, 12)).astype(float)
        rounds, lam_sum = int(rng.integers(1, 6)), float(rng.uniform(-30, 30))
        cum = fn.cumulative_loss(data, rounds, lam_sum)
        got = fn.ftpl_oracle(pred, data, cum, 0.0, rng=rng)
        payoff = [rounds * np.mean(h != data.y) + lam_sum * _fp_defs(h, data.y, data.g) for h in pred]
        best = np.flatnonzero(np.isclose(payoff, np.min(payoff), rtol=0, atol=1e-12))
        assert got == best[0]


def test_ftpl_with_zero_noise_is_follow_the_leader() -> None:
    rng = np.random.default_rng(2)
    data = _records(rng, 40)
    pred = rng.integers(0, 2, (25, 40)).astype(float)
    run = fn.private_fairnr(pred, data, T=15, m=3, C=4.0, mode="nonprivate", rng=rng)
    err = np.array([np.mean(h != data.y) for h in pred])
    phi = np.array([_fp_defs(h, data.y, data.g) for h in pred])
    for t in range(15):
        # Follow the leader on U(h, λ^r) = err(h) + λ^r Φ₊(h), r < t (t = 0: all-zero loss, lowest index).
        total = t * err + np.sum(run.lambdas[:t]) * phi
        leader = np.flatnonzero(np.isclose(total, total.min(), rtol=0, atol=1e-12))[0]
        assert np.all(run.samples[t] == leader)
        v = phi[run.samples[t]].mean()
        assert run.lambdas[t] == (4.0 if v >= -v else -4.0)


def test_label_flip_turns_fp_gap_into_eo_gap() -> None:
    rng = np.random.default_rng(3)
    data = _records(rng, 50)
    pred = rng.integers(0, 2, (10, 50)).astype(float)
    fdata, fpred = fn.flip_labels(data, pred)
    y, g = np.asarray(data.y), np.asarray(data.g)
    p11, p10 = np.mean((y == 1) & (g == 1)), np.mean((y == 1) & (g == 0))
    for h, hf in zip(pred, fpred, strict=True):
        gamma = abs(h[(y == 1) & (g == 0)].mean() - h[(y == 1) & (g == 1)].mean())
        assert abs(fn.fp_violations(hf[None, :], fdata)[0]) == pytest.approx(p11 * p10 / (p10 + p11) * gamma)
        assert fn.errors(hf[None, :], fdata)[0] == pytest.approx(np.mean(h != y))


@pytest.mark.parametrize("C", [0.5, 1.0, 10.0])
def test_loss_and_violation_sensitivities_brute_force(C: float) -> None:
    """Every replace-one neighbour of small datasets stays within the stated ℓ₁ sensitivities."""
    rng = np.random.default_rng(4)
    for _ in range(6):
        data = _records(rng, 9)
        n = data.n
        pred = rng.integers(0, 2, (8, n)).astype(float)
        rounds, lam_sum = int(rng.integers(1, 5)), None
        lam_sum = float(rng.uniform(-rounds * C, rounds * C))
        for j in range(n):
            for yy in (0, 1):
                for gg in (0, 1):
                    y2, g2 = np.array(data.y), np.array(data.g)
                    y2[j], g2[j] = yy, gg
                    try:
                        nb = fn.TypeData(data.counts, y2, g2)
                    except InvalidParameterError:
                        continue
                    for lam in (-C, C, float(rng.uniform(-C, C))):
                        d1 = np.abs(fn.per_round_loss(data, lam) - fn.per_round_loss(nb, lam)).sum()
                        assert d1 <= fn.per_round_sensitivity(n, C) + 1e-12
                    dc = np.abs(fn.cumulative_loss(data, rounds, lam_sum) - fn.cumulative_loss(nb, rounds, lam_sum)).sum()
                    assert dc <= fn.cumulative_loss_sensitivity(n, rounds, lam_sum) + 1e-12
                    assert fn.cumulative_loss_sensitivity(n, rounds, lam_sum) <= rounds * fn.per_round_sensitivity(n, C) + 1e-12
                    dphi = np.abs(fn.fp_violations(pred, data) - fn.fp_violations(pred, nb)).max()
                    assert dphi <= fn.fp_violation_sensitivity(n) + 1e-12


def test_paper_sensitivity_is_exceeded() -> None:
    """E-15: the paper's (2 + C)/n under-counts the per-round ℓ₁ sensitivity (a witness for C = 10)."""
    data = fn.TypeData(np.ones(6, dtype=int), np.array([0, 0, 0, 0, 1, 1]), np.array([1, 0, 1, 0, 1, 0]))
    nb = fn.TypeData(np.ones(6, dtype=int), np.array([0, 0, 0, 0, 1, 1]), np.array([0, 0, 1, 0, 1, 0]))
    d1 = np.abs(fn.per_round_loss(data, 10.0) - fn.per_round_loss(nb, 10.0)).sum()
    assert d1 > (2 + 10) / 6


def test_laplace_type_sums_distribution() -> None:
    rng = np.random.default_rng(5)
    counts = np.array([0, 1, 7])
    draws = fn.laplace_type_sums(np.tile(counts, 20_000), 0.5, rng=rng).reshape(20_000, 3)
    assert np.all(draws[:, 0] == 0)
    assert stats.kstest(draws[:, 1], stats.laplace(scale=0.5).cdf).pvalue > 1e-4
    direct = rng.laplace(0, 0.5, (20_000, 7)).sum(axis=1)
    assert stats.ks_2samp(draws[:, 2], direct).pvalue > 1e-4
    assert draws[:, 2].var() == pytest.approx(2 * 7 * 0.25, rel=0.05)


class _RecordingRng:
    """Stands in for the generator: records the probabilities passed to ``choice`` and returns index 0."""

    def choice(self, k, p):
        self.k, self.p = k, np.asarray(p)
        return 0


def test_auditor_exp_mech_probabilities() -> None:
    """Pr[λ] ∝ exp(ε·score(λ)/(2·C·2/n)), score(±C) = C(±v − slack), score(0) = 0: checked exactly (the
    probabilities handed to the sampler), then by sampling at Pr[+C] = 1/(1 + e^{−εnv/2}) ≈ 0.80."""
    n, C, eps, v = 200, 5.0, 0.5, 0.028
    p_plus = 1 / (1 + math.exp(-eps * n * v / 2))                      # = 1/(1 + e^{−1.4}) ≈ 0.802
    rec = _RecordingRng()
    assert fn.auditor_exp_mech(v, C, 0.0, eps, n, rng=rec) == C            # index 0 is +C
    np.testing.assert_allclose(rec.p, [p_plus, 1 - p_plus], rtol=1e-12)
    slack = 0.01
    logits = eps * n / 4 * np.array([v - slack, -v - slack, 0.0])
    assert fn.auditor_exp_mech(v, C, slack, eps, n, rng=rec) == C and rec.k == 3
    np.testing.assert_allclose(rec.p, np.exp(logits) / np.exp(logits).sum(), rtol=1e-12)
    # sampling: 4000 draws, SE of the frequency = √(p(1−p)/4000) ≈ 0.0063; ±4 SE (≈ 0.025) tells p ≈ 0.80
    # from a fair coin (0.5, logits = 0) and from logits ×10 (p ≈ 1 − 10⁻⁶)
    rng = np.random.default_rng(6)
    picks = np.array([fn.auditor_exp_mech(v, C, 0.0, eps, n, rng=rng) for _ in range(4000)])
    assert set(np.unique(picks)) == {C, -C}
    assert np.mean(picks == C) == pytest.approx(p_plus, abs=4 * math.sqrt(p_plus * (1 - p_plus) / 4000))
    assert fn.auditor_best_response(v, C) == C and fn.auditor_best_response(-v, C) == -C
    assert fn.auditor_best_response(0.004, C, slack=0.01) == 0.0       # |v| below the slack


@pytest.mark.parametrize(("eps0", "k", "eps_total"), [(0.1, 50, 2.0), (0.5, 10, 3.0), (0.1, 5, 0.05), (0.02, 400, 1.0)])
def test_composition_delta_matches_dp_accounting_pld(eps0: float, k: int, eps_total: float) -> None:
    # Binary randomized response with noise parameter 2/(1 + e^ε₀) is the dominating pair of ε₀-DP.
    # (dp_accounting's PLDAccountant ignores `count` for RandomizedResponseDpEvent, so compose the PLD.)
    def pld(pessimistic: bool) -> float:
        base = pld_lib.from_randomized_response(noise_parameter=2 / (1 + math.exp(eps0)), num_buckets=2,
                                                pessimistic_estimate=pessimistic,
                                                value_discretization_interval=1e-4)
        return base.self_compose(k).get_delta_for_epsilon(eps_total)

    ours = composition.composition_delta(eps0, k, eps_total)
    assert pld(False) - 1e-9 <= ours <= pld(True) + 1e-9
    assert ours == pytest.approx(pld(True), rel=0.2, abs=1e-7)


def test_calibration_and_accounting_are_consistent() -> None:
    eps, delta, k = 1.0, 1e-5, 1090
    e0 = composition.calibrate_step_epsilon(eps, delta, k)
    assert composition.composition_delta(e0, k, eps) <= delta
    assert composition.composition_delta(e0 * 1.001, k, eps) > delta
    assert composition.pure_composition_epsilon(e0, k, delta) == pytest.approx(eps, rel=1e-6)
    # Better than basic composition, and than advanced composition with the same per-step ε.
    assert e0 > eps / k
    assert composition.heterogeneous_composition_epsilon(np.full(k, e0), delta) > eps
    assert composition.calibrate_step_epsilon(2.0, delta, 1) == 2.0


def test_lp_opt_and_game_value_bracket() -> None:
    rng = np.random.default_rng(7)
    data = _records(rng, 40)
    pred = rng.integers(0, 2, (30, 40)).astype(float)
    pred[0] = 0.0  # the all-zero classifier is exactly fair, so the LP is feasible at γ = 0
    err = fn.errors(pred, data)
    assert fn.lp_opt(pred, data, 10.0) == pytest.approx(err.min())
    opt0 = fn.lp_opt(pred, data, 0.0)
    value, weights = fn.game_value(pred, data, 5.0)
    assert err.min() - 1e-12 <= value <= opt0 + 1e-12
    phi = fn.fp_violations(pred, data)
    assert weights @ err + 5.0 * abs(weights @ phi) == pytest.approx(value, abs=1e-9)


def test_modes_and_bad_input() -> None:
    rng = np.random.default_rng(8)
    data = _records(rng, 20)
    pred = rng.integers(0, 2, (5, 20)).astype(float)
    with pytest.raises(InvalidParameterError, match="mode"):
        fn.private_fairnr(pred, data, T=2, m=1, C=1.0, mode="exact", rng=rng)
    with pytest.raises(InvalidParameterError, match="eps_prime"):
        fn.private_fairnr(pred, data, T=2, m=1, C=1.0, mode="paper", rng=rng)
    run = fn.private_fairnr(pred, data, T=4, m=2, C=1.0, mode="corrected", eps_step=0.1, rng=rng)
    assert run.samples.shape == (4, 2) and run.mixture().sum() == pytest.approx(1.0)
    # Corrected noise grows with the round (cumulative sensitivity); paper noise is constant.
    assert np.all(np.diff(run.scales[1:]) >= 0) and run.scales[-1] > run.scales[1]
    with pytest.raises(InvalidParameterError, match="negative"):
        fn.TypeData(np.ones(3, dtype=int), np.array([1, 1, 0]), np.array([0, 1, 0]))


# --------------------------------------------------------------------------- issue 14, defect 2: one FTPL step


def _k3_threshold_types() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Types (x ∈ {0, 1, 2}, g, y) and the threshold class h_k = 1[x ≥ k], k = 0..3 (K = 3)."""
    types = np.array([(x, g, y) for x in range(3) for g in (0, 1) for y in (0, 1)])
    pred = (types[None, :, 0] >= np.arange(4)[:, None]).astype(float)
    return types[:, 0], types[:, 1], types[:, 2], pred


def _k3_dataset() -> fn.TypeData:
    """Eight records, none with x = 2, so h_2 and h_3 agree on the data."""
    x, g, y, _ = _k3_threshold_types()
    counts = np.zeros(x.size, dtype=int)
    for xi, gi, yi, c in [(0, 0, 0, 2), (0, 1, 0, 1), (1, 0, 0, 1), (1, 1, 0, 1), (0, 0, 1, 1), (1, 1, 1, 2)]:
        counts[np.flatnonzero((x == xi) & (g == gi) & (y == yi))[0]] += c
    return fn.TypeData(counts, y, g)


def _neighbours(data: fn.TypeData) -> list[fn.TypeData]:
    """All replace-one neighbours (one record changes type) that are valid TypeData."""
    out = []
    counts = np.asarray(data.counts)
    for src in np.flatnonzero(counts > 0):
        for dst in range(counts.size):
            if dst == src:
                continue
            c = counts.copy()
            c[src] -= 1
            c[dst] += 1
            try:
                out.append(fn.TypeData(c, data.y, data.g))
            except InvalidParameterError:
                continue
    return out


def test_paper_ftpl_step_puts_zero_probability_on_a_hypothesis_a_neighbour_can_select() -> None:
    """The per-record-Laplace step (paper mode) is not DP: P_D[h_3] = 0 exactly, P_D'[h_3] > 0."""
    *_, pred = _k3_threshold_types()
    data = _k3_dataset()
    x, *_ = _k3_threshold_types()
    moved = np.asarray(data.counts).copy()
    src = int(np.flatnonzero((x == 1) & (np.asarray(data.g) == 1) & (np.asarray(data.y) == 1))[0])
    moved[src] -= 1
    moved[src + 4] += 1  # same (g, y), x = 2
    neighbour = fn.TypeData(moved, data.y, data.g)
    rng = np.random.default_rng(14)
    cum = fn.cumulative_loss(data, 1, 1.0)
    cum_n = fn.cumulative_loss(neighbour, 1, 1.0)
    got = np.array([fn.ftpl_oracle(pred, data, cum, 0.2, rng=rng) for _ in range(2000)])
    got_n = np.array([fn.ftpl_oracle(pred, neighbour, cum_n, 0.2, rng=rng) for _ in range(2000)])
    assert np.sum(got == 3) == 0 and np.sum(got_n == 3) > 20


@pytest.mark.parametrize("t,lam_sum", [(1, 0.0), (2, 1.0), (3, -2.0), (6, 3.0), (6, 0.5)])
def test_corrected_ftpl_step_is_eps_dp_on_every_neighbour_exactly(t: int, lam_sum: float) -> None:
    """Exact output laws over all replace-one neighbours: max |log P_D[h] − log P_D'[h]| ≤ ε₀ (K = 3)."""
    *_, pred = _k3_threshold_types()
    data = _k3_dataset()
    eps0 = 0.7
    sens = fn.cumulative_loss_sensitivity(data.n, t - 1, lam_sum)
    law = fn.ftpl_exp_mech_probabilities(pred, data, fn.cumulative_loss(data, t - 1, lam_sum), sens, eps0)
    assert np.all(law > 0) and law.sum() == pytest.approx(1.0)
    worst = 0.0
    for nb in _neighbours(data):
        assert fn.cumulative_loss_sensitivity(nb.n, t - 1, lam_sum) == sens
        law_n = fn.ftpl_exp_mech_probabilities(pred, nb, fn.cumulative_loss(nb, t - 1, lam_sum), sens, eps0)
        worst = max(worst, float(np.max(np.abs(np.log(law) - np.log(law_n)))))
    assert worst <= eps0 + 1e-12
    if t > 1:
        assert worst > 0.05  # the neighbours do move the law (the check is not vacuous)


def test_corrected_mode_samples_the_exponential_mechanism() -> None:
    """Round-2 samples of the corrected mode follow exp(−ε₀⟨LC, h⟩/(2Δ)) (5-SE tolerance per hypothesis).

    On the old per-record-Laplace step h_3 (equal to h_2 on the data) had frequency exactly 0.
    """
    *_, pred = _k3_threshold_types()
    data = _k3_dataset()
    eps0, m, C = 2.0, 20_000, 1.0
    run = fn.private_fairnr(pred, data, T=2, m=m, C=C, mode="corrected", eps_step=eps0,
                            rng=np.random.default_rng(3))
    lam = float(run.lambdas[0])
    score = pred @ (np.asarray(data.counts) * fn.cumulative_loss(data, 1, lam))
    delta1 = (max(2.0 + abs(lam), 2.0 * abs(lam)) + abs(lam)) / data.n
    p = np.exp(-eps0 * score / (2 * delta1))
    p /= p.sum()
    freq = np.bincount(run.samples[1], minlength=4) / m
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / m) + 1e-12)
    assert freq[3] > 0 and run.scales[1] == pytest.approx(2 * delta1 / eps0)
    # Round 1: LC = 0, the law is uniform (data-independent); 4-hypothesis chi-square at level 1e-4.
    f1 = np.bincount(run.samples[0], minlength=4)
    assert stats.chisquare(f1).pvalue > 1e-4


def test_corrected_k_steps_counts_round_one() -> None:
    """The composition counts m·T learner steps (round 1 included) plus T auditor steps."""
    assert fn.corrected_k_steps(100, 10) == 1100
    assert fn.corrected_k_steps(1, 3) == 4
