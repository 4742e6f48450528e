"""Private-FairNR building blocks (spec §4–§5): oracles, FTPL, sensitivities, auditor, accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import stats

from repro.errors import InvalidParameterError
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


def test_auditor_exp_mech_probabilities() -> None:
    rng = np.random.default_rng(6)
    n, C, eps, v = 200, 5.0, 0.02, 0.004
    picks = np.array([fn.auditor_exp_mech(v, C, 0.0, eps, n, rng=rng) for _ in range(3000)])
    # Pr[+C] = 1/(1 + exp(−ε·2Cv/(2·C·2/n))).
    p = 1 / (1 + math.exp(-eps * 2 * C * v / (2 * C * 2 / n)))
    assert np.mean(picks == C) == pytest.approx(p, abs=5 * math.sqrt(p * (1 - p) / 3000))
    assert set(np.unique(picks)) <= {C, -C}
    assert fn.auditor_best_response(v, C) == C and fn.auditor_best_response(-v, C) == -C
    assert fn.auditor_best_response(v, C, slack=0.01) == 0.0


@pytest.mark.parametrize(("eps0", "k", "eps_total"), [(0.1, 50, 2.0), (0.5, 10, 3.0), (0.1, 5, 0.05), (0.02, 400, 1.0)])
def test_composition_delta_matches_dp_accounting_pld(eps0: float, k: int, eps_total: float) -> None:
    # Binary randomized response with noise parameter 2/(1 + e^ε₀) is the dominating pair of ε₀-DP.
    # (dp_accounting's PLDAccountant ignores `count` for RandomizedResponseDpEvent, so compose the PLD.)
    def pld(pessimistic: bool) -> float:
        base = pld_lib.from_randomized_response(noise_parameter=2 / (1 + math.exp(eps0)), num_buckets=2,
                                                pessimistic_estimate=pessimistic,
                                                value_discretization_interval=1e-4)
        return base.self_compose(k).get_delta_for_epsilon(eps_total)

    ours = fn.composition_delta(eps0, k, eps_total)
    assert pld(False) - 1e-9 <= ours <= pld(True) + 1e-9
    assert ours == pytest.approx(pld(True), rel=0.2, abs=1e-7)


def test_calibration_and_accounting_are_consistent() -> None:
    eps, delta, k = 1.0, 1e-5, 1090
    e0 = fn.calibrate_step_epsilon(eps, delta, k)
    assert fn.composition_delta(e0, k, eps) <= delta
    assert fn.composition_delta(e0 * 1.001, k, eps) > delta
    assert fn.pure_composition_epsilon(e0, k, delta) == pytest.approx(eps, rel=1e-6)
    # Better than basic composition, and than advanced composition with the same per-step ε.
    assert e0 > eps / k
    assert fn.heterogeneous_composition_epsilon(np.full(k, e0), delta) > eps
    assert fn.calibrate_step_epsilon(2.0, delta, 1) == 2.0


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
