"""The authors' UTKFace code path in the JAX trainer (issue 37; spec seed-004 §7.5): InstanceNorm running
statistics (PyTorch's ``track_running_stats``, momentum 0.1, used after ``model.eval()``) and the code's
l × l W. Tiny CPU sizes."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from repro.errors import InvalidParameterError  # noqa: E402
from repro.learners.dp_fermi import DPFermiConfig  # noqa: E402
from repro.learners.dp_fermi_cnn import (  # noqa: E402
    NORM_EPS,
    predict,
    psi_batch,
    train_dp_fermi_jax,
    update_running_stats,
    vgg_apply,
    vgg_forward,
    vgg_init,
    vgg_norm_init,
)

CFG = DPFermiConfig(head="softmax", ermi_form="full", lr_theta=0.001, lr_w=0.005, batch_size=8, epochs=1,
                    clip_norm=2.0, w_radius=2.0, sigma_theta=0.0, sigma_w=0.0, lam=1.0)


def _images(n: int, r: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, r, r, 3), dtype=np.uint8)


def _params(r: int = 8, seed: int = 0):
    return tuple(jnp.asarray(p, dtype="float32") for p in vgg_init(np.random.default_rng(seed), r))


def test_update_is_pytorchs_momentum_rule_and_ignores_padding() -> None:
    """running ← 0.9·running + 0.1·(mean of the unmasked rows' statistics), per channel."""
    running = ((np.array([0.0, 1.0]), np.array([1.0, 2.0])),)
    mu = np.array([[1.0, 3.0], [3.0, 5.0], [100.0, 100.0]])
    var = np.array([[2.0, 4.0], [4.0, 8.0], [100.0, 100.0]])
    mask = np.array([1.0, 1.0, 0.0])  # the third row is padding
    ((m, v),) = update_running_stats(running, ((mu, var),), mask)
    np.testing.assert_allclose(m, [0.9 * 0.0 + 0.1 * 2.0, 0.9 * 1.0 + 0.1 * 4.0])
    np.testing.assert_allclose(v, [0.9 * 1.0 + 0.1 * 3.0, 0.9 * 2.0 + 0.1 * 6.0])
    ((m5, _),) = update_running_stats(running, ((mu, var),), mask, momentum=0.5)
    np.testing.assert_allclose(m5, [1.0, 2.5])


def test_forward_statistics_are_per_image_mean_and_unbiased_variance() -> None:
    """The first normalised layer (conv1_2's output): per image and channel the mean and the unbiased
    (ddof = 1) variance over the H·W positions, computed here without the model code."""
    params = _params()
    x = _images(3)
    _, stats = vgg_forward(params, jnp.asarray(x))
    assert len(stats) == 6 and [s[0].shape[1] for s in stats] == [16, 16, 64, 64, 256, 256]
    conv = lambda h, w, b, s: jax.lax.conv_general_dilated(  # noqa: E731
        h, w, (s, s), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC")) + b
    h = jax.nn.relu(conv(jnp.asarray(x, "float32") / 255.0, params[0], params[1], 1))
    h = np.asarray(conv(h, params[2], params[3], 1)).reshape(3, -1, 16)
    np.testing.assert_allclose(np.asarray(stats[0][0]), h.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(stats[0][1]), h.var(axis=1, ddof=1), rtol=1e-4, atol=1e-6)


def test_eval_with_an_images_own_statistics_equals_training_mode() -> None:
    """Closed form: normalising one image by running statistics equal to its own (biased) statistics gives
    exactly the training-mode (instance) output; other running statistics give another output (float64: at
    8 px some variances are near eps, where float32 rounding shows)."""
    with jax.enable_x64(True):
        params = tuple(jnp.asarray(p) for p in vgg_init(np.random.default_rng(0), 8))
        x = jnp.asarray(_images(1))
        logits, stats = vgg_forward(params, x)
        # unbiased → biased: × (n − 1)/n with n = H·W of each normalised layer at 8 px
        sizes = [64, 16, 16, 4, 4, 1]
        own = tuple((m[0], v[0] * (n - 1) / n) for (m, v), n in zip(stats, sizes, strict=True))
        np.testing.assert_allclose(np.asarray(vgg_apply(params, x, own)), np.asarray(logits), rtol=1e-9,
                                   atol=1e-12)
        init = tuple((jnp.asarray(a), jnp.asarray(b)) for a, b in vgg_norm_init())
        assert not np.allclose(np.asarray(vgg_apply(params, x, init)), np.asarray(logits), atol=1e-3)
    assert NORM_EPS == 1e-5


def test_training_moves_the_running_statistics_by_each_batch_and_predict_uses_them() -> None:
    """With θ barely moving (η_θ = 1e-12, no noise) and one batch per epoch holding every image, three epochs
    give running = 0.9³·initial + (1 − 0.9³)·(batch mean of the per-image statistics at θ₀); ``predict``
    with them equals the eval-mode forward pass, and differs from the instance-statistics prediction."""
    X = _images(6)
    y = np.arange(6) % 9
    s = np.arange(6) % 5
    cfg = CFG.with_(lr_theta=1e-12, batch_size=6, epochs=3)
    out = train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(3), device="cpu", n_classes=9)
    params0 = tuple(jnp.asarray(p, dtype="float32") for p in vgg_init(np.random.default_rng(3), 8))
    _, stats = vgg_forward(params0, jnp.asarray(X))
    decay = 0.9**3
    for (rm, rv), (mu, var), (m0, v0) in zip(out.running_stats, stats, vgg_norm_init(), strict=True):
        np.testing.assert_allclose(rm, decay * m0 + (1 - decay) * np.asarray(mu).mean(axis=0), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(rv, decay * v0 + (1 - decay) * np.asarray(var).mean(axis=0), rtol=1e-4, atol=1e-5)
    labels, prob = predict(out.params, X, device="cpu", running_stats=out.running_stats)
    rs = tuple((jnp.asarray(a), jnp.asarray(b)) for a, b in out.running_stats)
    expected = jax.nn.softmax(vgg_apply(tuple(jnp.asarray(p) for p in out.params), jnp.asarray(X), rs), axis=1)
    np.testing.assert_allclose(prob, np.asarray(expected), rtol=1e-4, atol=1e-6)
    _, prob_instance = predict(out.params, X, device="cpu")
    assert not np.allclose(prob, prob_instance, atol=1e-4)
    # the momentum is a setting; "instance" tracks nothing
    out5 = train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(3), device="cpu", n_classes=9,
                              norm_momentum=0.5)
    np.testing.assert_allclose(out5.running_stats[0][0], (1 - 0.5**3) * np.asarray(stats[0][0]).mean(axis=0),
                               rtol=1e-4, atol=1e-5)
    none = train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(3), device="cpu", n_classes=9,
                              norm_stats="instance")
    assert none.running_stats is None
    with pytest.raises(InvalidParameterError, match="norm_stats"):
        train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(3), device="cpu", norm_stats="batch")


def test_psi_with_the_codes_square_w_adds_only_the_norm_term_of_the_extra_rows() -> None:
    """Closed form: with W (l × l) the code's ψ is the paper's ψ with W's first k rows minus
    Σ_j p̄_j ‖W_{k:, j}‖² (the cross term's trace reads only the first k rows)."""
    rng = np.random.default_rng(0)
    f = rng.dirichlet(np.ones(9), size=20)
    sg = rng.integers(0, 5, size=20)
    W = rng.normal(size=(9, 9))
    isp = 1 / np.sqrt(np.bincount(sg, minlength=5) / 20)
    extra = (f.mean(axis=0) * (W[5:] ** 2).sum(axis=0)).sum()
    np.testing.assert_allclose(float(psi_batch(f, sg, W, isp)), float(psi_batch(f, sg, W[:5], isp)) - extra,
                               rtol=1e-12)
    # the same through the authors' matrix expression −Tr(W p̄ Wᵀ) + 2 Tr(W J P̂^{-1/2}) − 1 (non-square trace)
    J = f.T @ np.eye(5)[sg] / 20
    cross = W @ J @ np.diag(isp)
    code = -np.trace(W @ np.diag(f.mean(axis=0)) @ W.T) + 2 * np.trace(cross[:5, :5]) - 1
    np.testing.assert_allclose(float(psi_batch(f, sg, W, isp)), code, rtol=1e-12)


def test_w_rows_classes_trains_the_codes_square_w() -> None:
    """W₀ ~ N(0, 1) of shape 9 × 9 projected into the Frobenius ball with all 81 entries; at λ = 0 without
    noise W only gets projected, so the result is Π(W₀) with W₀ the draw after θ's initialisation."""
    X = _images(10)
    y = np.arange(10) % 9
    s = np.arange(10) % 5
    out = train_dp_fermi_jax(X, y, s, CFG.with_(lam=0.0), rng=np.random.default_rng(5), device="cpu", n_classes=9,
                             w_rows="classes")
    rng = np.random.default_rng(5)
    vgg_init(rng, 8)
    W0 = rng.standard_normal((9, 9))
    assert out.W.shape == (9, 9)
    np.testing.assert_allclose(out.W, W0 * 2.0 / np.linalg.norm(W0), rtol=1e-5)
    groups = train_dp_fermi_jax(X, y, s, CFG, rng=np.random.default_rng(5), device="cpu", n_classes=9,
                                w_rows="groups")
    assert groups.W.shape == (5, 9)
    with pytest.raises(InvalidParameterError, match="at least as many classes"):
        train_dp_fermi_jax(X, np.arange(10) % 2, np.arange(10) % 5, CFG, rng=np.random.default_rng(5),
                           device="cpu", n_classes=2, w_rows="classes")
