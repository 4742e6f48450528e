"""Baselines of DP-FERMI's figures (spec seed-004 §8): penalty gradients, DP-SGD core, accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.learners.baselines import train_jagielski_2019, train_pf_ld, train_tran_2021a
from repro.learners.baselines._dpsgd import (
    BatchedModels,
    cell_layout,
    gap_coefficients,
    prepare_features,
    train_batched_dp_sgd,
)
from repro.learners.baselines.jagielski_2019 import eo_cost_difference
from repro.learners.baselines.pf_ld import calibrate_pf_ld, pf_ld_event
from repro.learners.logistic import sigmoid
from repro.privacy.accounting import epsilon as acc_epsilon


def _data(n: int = 400, d: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)) + 0.8 * s[:, None]
    y = (rng.random(n) < sigmoid(X[:, 0] + 0.5 * s - 0.3)).astype(int)
    return X, y, s


def _penalty(F, layout, w):
    K = layout.n_cells
    tot = 0.0
    for c in range(K):
        m_c = layout.cell == c
        m_r = layout.ref == layout.cell_ref[c]
        if m_c.any():
            tot += w[c] * abs(F[m_c].mean() - F[m_r].mean())
    return tot


@pytest.mark.parametrize("fairness", ["dp", "eo"])
def test_gap_coefficients_match_finite_differences(fairness: str) -> None:
    """dP/dF_i of P = Σ_c w_c |F̄_c − F̄_r(c)| against central differences."""
    X, y, s = _data(60)
    lay = cell_layout(s, y, fairness)
    rng = np.random.default_rng(1)
    F = rng.random(60)
    w = rng.random(lay.n_cells) + 0.5
    dP, gap = gap_coefficients(F[:, None], lay.cell, lay.ref, lay.cell_ref, w[None, :])
    h = 1e-7
    for i in range(0, 60, 7):
        Fp, Fm = F.copy(), F.copy()
        Fp[i] += h
        Fm[i] -= h
        fd = (_penalty(Fp, lay, w) - _penalty(Fm, lay, w)) / (2 * h)
        assert dP[i, 0] == pytest.approx(fd, abs=1e-6)
    # gaps are the cell mean minus its reference mean
    for c in range(lay.n_cells):
        ref = F[lay.ref == lay.cell_ref[c]].mean()
        assert gap[c, 0] == pytest.approx(F[lay.cell == c].mean() - ref)


def test_cell_layout_eo_indices() -> None:
    s = np.array([0, 1, 0, 1])
    y = np.array([0, 0, 1, 1])
    lay = cell_layout(s, y, "eo")
    assert lay.cell.tolist() == [0, 1, 2, 3] and lay.ref.tolist() == [0, 0, 1, 1]
    assert lay.cell_ref.tolist() == [0, 0, 1, 1]
    with pytest.raises(Exception, match="fairness"):
        cell_layout(s, y, "calibration")


def test_core_without_noise_penalty_or_clipping_is_minibatch_sgd() -> None:
    """z = 0, no penalty, huge clip: each step is θ ← θ − lr·Σ_B (F − y)x̃ / (nq) on the same batches."""
    X, y, s = _data(300)
    lay = cell_layout(s, y, "dp")
    w0, b0 = np.zeros((4, 2)), np.zeros(2)
    out = train_batched_dp_sgd(X, y, lay, weights=np.zeros((2, 2)), noise_multiplier=0.0, clip_norm=1e9,
                               lr=0.5, batch_size=64, steps=30, rng=np.random.default_rng(3),
                               models=BatchedModels(w0, b0))
    rng = np.random.default_rng(3)
    w, b = np.zeros(4), 0.0
    q = 64 / 300
    for _ in range(30):
        idx = np.flatnonzero(rng.random(300) < q)
        r = sigmoid(X[idx] @ w + b) - y[idx]
        w -= 0.5 * X[idx].T @ r / int(300 * q)
        b -= 0.5 * r.sum() / int(300 * q)
    np.testing.assert_allclose(out.w[:, 0], w, atol=1e-12)
    np.testing.assert_allclose(out.w[:, 1], w, atol=1e-12)
    assert out.b[0] == pytest.approx(b, abs=1e-12)


def test_core_default_labels_and_weights_equal_explicit_arrays_bytewise() -> None:
    """Issue 23: without ``labels``/``sample_weight`` the numpy reference's step uses y (n,) and no product by
    ones; the models must equal, byte for byte, a run given y repeated per model and all-ones weights. (The
    compiled engine's labels and weights are checked against this reference below.)"""
    X, y, s = _data(500)
    for fairness in ("dp", "eo"):
        lay = cell_layout(s, y, fairness)
        kw = dict(weights=np.full((3, lay.n_cells), 0.4), noise_multiplier=0.9, clip_norm=1.0, lr=0.2,
                  batch_size=80, steps=25, engine="numpy")
        short = train_batched_dp_sgd(X, y, lay, rng=np.random.default_rng(4), **kw)
        long = train_batched_dp_sgd(X, y, lay, rng=np.random.default_rng(4), **kw,
                                    labels=np.repeat(y[:, None].astype(float), 3, axis=1),
                                    sample_weight=np.ones((500, 3)))
        np.testing.assert_array_equal(short.w, long.w)
        np.testing.assert_array_equal(short.b, long.b)


def _onehot_data(n: int = 600, seed: int = 3):
    """Numeric columns and one-hot blocks, so the compiled core also gathers from the compact rows."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = np.column_stack([rng.normal(size=(n, 2)) + 0.6 * s[:, None], np.eye(3)[rng.integers(0, 3, n)]])
    y = (rng.random(n) < sigmoid(X[:, 0] + 0.5 * s - 0.3)).astype(int)
    return X, y, s


CORE_CASES = {
    "penalty, DP cells, noise": dict(fairness="dp", weights=np.array([[0.0, 0.0], [0.5, 0.5], [3.0, 3.0]]),
                                     noise_multiplier=0.8),
    "penalty, EO cells, no noise": dict(fairness="eo", weights=np.full((2, 4), 1.5), noise_multiplier=0.0),
    "labels, sample weights, warm start": dict(fairness="eo", weights=np.zeros((3, 4)), noise_multiplier=1.1,
                                               costs=True),
    "dual updates between epochs": dict(fairness="dp", weights=np.zeros((1, 2)), noise_multiplier=0.7, dual=True),
}


@pytest.mark.parametrize("name", list(CORE_CASES))
def test_compiled_core_equals_the_numpy_reference(name: str) -> None:
    """The compiled core (the default engine) against the numpy loop: the same draws (the generator ends in the
    same state, the dual's draws between epochs included), models equal to 1e-9 (summation order only), for the
    three baselines' uses: Tran's penalty grid, Jagielski's cost-sensitive warm-started rounds (on X prepared
    once), PF-LD's duals."""
    case = dict(CORE_CASES[name])
    X, y, s = _onehot_data()
    lay = cell_layout(s, y, case.pop("fairness"))
    G = case["weights"].shape[0]
    extra = {}
    if case.pop("costs", False):
        r = np.random.default_rng(9)
        extra = dict(labels=(r.random((600, G)) < 0.5).astype(float), sample_weight=r.random((600, G)) * 2,
                     models=BatchedModels(r.normal(size=(5, G)), r.normal(size=G)))
    out, gens = {}, {}
    for engine in ("numpy", "compiled"):
        gens[engine] = rng = np.random.default_rng(12)
        epochs: list[float] = []
        if case.get("dual"):
            def dual(epoch: int, models: BatchedModels, rng=rng, epochs=epochs) -> np.ndarray:
                epochs.append(float(models.w.sum()))
                return np.abs(rng.normal(size=(1, 2)))             # draws between epochs, as PF-LD's dual
            extra = dict(on_epoch=dual, steps_per_epoch=7)
        # Jagielski's rounds give the compiled engine X prepared once (prepare_features)
        Xin = prepare_features(X) if engine == "compiled" and "labels" in extra else X
        out[engine] = (train_batched_dp_sgd(Xin, y, lay, weights=case["weights"], noise_multiplier=case["noise_multiplier"],
                                            clip_norm=0.8, lr=0.3, batch_size=90, steps=40, rng=rng, engine=engine,
                                            **extra), epochs)
    (ref, ref_epochs), (got, got_epochs) = out["numpy"], out["compiled"]
    np.testing.assert_allclose(got.w, ref.w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.b, ref.b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_epochs, ref_epochs, rtol=1e-9, atol=1e-12)
    assert len(ref_epochs) == (5 if case.get("dual") else 0)
    assert gens["numpy"].bit_generator.state == gens["compiled"].bit_generator.state
    with pytest.raises(Exception, match="engine must be"):
        train_batched_dp_sgd(X, y, lay, weights=case["weights"], noise_multiplier=1.0, clip_norm=1.0, lr=0.1,
                             batch_size=90, steps=1, rng=np.random.default_rng(0), engine="torch")


def test_core_noise_has_the_stated_std() -> None:
    """One step with z = 2 minus the same step with z = 0 (same batch) is N(0, (zC)²)/m̄ per coordinate."""
    X, y, s = _data(200)
    lay = cell_layout(s, y, "dp")
    kw = dict(weights=np.zeros((500, 2)), clip_norm=0.5, lr=1.0, batch_size=100, steps=1)
    m0 = BatchedModels(np.zeros((4, 500)), np.zeros(500))
    noisy = train_batched_dp_sgd(X, y, lay, noise_multiplier=2.0, rng=np.random.default_rng(0), models=m0, **kw)
    clean = train_batched_dp_sgd(X, y, lay, noise_multiplier=0.0, rng=np.random.default_rng(0), models=m0, **kw)
    diff = np.concatenate([(noisy.w - clean.w).ravel(), noisy.b - clean.b])
    expected_std = 2.0 * 0.5 / 100
    assert np.std(diff) == pytest.approx(expected_std, rel=0.06)      # 2,500 draws: sd of the std ≈ 1.4 %
    assert abs(np.mean(diff)) < 4 * expected_std / math.sqrt(diff.size)


def test_clipping_bounds_every_per_sample_gradient() -> None:
    """With z = 0 and lr = 1 one step moves θ by at most B·C/m̄ ≤ (#batch)·C/m̄."""
    X, y, s = _data(500)
    X = 50 * X
    lay = cell_layout(s, y, "dp")
    m0 = BatchedModels(np.zeros((4, 1)), np.zeros(1))
    rng = np.random.default_rng(5)
    out = train_batched_dp_sgd(X, y, lay, weights=np.full((1, 2), 3.0), noise_multiplier=0.0, clip_norm=0.7,
                               lr=1.0, batch_size=100, steps=1, rng=rng, models=m0)
    batch = np.flatnonzero(np.random.default_rng(5).random(500) < 0.2).size
    step = math.sqrt(float(out.w[:, 0] @ out.w[:, 0]) + float(out.b[0]) ** 2)
    assert step <= batch * 0.7 / 100 + 1e-12


def test_tran_gamma_zero_is_plain_dp_sgd_and_penalty_reduces_gap() -> None:
    X, y, s = _data(2000, seed=2)
    res = train_tran_2021a(X, y, s, gammas=[0.0, 3.0], epsilon=math.inf, delta=1e-6, epochs=40,
                           batch_size=200, lr=0.2, rng=np.random.default_rng(0))
    assert res.noise_multiplier == 0.0 and res.event is None
    gaps = [abs(m.predict(X)[s == 1].mean() - m.predict(X)[s == 0].mean()) for m in res.models]
    assert gaps[1] < gaps[0] - 0.05


def test_tran_privacy_calibration() -> None:
    X, y, s = _data(1000)
    res = train_tran_2021a(X, y, s, gammas=[0.0], epsilon=1.0, delta=1e-6, epochs=2, batch_size=100,
                           rng=np.random.default_rng(0))
    assert res.steps == 20 and res.sampling_probability == pytest.approx(0.1)
    assert acc_epsilon(res.event, 1e-6) == pytest.approx(1.0, abs=0.02)


def test_pf_ld_calibration_and_dual(caplog) -> None:
    """Calibrated with the project's RDP accountant (integer orders), the ε every report computes: the run
    spends exactly ε and the dual releases their share; no "failed to converge" warnings (fractional orders)."""
    import logging

    import dp_accounting as dpa

    calibrate_pf_ld.cache_clear()
    with caplog.at_level(logging.WARNING):
        z, zd = calibrate_pf_ld(1.0, 1e-6, 0.1, 100, 10, 0.2)
    assert not [r for r in caplog.records if "converge" in r.getMessage()]
    assert zd > 0 and z > 0
    eps = acc_epsilon(pf_ld_event(z, 0.1, 100, 10, zd), 1e-6, accountant="rdp")
    assert 1.0 - 1e-4 <= eps <= 1.0
    assert acc_epsilon(pf_ld_event(z * 0.999, 0.1, 100, 10, zd), 1e-6, accountant="rdp") > 1.0  # smallest z
    dual = acc_epsilon(dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(zd), 10), 1e-6, accountant="rdp")
    assert 0.2 - 1e-4 <= dual <= 0.2
    assert calibrate_pf_ld(math.inf, 1e-6, 0.1, 100, 10) == (0.0, 0.0)
    X, y, s = _data(2000, seed=4)
    res = train_pf_ld(X, y, s, epsilon=math.inf, delta=1e-6, epochs=30, batch_size=200, lr=0.2, dual_lr=2.0,
                      rng=np.random.default_rng(0))
    assert np.all(res.multipliers > 0) and res.dual_steps == 30
    p = res.model.predict(X)
    plain = train_tran_2021a(X, y, s, gammas=[0.0], epsilon=math.inf, delta=1e-6, epochs=30, batch_size=200,
                             lr=0.2, rng=np.random.default_rng(0)).models[0].predict(X)
    assert abs(p[s == 1].mean() - p[s == 0].mean()) < abs(plain[s == 1].mean() - plain[s == 0].mean())


def test_eo_cost_difference_is_the_lagrangian_derivative() -> None:
    """c¹_i − c⁰_i = ∂/∂h_i [err(h) + Σ_c μ_c γ_c(h)] for a soft h (linear in h)."""
    X, y, s = _data(50)
    lay = cell_layout(s, y, "eo")
    counts_c = np.bincount(lay.cell, minlength=4).astype(float)
    counts_r = np.bincount(lay.ref, minlength=2).astype(float)
    mu = np.array([[0.3, -0.2, 1.0, 0.5]])
    diff = eo_cost_difference(y, lay.cell, lay.ref, lay.cell_ref, mu, counts_c, counts_r)

    def lagr(h):
        err = np.mean(h * (1 - y) + (1 - h) * y)
        g = [h[lay.cell == c].mean() - h[lay.ref == lay.cell_ref[c]].mean() for c in range(4)]
        return err + float(mu[0] @ np.array(g))

    h = np.full(50, 0.5)
    for i in range(50):
        e = np.zeros(50)
        e[i] = 1e-3
        assert diff[i, 0] == pytest.approx((lagr(h + e) - lagr(h - e)) / 2e-3, abs=1e-9)


def test_jagielski_bound_zero_is_unconstrained_and_bounds_reduce_eo() -> None:
    X, y, s = _data(3000, seed=6)
    res = train_jagielski_2019(X, y, s, bounds=[0.0, 20.0], epsilon=math.inf, delta=1e-6, rounds=6,
                               learner_epochs=4, batch_size=300, lr=0.3, rng=np.random.default_rng(0))
    P = res.predict_proba(X)
    assert P.shape == (3000, 2) and np.all((P >= 0) & (P <= 1))
    from repro.fairness.metrics import eq_odds_gap

    assert eq_odds_gap(P[:, 1], s, y) < eq_odds_gap(P[:, 0], s, y)
    assert res.event is None


def test_jagielski_privacy_accounting() -> None:
    X, y, s = _data(1000)
    res = train_jagielski_2019(X, y, s, bounds=[1.0], epsilon=2.0, delta=1e-6, rounds=4, learner_epochs=1,
                               batch_size=100, rng=np.random.default_rng(0))
    assert res.laplace_epsilon_per_round == pytest.approx(2.0 / 8)
    from repro.privacy.accounting import dp_sgd_event

    assert acc_epsilon(dp_sgd_event(res.noise_multiplier, 0.1, res.steps), 1e-6) == pytest.approx(1.0, abs=0.02)
    total = acc_epsilon(res.event, 1e-6)
    assert total <= 2.0 + 0.02


class _LaplaceTap:
    """Passes every call to a seeded generator and keeps each Laplace call (loc, scale, draws); with
    ``zero`` it returns zeros instead of the draws (after drawing them, so the stream is unchanged)."""

    def __init__(self, seed: int, zero: bool = False):
        self._rng, self.zero, self.calls = np.random.default_rng(seed), zero, []

    def __getattr__(self, name):
        return getattr(self._rng, name)

    def laplace(self, loc=0.0, scale=1.0, size=None):
        draw = self._rng.laplace(loc, scale, size=size)
        self.calls.append((loc, scale, draw))
        return np.zeros_like(draw) if self.zero else draw


def test_jagielski_auditor_laplace_noise_scale() -> None:
    """D5: each round the K = 2k cell sums of the hard predictions (ℓ1 sensitivity 2) get Lap(2/ε_round),
    ε_round = ε/(2T), so γ_c gets noise of scale 2/(ε_round·n_c). Checked: one Laplace call per round with that
    scale and shape (K, G); E|draw| = scale over 40 rounds × 10 cells × 5 bounds = 2000 draws to ±8 % (|Lap(b)|
    is Exp(b): relative SE 1/√2000 = 2.2 %, ≈ 3.6 SE), so a scale off by ≥ 10 % fails; and the noise reaches
    the game (zeroing the same draws changes the iterates)."""
    rng = np.random.default_rng(3)
    n, k, T, eps = 300, 5, 40, 4.0
    s = rng.integers(0, k, n)
    X = rng.normal(size=(n, 3)) + 0.3 * s[:, None]
    y = (rng.random(n) < sigmoid(X[:, 0] - 0.2 * s)).astype(int)
    bounds = [0.0, 1.0, 2.0, 5.0, 10.0]
    kw = dict(bounds=bounds, epsilon=eps, delta=1e-5, rounds=T, learner_epochs=1, batch_size=n, lr=0.5)
    tap = _LaplaceTap(0)
    res = train_jagielski_2019(X, y, s, rng=tap, **kw)
    eps_round = eps / (2 * T)
    scale = 2 / eps_round                                      # = 40
    assert res.laplace_epsilon_per_round == pytest.approx(eps_round, rel=1e-12)
    assert len(tap.calls) == T
    for loc, b, draw in tap.calls:
        assert loc == 0.0 and b == pytest.approx(scale, rel=1e-12) and draw.shape == (2 * k, len(bounds))
    draws = np.concatenate([c[2].ravel() for c in tap.calls])
    assert draws.size == 2000
    assert np.mean(np.abs(draws)) == pytest.approx(scale, rel=0.08)
    # the same stream with the Laplace draws zeroed: the auditor's λ, hence the learner's iterates, change
    quiet = train_jagielski_2019(X, y, s, rng=_LaplaceTap(0, zero=True), **kw)
    assert any(not np.array_equal(a.w, b.w) for a, b in zip(res.iterates, quiet.iterates, strict=True))
