"""The DP-FERMI engine (spec seed-004 §2–§5, seed-003 §3.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.learners.dp_fermi import (
    REFERENCE,
    STRICT_ALL_FEATURES,
    STRICT_SENSITIVE,
    DPFermiConfig,
    _psi_parts,
    _psi_value,
    ermi,
    train_dp_fermi,
)
from repro.learners.logistic import sigmoid, train_minibatch_logistic
from repro.privacy.dpfermi_noise import group_floor, sensitive_only_noise, thesis_all_feature_noise


def _data(n=1500, d=4, seed=0):
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.35).astype(int)
    X = rng.normal(size=(n, d)) + s[:, None] * 0.8
    y = (X @ np.linspace(1, -0.5, d) + rng.logistic(size=n) > 0.3).astype(float)
    return X, y, s


def test_lambda_zero_without_noise_is_plain_minibatch_logistic_regression() -> None:
    X, y, s = _data()
    cfg = REFERENCE.with_(lam=0.0, sigma_theta=0.0, sigma_w=0.0, w_init="zeros", epochs=5, batch_size=128,
                          theta_clip="none", lr_theta=0.1)
    res = train_dp_fermi(X, y, s, cfg, rng=np.random.default_rng(5))
    plain = train_minibatch_logistic(X, y, lr=0.1, batch_size=128, epochs=5, rng=np.random.default_rng(5))
    np.testing.assert_allclose(res.model.w, plain.w, rtol=1e-12, atol=1e-14)
    assert res.model.b == pytest.approx(plain.b, rel=1e-12)
    # batch clipping at a huge L is inactive, so it is the same run again
    res2 = train_dp_fermi(X, y, s, cfg.with_(theta_clip="batch", clip_norm=1e9), rng=np.random.default_rng(5))
    np.testing.assert_array_equal(res2.model.w, res.model.w)


@pytest.mark.parametrize("form", ["full", "code_1x1"])
def test_psi_gradients_match_finite_differences(form: str) -> None:
    rng = np.random.default_rng(1)
    m, d = 40, 3
    X = rng.normal(size=(m, d))
    s = rng.integers(0, 2, m)
    th = rng.normal(size=d)
    inv = 1 / np.sqrt(np.array([0.4, 0.6]))
    W = rng.normal(size=(1, 1) if form == "code_1x1" else (2, 2))
    F = sigmoid(X @ th)
    dz, gW = _psi_parts(F, s, W, inv, form, 1)
    grad_theta = X.T @ dz / m
    h = 1e-6
    for j in range(d):
        e = np.zeros(d)
        e[j] = h
        fd = (_psi_value(sigmoid(X @ (th + e)), s, W, inv, form, 1)
              - _psi_value(sigmoid(X @ (th - e)), s, W, inv, form, 1)) / (2 * h)
        assert grad_theta[j] == pytest.approx(fd, rel=1e-5, abs=1e-9)
    gWm = gW.mean(axis=0)
    for idx in np.ndindex(W.shape):
        E = np.zeros_like(W)
        E[idx] = h
        fd = (_psi_value(F, s, W + E, inv, form, 1) - _psi_value(F, s, W - E, inv, form, 1)) / (2 * h)
        assert gWm[idx] == pytest.approx(fd, rel=1e-5, abs=1e-9)


def test_full_form_maximum_over_w_is_ermi() -> None:
    rng = np.random.default_rng(2)
    m = 500
    p = rng.random(m)
    s = rng.integers(0, 2, m)
    pr = np.bincount(s) / m
    inv = 1 / np.sqrt(pr)
    f = np.stack([1 - p, p], axis=1)
    joint = f.T @ np.eye(2)[s] / m                     # (label j, group r)
    W_star = (joint / f.mean(axis=0)[:, None]).T * inv[:, None]   # W*_{r,j} = p(j,r)/(√p_r p_j)
    val = _psi_value(p, s, W_star, inv, "full", 0)
    assert val == pytest.approx(ermi(p, s), rel=1e-10)
    for _ in range(50):   # W* is the maximizer (strong concavity)
        assert _psi_value(p, s, W_star + rng.normal(scale=0.1, size=(2, 2)), inv, "full", 0) <= val + 1e-12


def test_gradient_ascent_on_w_reaches_the_ermi_and_zero_under_independence() -> None:
    # spec §10: ERMI = max_W ψ̄ also by gradient ascent (strongly concave in W); ERMI = 0 when Ŷ ⊥ S
    from repro.learners.dp_fermi import _w_grad_sum

    rng = np.random.default_rng(8)
    m, k = 400, 3
    s = rng.integers(0, k, m)
    inv = 1 / np.sqrt(np.bincount(s, minlength=k) / m)
    for p, independent in ((rng.beta(2, 2, m) * (0.4 + 0.2 * s), False),
                           (np.full(m, 0.3), True)):
        f = np.stack([1 - p, p], axis=1)[:, None, :]
        W = np.zeros((1, k, 2))
        for _ in range(3000):
            W = W + 0.2 * _w_grad_sum(np.ones((m, 1)), f, s, W, inv, "full", 0) / m
        ascent = _psi_value(p, s, W[0], inv, "full", 0)
        assert ascent == pytest.approx(ermi(p, s), abs=1e-9)
        assert (ermi(p, s) == pytest.approx(0.0, abs=1e-12)) is independent


def test_code_1x1_keeps_one_ermi_term() -> None:
    # max_w ψ_B = π r0² / (π r0 + (1−π) r1) − 1 for the surviving group (spec seed-004 §4.3)
    p = np.r_[np.full(30, 0.2), np.full(70, 0.6)]
    s = np.r_[np.zeros(30, int), np.ones(70, int)]
    inv = 1 / np.sqrt(np.array([0.3, 0.7]))
    pi, r0, r1 = 0.3, 0.2, 0.6
    w_star = pi * r0 / (math.sqrt(pi) * (pi * r0 + (1 - pi) * r1))
    expected = pi * r0**2 / (pi * r0 + (1 - pi) * r1) - 1
    assert _psi_value(p, s, np.array([[w_star]]), inv, "code_1x1", 0) == pytest.approx(expected)


def test_noise_formulas() -> None:
    n, T, rho, eps = 33_916, 1700, 0.3246, 3.0
    st, sw = thesis_all_feature_noise(n, T, rho, eps, 1e-5)
    ln = math.log(1e5)
    assert sw == pytest.approx(math.sqrt(32 * T * ln * (25 + 1 / rho)) / (eps * n))
    assert st == pytest.approx(math.sqrt(64 * 25 * 25 * ln * T / rho + 32 * 625 * 25 * 4 * ln * T) / (eps * n))
    # seed-004 §5 worked table (sensitive-only, δ = 1/n², Adult, T = 6,800, ρ = 0.325): σ_W = 0.026 at ε = 3
    st2, sw2 = sensitive_only_noise(33_916, 6800, 0.325, 3.0, 1 / 33_916**2)
    assert sw2 == pytest.approx(0.026, abs=5e-4) and st2 == pytest.approx(0.65, abs=5e-3)
    assert group_floor(np.array([0, 0, 0, 1, 1])) == pytest.approx(1 / 5)


def test_strict_mode_is_dp_sgd_and_deterministic() -> None:
    X, y, s = _data(n=2000)
    cfg = STRICT_ALL_FEATURES.with_(lam=1.0, noise_multiplier=1.1, epochs=3, batch_size=200)
    a = train_dp_fermi(X, y, s, cfg, rng=np.random.default_rng(3))
    b = train_dp_fermi(X, y, s, cfg, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a.model.w, b.model.w)
    assert a.steps == 30 and a.sampling_probability == pytest.approx(0.1)
    assert a.event is not None and a.W[0].shape == (2, 2)


def test_regularizer_reduces_the_parity_gap() -> None:
    X, y, s = _data(n=4000, seed=4)
    base = REFERENCE.with_(ermi_form="full", w_init="zeros", epochs=40, batch_size=256, lr_theta=0.2, lr_w=0.2,
                           theta_clip="none")
    gaps = []
    for lam in (0.0, 3.0):
        res = train_dp_fermi(X, y, s, base.with_(lam=lam), rng=np.random.default_rng(0))
        pred = res.model.predict(X)
        gaps.append(abs(pred[s == 0].mean() - pred[s == 1].mean()))
    assert gaps[1] < 0.6 * gaps[0]


def test_bad_switch_is_reported() -> None:
    with pytest.raises(InvalidParameterError, match="ermi_form"):
        DPFermiConfig(ermi_form="nope")
    with pytest.raises(InvalidParameterError, match="lambda"):
        DPFermiConfig(lam=-1)


def _closed_form_inputs(rng: np.random.Generator, form: str, m: int, G: int, k: int = 3):
    """(F, f = (1 − F, F), s, 1/√p̂ of 3 groups, W) for the closed-form helpers: m samples, G models."""
    F = rng.random((m, G))
    s = rng.integers(0, k, m)
    W = rng.normal(size=(G, 1, 1) if form == "code_1x1" else (G, k, 2))
    return F, np.stack([1 - F, F], axis=2), s, 1 / np.sqrt(np.array([0.2, 0.3, 0.5])), W


@pytest.mark.parametrize("form", ["full", "code_1x1"])
def test_batched_closed_forms_match_the_per_sample_oracle(form: str) -> None:
    # the engine's (m, G) closed forms equal G separate explicit per-sample computations
    from repro.learners.dp_fermi import _psi_dz, _w_grad_sqnorm, _w_grad_sum

    rng = np.random.default_rng(6)
    m, G = 60, 3
    F, f, s, inv, W = _closed_form_inputs(rng, form, m, G)
    a = rng.random((m, G))
    ns, se = _psi_dz(f, s, W, inv, form, 1)
    sums = _w_grad_sum(a, f, s, W, inv, form, 1)
    sq = _w_grad_sqnorm(f, s, W, inv, form, 1)
    for g in range(G):
        dz, gW = _psi_parts(F[:, g], s, W[g], inv, form, 1)
        np.testing.assert_allclose(ns[:, g, 0] + se[:, g, 0], dz, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(sums[g], np.tensordot(a[:, g], gW, axes=(0, 0)), rtol=1e-12)
        np.testing.assert_allclose(sq[:, g], np.sum(gW**2, axis=(1, 2)), rtol=1e-12)


@pytest.mark.parametrize("form", ["full", "code_1x1"])
def test_attribute_flips_brute_force(form: str) -> None:
    # spec §3/§5: only the second term of each gradient depends on s_i; flipping one s_i moves the
    # batch-mean θ-gradient of ψ by at most √(8/ρ)·D·L/m (Theorem 3.3's Δ_θ) and the W-gradient sum by
    # at most the engine's Δ_W (≤ √(8/ρ)); the bound on Σ∇_W is attained up to ‖f‖ ≤ 1.
    from repro.learners.dp_fermi import _psi_dz, _w_grad_sum, _w_sensitivity

    rng = np.random.default_rng(11)
    m, d, k = 40, 3, 3
    X = rng.uniform(-1, 1, size=(m, d))
    Xt = np.c_[X, np.ones(m)]
    s = np.r_[np.zeros(8, int), np.ones(12, int), np.full(20, 2)]
    p = np.bincount(s, minlength=k) / m
    inv = 1 / np.sqrt(p)
    rho = p.min()
    D = 1.5
    W = rng.uniform(-D, D, size=(1, 1, 1) if form == "code_1x1" else (1, k, 2))
    th = rng.normal(size=d + 1) * 3
    F = sigmoid(Xt @ th)[:, None]
    F = np.stack([1 - F, F], axis=2)
    L = np.sqrt((Xt**2).sum(1)).max() / 4          # Lipschitz constant of F in θ on this batch
    ns0, se0 = _psi_dz(F, s, W, inv, form, 0)
    g0 = Xt.T @ (ns0 + se0)[:, 0, 0] / m
    W0 = _w_grad_sum(np.ones((m, 1)), F, s, W, inv, form, 0)
    worst_theta = worst_w = 0.0
    for i in range(m):
        for r in range(k):
            if r == s[i]:
                continue
            s2 = s.copy()
            s2[i] = r
            ns1, se1 = _psi_dz(F, s2, W, inv, form, 0)
            np.testing.assert_array_equal(ns1, ns0)          # the non-sensitive part never moves
            worst_theta = max(worst_theta, np.linalg.norm(Xt.T @ (ns1 + se1)[:, 0, 0] / m - g0))
            worst_w = max(worst_w, np.linalg.norm(_w_grad_sum(np.ones((m, 1)), F, s2, W, inv, form, 0) - W0))
    assert worst_theta <= math.sqrt(8 / rho) * D * L / m
    assert worst_w <= _w_sensitivity(inv, form, 0) + 1e-12 <= math.sqrt(8 / rho) + 1e-12
    assert worst_w > 0.3 * _w_sensitivity(inv, form, 0)


def test_batched_training_equals_separate_runs() -> None:
    from repro.learners.dp_fermi import train_dp_fermi_batch

    X, y, s = _data(n=1200)
    for base in (REFERENCE.with_(epochs=2, batch_size=200, sigma_theta=0.3, sigma_w=0.1),
                 STRICT_SENSITIVE.with_(epochs=2, batch_size=200, fairness="eo"),
                 STRICT_ALL_FEATURES.with_(epochs=2, batch_size=200)):
        # per-model λ, noise, clip L, radius D and step sizes (the tuning grid trains them together)
        cfgs = [base.with_(lam=lam, noise_multiplier=z if base.per_sample_privacy else 0.0, clip_norm=c,
                           w_radius=r, lr_theta=lt, lr_w=lw)
                for lam, z, c, r, lt, lw in ((0.0, 0.7, 0.05, 1.0, 0.01, 0.01), (0.5, 1.0, 1.0, 0.2, 0.005, 0.02),
                                             (2.0, 3.0, 5.0, 5.0, 0.02, 0.01))]
        together = train_dp_fermi_batch(X, y, s, cfgs, rng=np.random.default_rng(4))
        for c, res in zip(cfgs, together, strict=True):
            alone = train_dp_fermi(X, y, s, c, rng=np.random.default_rng(4))
            np.testing.assert_allclose(res.model.w, alone.model.w, rtol=1e-10, atol=1e-12)
            for w_t, w_a in zip(res.W, alone.W, strict=True):
                np.testing.assert_allclose(w_t, w_a, rtol=1e-10, atol=1e-12)
            assert res.config == c
        # the clip acts per model: a clip that fires changes the result
        assert not np.allclose(together[1].model.w, train_dp_fermi(
            X, y, s, cfgs[1].with_(clip_norm=1e-3, w_radius=5.0), rng=np.random.default_rng(4)).model.w)
    with pytest.raises(InvalidParameterError, match="may differ only in"):
        train_dp_fermi_batch(X, y, s, [REFERENCE, REFERENCE.with_(epochs=3)], rng=np.random.default_rng(0))


def test_a_prepared_plan_trains_each_run_as_a_fresh_call() -> None:
    """``prepare_dp_fermi`` checks once, ``plan.train`` then runs as ``train_dp_fermi_batch`` does: the same
    bytes and iterates for runs in turn from one generator, which ends where the calls leave theirs."""
    from repro.learners.dp_fermi import prepare_dp_fermi, train_dp_fermi_batch

    X, y, s = _data(n=300)
    for base in (REFERENCE.with_(epochs=1, batch_size=64, sigma_theta=0.3, sigma_w=0.1, return_iterate="random"),
                 STRICT_SENSITIVE.with_(epochs=2, batch_size=64, fairness="eo", w_init="normal"),
                 STRICT_ALL_FEATURES.with_(epochs=2, batch_size=64, noise_multiplier=0.8)):
        cfgs = [base.with_(lam=0.0), base.with_(lam=1.5)]
        plan, a, b = prepare_dp_fermi(X, y, s, cfgs), np.random.default_rng(7), np.random.default_rng(7)
        for _ in range(3):
            seen_a, seen_b = [], []
            got = plan.train(rng=a, on_step=lambda t, Th, bb, Ws, out=seen_a: out.append(Th.tobytes()))
            want = train_dp_fermi_batch(X, y, s, cfgs, rng=b,
                                        on_step=lambda t, Th, bb, Ws, out=seen_b: out.append(Th.tobytes()))
            assert seen_a == seen_b and len(seen_a) == want[0].steps
            for g, w in zip(got, want, strict=True):
                assert g.model.w.tobytes() == w.model.w.tobytes() and g.model.b == w.model.b
                assert all(u.tobytes() == v.tobytes() for u, v in zip(g.W, w.W, strict=True))
                assert (g.config, g.steps, g.sampling_probability) == (w.config, w.steps, w.sampling_probability)
        assert a.random() == b.random()
    with pytest.raises(InvalidParameterError, match="may differ only in"):
        prepare_dp_fermi(X, y, s, [REFERENCE, REFERENCE.with_(epochs=3)])


def test_sensitive_mode_lambda_zero_never_sees_s() -> None:
    # strict (sensitive attribute only): with λ = 0 no s-dependent term reaches θ, so the released
    # model is the same for any attribute vector, noise or not; with λ > 0 it is not.
    X, y, s = _data(n=1000)
    s2 = np.random.default_rng(9).permutation(s)
    cfg = STRICT_SENSITIVE.with_(epochs=2, batch_size=100, noise_multiplier=2.0)
    for lam, same in ((0.0, True), (1.0, False)):
        a = train_dp_fermi(X, y, s, cfg.with_(lam=lam), rng=np.random.default_rng(1))
        b = train_dp_fermi(X, y, s2, cfg.with_(lam=lam), rng=np.random.default_rng(1))
        assert np.array_equal(a.model.w, b.model.w) is same
    assert a.event is not None


@pytest.mark.parametrize("weighting", ["sum", "label_prior"])
def test_eo_one_full_batch_step_is_the_gradient_of_the_weighted_objective(weighting: str) -> None:
    # one full-batch, noiseless, unclipped step: θ₁ = θ₀ − η ∇_θ[BCE + λ Σ_y w_y ψ̄_y(θ, W_y)], with
    # w_y = 1 (the authors' code, each part a mean over its label) or w_y = m_y/m (eq. (5)'s p̂_Y weights)
    from repro.learners.logistic import torch_linear_init

    X, y, s = _data(n=300, d=3)
    lam, eta = 0.8, 0.05
    cfg = REFERENCE.with_(ermi_form="full", fairness="eo", eo_weighting=weighting, theta_clip="none",
                          lam=lam, lr_theta=eta, epochs=1, batch_size=300)
    res = train_dp_fermi(X, y, s, cfg, rng=np.random.default_rng(7))
    rng = np.random.default_rng(7)
    w0, b0 = torch_linear_init(3, rng=rng)
    Wy = [rng.standard_normal((2, 2)) for _ in (0, 1)]
    Xt = np.c_[X, np.ones(len(y))]
    th0 = np.r_[w0, b0]

    def objective(th):
        F = sigmoid(Xt @ th)
        bce = -np.mean(y * np.log(F) + (1 - y) * np.log(1 - F))
        reg = 0.0
        for lab in (0, 1):
            sel = y == lab
            inv = 1 / np.sqrt(np.bincount(s[sel], minlength=2) / sel.sum())
            weight = 1.0 if weighting == "sum" else sel.mean()
            reg += weight * (_psi_value(F[sel], s[sel], Wy[lab], inv, "full", 0) + 1)
        return bce + lam * reg

    h = 1e-6
    grad = np.array([(objective(th0 + h * e) - objective(th0 - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(np.r_[res.model.w, res.model.b], th0 - eta * grad, rtol=0, atol=1e-8)


def test_per_sample_joint_gradients_are_clipped() -> None:
    # With a huge learning rate on W only, one strict step moves W by at most lr·(Σ clipped)/denom ≤ lr·C·m/denom
    X, y, s = _data(n=500)
    cfg = STRICT_ALL_FEATURES.with_(lam=1.0, noise_multiplier=0.0, epochs=1, batch_size=500, lr_theta=1e-12, lr_w=1.0,
                       clip_norm=0.01, w_radius=1e6)
    res = train_dp_fermi(X, y, s, cfg, rng=np.random.default_rng(0))
    assert np.linalg.norm(res.W[0]) <= 0.01 * 500 / 500 + 1e-9


def _multiclass_data(n=900, d=3, n_cls=3, k=3, seed=12):
    rng = np.random.default_rng(seed)
    s = rng.choice(k, size=n, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(n, d)) + 0.9 * s[:, None]
    logits = X @ rng.normal(size=(d, n_cls)) + 0.5 * np.eye(k, n_cls)[s]
    P = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    y = np.array([rng.choice(n_cls, p=p) for p in P])
    return X, y, s


def test_multiclass_inner_maximum_is_the_ermi() -> None:
    # max_W ψ̄ = ERMI for n_cls = 3 classes, attained at W*_{r,j} = p̂(j,r)/(√p̂(r) p̂(j)) (spec §3)
    rng = np.random.default_rng(3)
    n, n_cls, k = 500, 3, 4
    P = rng.dirichlet(np.ones(n_cls), size=n)
    s = rng.integers(0, k, n)
    pr = np.bincount(s, minlength=k) / n
    inv = 1 / np.sqrt(pr)
    joint = np.eye(k)[s].T @ P / n                  # (k, n_cls): p̂(j, r) as [r, j]
    W_star = joint / (np.sqrt(pr)[:, None] * P.mean(0)[None, :])
    val = _psi_value(P, s, W_star, inv, "full", 0)
    assert val == pytest.approx(ermi(P, s), rel=1e-12)
    for _ in range(30):
        assert _psi_value(P, s, W_star + rng.normal(scale=0.1, size=(k, n_cls)), inv, "full", 0) <= val + 1e-12


def test_softmax_head_one_full_batch_step_is_the_gradient() -> None:
    # θ₁ = θ₀ − η ∇_θ[CE + λψ̄] and W₁ = W₀ + η_W λ ∇_W ψ̄ for the softmax head (finite differences)
    X, y, s = _multiclass_data()
    n, d = X.shape
    n_cls, k = 3, 3
    lam, eta, eta_w = 0.7, 0.05, 0.1
    cfg = REFERENCE.with_(head="softmax", ermi_form="full", theta_clip="none", lam=lam, lr_theta=eta,
                          lr_w=eta_w, epochs=1, batch_size=n)
    res = train_dp_fermi(X, y, s, cfg, rng=np.random.default_rng(2))
    rng = np.random.default_rng(2)
    bound = 1 / math.sqrt(d)
    Th0 = np.vstack([rng.uniform(-bound, bound, size=(n_cls, d)).T, rng.uniform(-bound, bound, size=n_cls)])
    W0 = rng.standard_normal((k, n_cls))
    Xt = np.c_[X, np.ones(n)]
    inv = 1 / np.sqrt(np.bincount(s) / n)

    def probs(th):
        Z = Xt @ th.reshape(d + 1, n_cls)
        E = np.exp(Z - Z.max(1, keepdims=True))
        return E / E.sum(1, keepdims=True)

    def objective(th, W):
        P = probs(th)
        return -np.mean(np.log(P[np.arange(n), y])) + lam * _psi_value(P, s, W, inv, "full", 0)

    h = 1e-6
    th0 = Th0.ravel()
    grad = np.array([(objective(th0 + h * e, W0) - objective(th0 - h * e, W0)) / (2 * h)
                     for e in np.eye(th0.size)])
    np.testing.assert_allclose(np.vstack([res.model.w, res.model.b]).ravel(), th0 - eta * grad, atol=1e-8)
    gW = np.array([(objective(th0, W0 + h * E.reshape(k, n_cls)) - objective(th0, W0 - h * E.reshape(k, n_cls)))
                   / (2 * h) for E in np.eye(k * n_cls)]).reshape(k, n_cls)
    np.testing.assert_allclose(res.W[0], W0 + eta_w * gW, atol=1e-8)


def test_softmax_head_trains_and_the_regularizer_lowers_the_ermi() -> None:
    from repro.learners.dp_fermi import train_dp_fermi_batch

    X, y, s = _multiclass_data(n=3000)
    base = STRICT_SENSITIVE.with_(head="softmax", epochs=60, batch_size=256, lr_theta=0.2, lr_w=0.2)
    out = train_dp_fermi_batch(X, y, s, [base.with_(lam=0.0), base.with_(lam=4.0)], rng=np.random.default_rng(0))
    acc = [(r.model.predict(X) == y).mean() for r in out]
    ermis = [ermi(r.model.predict_proba(X), s) for r in out]
    assert acc[0] > 0.5                      # 3 classes: chance is ≈ 0.4 here
    assert ermis[1] < 0.5 * ermis[0]
    with pytest.raises(InvalidParameterError, match="softmax"):
        train_dp_fermi(X, y, s, REFERENCE, rng=np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="code_1x1"):
        DPFermiConfig(head="softmax", ermi_form="code_1x1")


@pytest.mark.parametrize("q", [0.03, 0.3])
def test_attribute_substitution_is_dominated_by_add_remove_with_the_shift(q: float) -> None:
    # the accounting of theta_clip="sensitive": changing one s_i moves that record's contribution from a to b
    # (‖a‖, ‖b‖ ≤ C, ‖a − b‖ ≤ 2C) while the Poisson batch is the same, i.e. the pair
    # (1−q)N(0) + qN(a) vs (1−q)N(0) + qN(b). Its hockey-stick divergence never exceeds that of the add/remove
    # pair with shift ‖a − b‖, (1−q)N(0) + qN(‖a − b‖) vs N(0) (both directions), which the DP-SGD event
    # accounts. Checked numerically on a fine grid (worst case a = −b, σ = 1).
    from scipy.stats import norm

    x = np.linspace(-40, 40, 160_001)
    dx = x[1] - x[0]
    for c in (0.05, 0.3, 1.0, 2.5):
        sub_p = (1 - q) * norm.pdf(x) + q * norm.pdf(x - c)
        sub_q = (1 - q) * norm.pdf(x) + q * norm.pdf(x + c)
        add = (1 - q) * norm.pdf(x) + q * norm.pdf(x - 2 * c)
        base = norm.pdf(x)
        for eps in np.linspace(0, 6, 13):
            a = math.exp(eps)
            h_sub = np.sum(np.maximum(sub_p - a * sub_q, 0)) * dx
            h_ar = max(np.sum(np.maximum(add - a * base, 0)), np.sum(np.maximum(base - a * add, 0))) * dx
            assert h_sub <= h_ar + 1e-9
        assert np.sum(np.abs(sub_p - sub_q)) * dx > 1e-3      # the two laws do differ (not vacuous)


def _substitution_pair_epsilon(c: float, shift: float, sigma: float, q: float, steps: int, delta: float) -> float:
    """PLD ε (dp_accounting, pessimistic) of T compositions of the true strict-``sensitive`` step under a
    change of s_i: (1−q)N(0, σ²) + qN(c + shift/2, σ²) vs (1−q)N(0, σ²) + qN(c − shift/2, σ²), 1-D,
    with c the record's unclipped non-sensitive part. Discretized on a 2e-3·σ grid over ±12σ."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
    from scipy.stats import norm

    mu_p, mu_q = (c + shift / 2) / sigma, (c - shift / 2) / sigma
    edges = np.arange(min(0.0, mu_q) - 12, max(0.0, mu_p) + 12, 2e-3)

    def log_pmf(mu: float) -> dict[int, float]:
        mass = np.diff((1 - q) * norm.cdf(edges) + q * norm.cdf(edges - mu))
        return {i: math.log(v) for i, v in enumerate(mass) if v > 0}

    pair = pld_lib.from_two_probability_mass_functions(log_pmf(mu_p), log_pmf(mu_q),
                                                       value_discretization_interval=1e-3)
    return float(pair.self_compose(steps).get_epsilon_for_delta(delta))


def test_strict_sensitive_accounting_covers_a_large_unclipped_part() -> None:
    # Issue 14, defect 1. The old accounting (add/remove subsampled Gaussian at q, kept here as the test-only
    # configuration `old_eps`) is exceeded by the true pair once the record's unclipped part c is a few σ;
    # the accounting of theta_clip="sensitive" (exact strict accountant, DPFermiResult.event; issue 21) holds
    # for every c, and is below the q = 1 bound used between the two issues.
    from repro.privacy.accounting import calibrate_noise_multiplier, dp_sgd_epsilon, dp_sgd_event
    from repro.privacy.accounting import epsilon as accountant_epsilon
    from repro.privacy.strict_accountant import StrictEvent

    q, steps, delta, target = 0.05, 100, 1e-5, 2.0
    z_old = calibrate_noise_multiplier(target, delta, q, steps)
    old_eps = dp_sgd_epsilon(z_old, q, steps, delta)
    assert old_eps <= target
    assert _substitution_pair_epsilon(0.0, 1.0, z_old, q, steps, delta) <= old_eps + 0.05   # c = 0: fine
    assert _substitution_pair_epsilon(10 * z_old, 1.0, z_old, q, steps, delta) > 2 * old_eps  # c = 10σ: violated

    import repro.learners.dp_fermi as dp

    cfg = dp.STRICT_SENSITIVE
    z_new = dp.calibrate_privacy(cfg, target, delta, q, steps)
    assert z_old < z_new < calibrate_noise_multiplier(target, delta, 1.0, steps)   # between old and q = 1
    res = dp.DPFermiResult(model=None, W=(), steps=steps, sampling_probability=q,  # type: ignore[arg-type]
                           config=cfg.with_(noise_multiplier=z_new))
    assert res.event == StrictEvent(z_new, q, steps)
    assert dp.privacy_event(dp.STRICT_ALL_FEATURES, z_new, q, steps) == dp_sgd_event(z_new, q, steps)
    new_eps = accountant_epsilon(res.event, delta)
    assert new_eps == pytest.approx(target, rel=1e-4) and new_eps <= target + 1e-6
    for c in (0.0, 1.0, 3.0, 10.0, 30.0):
        assert _substitution_pair_epsilon(c * z_new, 1.0, z_new, q, steps, delta) <= new_eps + 0.01


@pytest.mark.parametrize("mode", ["strict-all", "strict"])
def test_strict_modes_theta_noise_std_end_to_end(mode: str) -> None:
    # Issue 14, defect 4. A feature column of zeros gets θ gradient 0 + N(0, std²) per step, divided by the
    # expected batch size: std = z·C (strict-all, joint clipping) or λ·√2·z·2C_s (strict, sensitive part only).
    # The same run at z = 0 (common random numbers: same init and batches) gives the noiseless path, so the
    # 300 zero columns' differences are draws of N(0, T·(lr_θ·std/E[B])²); sample std checked to ±15 %
    # (≈ 3.7 standard errors).
    from repro.learners.dp_fermi import train_dp_fermi_batch

    X, y, s = _data(n=1000, d=2, seed=7)
    X = np.hstack([X, np.zeros((X.shape[0], 300))])
    z, lam = 1.3, 0.8
    engine = STRICT_ALL_FEATURES if mode == "strict-all" else STRICT_SENSITIVE
    cfg = engine.with_(lam=lam, epochs=2, batch_size=100, lr_theta=0.5)
    noisy, clean = train_dp_fermi_batch(X, y, s, [cfg.with_(noise_multiplier=z), cfg.with_(noise_multiplier=0.0)],
                                        rng=np.random.default_rng(11))
    moved = noisy.model.w[2:] - clean.model.w[2:]
    std = z * cfg.clip_norm if mode == "strict-all" else lam * math.sqrt(2) * z * 2 * cfg.clip_norm
    expected = cfg.lr_theta * std * math.sqrt(noisy.steps) / int(1000 * noisy.sampling_probability)
    assert noisy.steps == 20
    assert np.std(moved) == pytest.approx(expected, rel=0.15)


@pytest.mark.parametrize("form", ["full", "code_1x1"])
def test_step_short_paths_give_the_same_bytes(form: str) -> None:
    # issue 23: the training loop passes P(Ŷ=1) alone as (m, G, 1) for the one-term ERMI, ``None`` for an
    # all-ones weight, and a per-model float radius array; each shortcut must equal the long form exactly
    from repro.learners.dp_fermi import _positive, _project, _psi_dz, _w_grad_sqnorm, _w_grad_sum

    m, G = 50, 4
    F, f, s, inv, W = _closed_form_inputs(np.random.default_rng(21), form, m, G)
    np.testing.assert_array_equal(_w_grad_sum(None, f, s, W, inv, form, 1),
                                  _w_grad_sum(np.ones((m, G)), f, s, W, inv, form, 1))
    if form == "code_1x1":
        np.testing.assert_array_equal(_positive(F[..., None]), _positive(f))
        for a, b in zip(_psi_dz(F[..., None], s, W, inv, form, 1), _psi_dz(f, s, W, inv, form, 1), strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(_w_grad_sum(None, F[..., None], s, W, inv, form, 1),
                                      _w_grad_sum(np.ones((m, G)), f, s, W, inv, form, 1))
        np.testing.assert_array_equal(_w_grad_sqnorm(F[..., None], s, W, inv, form, 1),
                                      _w_grad_sqnorm(f, s, W, inv, form, 1))
    big = 3 * W
    for kind in ("frobenius", "box"):
        ref = _project(big, kind, [1, 2, 3, 4])
        np.testing.assert_array_equal(_project(big, kind, np.array([1.0, 2.0, 3.0, 4.0])), ref)
        np.testing.assert_array_equal(_project(big, kind, 2), _project(big, kind, np.full(G, 2.0)))


def _k_group_data(n=600, d=3, k=8, seed=31):
    """Features, labels and k unequal groups (every group present)."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, k + 1, dtype=float)
    s = np.r_[np.arange(k), rng.choice(k, size=n - k, p=p / p.sum())]
    X = rng.normal(size=(n, d)) + 0.3 * s[:, None] / k
    y = (X @ np.linspace(1, -0.5, d) + rng.logistic(size=n) > 0).astype(float)
    return X, y, s


def _first_step_w_noise(X, y, s, cfg, seeds, **noise):
    """W after step 1 of the noisy config minus that of the same config without noise (common random
    numbers: same init, batch and standard-normal draws), stacked over ``seeds``; flattened."""
    from repro.learners.dp_fermi import train_dp_fermi_batch

    quiet = {key: 0.0 for key in noise}
    diffs = []
    for seed in seeds:
        seen = {}

        def grab(t, Th, b, Ws, seen=seen):
            if t == 1:
                seen["W"] = Ws[None].copy()       # (G, k, l): G = 2 models (noisy, quiet)

        train_dp_fermi_batch(X, y, s, [cfg.with_(**noise), cfg.with_(**quiet)], rng=np.random.default_rng(seed),
                             on_step=grab)
        diffs.append(seen["W"][0] - seen["W"][1])
    return np.concatenate([dd.ravel() for dd in diffs])


@pytest.mark.parametrize("mode", ["strict-all", "strict", "reference-lambda", "reference-one"])
def test_w_noise_std_of_one_step(mode: str) -> None:
    """D1: one W step adds lr_W·N(0, w_std²)/E[B] (strict modes) or lr_W·N(0, w_std²) (reference), per entry, with
    w_std = z·C (strict-all), √2·z·Δ_W, Δ_W = 2√(1/p̂_a + 1/p̂_b) for the two smallest groups (strict),
    σ_W·λ or σ_W (reference, w_noise_scale lambda / one).

    The noisy-minus-quiet W after step 1 (θ's noise enters W only from step 2; radius 10⁶, no projection) is
    exactly that scaled normal draw: 25 runs × k·2 = 400 draws, RMS checked to ±12 % (relative SE of an RMS of
    400 normal draws ≈ 1/√800 = 3.5 %, so ≈ 3.4 SE); a missing √2 (29 %), λ (factor 2.5) or wrong
    denominator (×10) fails."""
    X, y, s = _k_group_data()
    n, k = len(y), 8
    lam, z, C, lr_w = 2.5, 1.3, 0.7, 0.9
    if mode.startswith("reference"):
        scale = mode.split("-")[1]
        cfg = REFERENCE.with_(ermi_form="full", lam=lam, epochs=1, batch_size=100, lr_w=lr_w, w_radius=1e6,
                              sigma_theta=0.4, w_noise_scale=scale)
        sigma_w = 0.6
        expected = lr_w * sigma_w * (lam if scale == "lambda" else 1.0)
        noise = {"sigma_w": sigma_w}
    else:
        engine = STRICT_ALL_FEATURES if mode == "strict-all" else STRICT_SENSITIVE
        cfg = engine.with_(lam=lam, epochs=1, batch_size=100, clip_norm=C, lr_w=lr_w, w_radius=1e6)
        p_two = np.sort(np.bincount(s, minlength=k) / n)[:2]
        w_std = z * C if mode == "strict-all" else math.sqrt(2) * z * 2 * math.sqrt(np.sum(1 / p_two))
        expected = lr_w * w_std / int(n * (100 / n))     # E[B] = n·q, q = 1/⌈n/B⌉ = 1/6
        noise = {"noise_multiplier": z}
    dW = _first_step_w_noise(X, y, s, cfg, range(25), **noise)
    assert dW.size == 25 * k * 2
    assert np.sqrt(np.mean(dW**2)) == pytest.approx(expected, rel=0.12)


def test_strict_sensitive_theta_step_clips_each_sensitive_part() -> None:
    """D1 (numpy, no JAX): one noiseless full-batch strict (sensitive-attribute) step is
    θ₁ = θ₀ − η/B Σ_i [(F_i − y_i + λ g_i^ns) x̃_i + λ g_i^sens x̃_i · min(1, C/‖g_i^sens x̃_i‖)], with
    g_i^sens = 2F_i(1 − F_i)(W_{s_i,1} − W_{s_i,0})/√p̂(s_i) and g_i^ns = F_i(1 − F_i)(‖W_{:,0}‖² − ‖W_{:,1}‖²)
    (module docstring); C is the median of ‖g_i^sens x̃_i‖, so half the samples are clipped."""
    from repro.learners.logistic import torch_linear_init

    X, y, s = _data(n=400, d=3, seed=5)
    n, lam, eta = len(y), 1.5, 0.3
    rng = np.random.default_rng(8)
    w0, b0 = torch_linear_init(3, rng=rng)
    W = rng.standard_normal((2, 2))
    Xt = np.c_[X, np.ones(n)]
    th0 = np.r_[w0, b0]
    F = sigmoid(Xt @ th0)
    dF = F * (1 - F)
    isp = 1 / np.sqrt(np.bincount(s) / n)
    g_sens = 2 * dF * (W[s, 1] - W[s, 0]) * isp[s]
    g_ns = dF * (np.sum(W[:, 0] ** 2) - np.sum(W[:, 1] ** 2))
    sens_norm = np.abs(g_sens) * np.linalg.norm(Xt, axis=1)
    C = float(np.median(sens_norm))
    clipped = 0 < np.count_nonzero(sens_norm > C) < n

    def step(clip):
        factor = np.minimum(1.0, clip / sens_norm)
        return th0 - eta / n * Xt.T @ (F - y + lam * g_ns + lam * g_sens * factor)

    cfg = STRICT_SENSITIVE.with_(w_init="normal", noise_multiplier=0.0, lam=lam, clip_norm=C, epochs=1, batch_size=n,
                                 lr_theta=eta, w_radius=1e6)
    res = train_dp_fermi(X, y, s, cfg, rng=np.random.default_rng(8))
    assert res.steps == 1 and clipped
    np.testing.assert_allclose(np.r_[res.model.w, res.model.b], step(C), rtol=0, atol=1e-12)
    # the clip matters at this C: the unclipped step is far from the result
    assert np.max(np.abs(step(np.inf) - step(C))) > 1e-3
