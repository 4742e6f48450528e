"""JAX DP-FERMI trainer (spec seed-004 §3, §4.3, §7.5): parity with the numpy engine, the CNN's size."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from repro.errors import InvalidParameterError  # noqa: E402
from repro.learners.dp_fermi import DPFermiConfig, train_dp_fermi  # noqa: E402
from repro.learners.dp_fermi_cnn import (  # noqa: E402
    predict,
    train_dp_fermi_jax,
    vgg_apply,
    vgg_init,
    vgg_param_count,
    vgg_shapes,
)
from repro.privacy.accounting import epsilon as accountant_epsilon  # noqa: E402


def _data(n: int = 300, d: int = 6, classes: int = 4, k: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    s = rng.integers(0, k, size=n)
    logits = X @ rng.normal(size=(d, classes)) + 0.8 * np.eye(k, classes)[s]
    y = np.array([rng.choice(classes, p=np.exp(r) / np.exp(r).sum()) for r in logits])
    return X, y, s


REF = DPFermiConfig(
    head="softmax",
    ermi_form="full",
    lr_theta=0.05,
    lr_w=0.1,
    batch_size=64,
    epochs=3,
    clip_norm=1.0,
    w_radius=2.0,
    sigma_theta=0.3,
    sigma_w=0.2,
)


@pytest.mark.parametrize(
    "changes",
    [
        {},  # reference: batch clip, θ noise ×1, W noise ×λ
        {"lam": 0.0},  # λ = 0 still draws (and scales) the noise
        {"theta_clip": "none", "sigma_theta": 0.0, "sigma_w": 0.0, "lam": 2.0},  # non-private FERMI
        {"theta_noise_scale": "lambda", "w_noise_scale": "one", "w_projection": "box", "w_init": "zeros"},
    ],
)
def test_linear_softmax_matches_numpy_engine(changes: dict) -> None:
    """On a linear softmax model the JAX trainer gives the numpy engine's numbers (float64, same generator):
    same θ, same W and the same predictions after 3 shuffled epochs with a partial last batch."""
    X, y, s = _data()
    cfg = REF.with_(**changes)
    ref = train_dp_fermi(X, y, s, cfg, rng=np.random.default_rng(7))
    with jax.enable_x64(True):
        out = train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(7), model="linear", device="cpu")
        labels, _ = predict(out.params, X, model="linear", device="cpu")
    assert out.steps == ref.steps == 3 * 5
    np.testing.assert_allclose(out.params[0], ref.model.w, rtol=0, atol=1e-10)
    np.testing.assert_allclose(out.params[1], ref.model.b, rtol=0, atol=1e-10)
    np.testing.assert_allclose(out.W, ref.W[0], rtol=0, atol=1e-10)
    np.testing.assert_array_equal(labels, ref.model.predict(X))


def test_linear_float32_close_to_engine() -> None:
    """In the default float32 the same run stays within 1e-4 of the float64 engine."""
    X, y, s = _data()
    ref = train_dp_fermi(X, y, s, REF, rng=np.random.default_rng(3))
    out = train_dp_fermi_jax(X, y, s, REF, rng=np.random.default_rng(3), model="linear", device="cpu")
    np.testing.assert_allclose(out.params[0], ref.model.w, atol=1e-4)
    np.testing.assert_allclose(out.W, ref.W[0], atol=1e-4)


def test_lambda_moves_the_solution_and_noise_matters() -> None:
    """Guards against a trainer that ignores λ or the noise (both must change θ)."""
    X, y, s = _data()
    base = train_dp_fermi_jax(X, y, s, REF, rng=np.random.default_rng(1), model="linear", device="cpu")
    other_lam = train_dp_fermi_jax(
        X, y, s, REF.with_(lam=3.0), rng=np.random.default_rng(1), model="linear", device="cpu"
    )
    no_noise = train_dp_fermi_jax(
        X, y, s, REF.with_(sigma_theta=0.0), rng=np.random.default_rng(1), model="linear", device="cpu"
    )
    assert np.abs(base.params[0] - other_lam.params[0]).max() > 1e-3
    assert np.abs(base.params[0] - no_noise.params[0]).max() > 1e-3


def test_vgg_parameter_count_and_shapes() -> None:
    """Spec §7.5: 1,612,713 parameters at 128 px; the FC input is 256·(r/8)²."""
    assert vgg_param_count(128) == 1_612_713
    assert vgg_param_count(32) == 1_022_880 + 256 * 16 * 9 + 9
    params = vgg_init(np.random.default_rng(0), 32)
    assert sum(p.size for p in params) == vgg_param_count(32)
    x = np.random.default_rng(1).integers(0, 256, size=(2, 32, 32, 3), dtype=np.uint8)
    # jitted, as the trainer and predict() run it (one compile instead of one per eager operation)
    logits = np.asarray(
        jax.jit(vgg_apply)(tuple(jax.numpy.asarray(p, dtype="float32") for p in params), jax.numpy.asarray(x))
    )
    assert logits.shape == (2, 9) and np.all(np.isfinite(logits))
    with pytest.raises(InvalidParameterError, match="multiple of 8"):
        vgg_param_count(30)


def test_vgg_instance_norm_makes_each_image_independent_of_the_batch() -> None:
    """Padding rows (masked in the loss) must not change other images' logits: per-image normalisation."""
    params = tuple(jax.numpy.asarray(p, dtype="float32") for p in vgg_init(np.random.default_rng(0), 16))
    x = np.random.default_rng(2).integers(0, 256, size=(3, 16, 16, 3), dtype=np.uint8)
    apply = jax.jit(vgg_apply)  # as the trainer and predict() run it (one compile per batch shape, not per operation)
    both = np.asarray(apply(params, jax.numpy.asarray(x)))
    alone = np.asarray(apply(params, jax.numpy.asarray(x[:1])))
    np.testing.assert_allclose(both[:1], alone, atol=1e-5)


def test_cnn_training_step_runs_and_rejects_unsupported_modes() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, size=(40, 16, 16, 3), dtype=np.uint8)
    y = rng.integers(0, 9, size=40)
    s = np.arange(40) % 5
    cfg = DPFermiConfig(
        head="softmax",
        ermi_form="full",
        lr_theta=0.001,
        lr_w=0.005,
        batch_size=16,
        epochs=1,
        clip_norm=2.0,
        w_radius=2.0,
        sigma_theta=0.1,
        sigma_w=0.1,
        lam=10.0,
    )
    out = train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(0), device="cpu", n_classes=9)
    assert out.steps == 3 and out.W.shape == (5, 9) and np.linalg.norm(out.W) <= 2.0 + 1e-6
    labels, prob = predict(out.params, X, device="cpu")
    assert labels.shape == (40,) and np.allclose(prob.sum(axis=1), 1.0, atol=1e-5)
    with pytest.raises(InvalidParameterError, match="theta_clip"):
        train_dp_fermi_jax(
            X,
            y,
            s,
            cfg.with_(theta_clip="per_sample", noise_multiplier=1.0),
            rng=np.random.default_rng(0),
            device="cpu",
        )
    with pytest.raises(InvalidParameterError, match="device"):
        train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(0), device="quantum")


def test_multiclass_ermi_is_the_max_of_psi() -> None:
    """Spec §3 / §10 item 1 for l = 9 classes, k = 5 groups: mean ψ̂ at W* = P̂_S^{-1/2} Jᵀ diag(p̂_Ŷ)^{-1}
    equals the ERMI Σ p̂(j,r)²/(p̂(j)p̂(r)) − 1 (the numpy engine's ``ermi``), and gradient ascent from W = 0
    reaches it (W* is the maximiser)."""
    from repro.learners.dp_fermi import ermi
    from repro.learners.dp_fermi_cnn import psi_batch

    rng = np.random.default_rng(4)
    n, ell, k = 500, 9, 5
    s = rng.integers(0, k, size=n)
    z = rng.normal(size=(n, ell)) + 1.5 * np.eye(k, ell)[s]
    f = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    p_s = np.bincount(s, minlength=k) / n
    isp = 1 / np.sqrt(p_s)
    J = f.T @ np.eye(k)[s] / n  # (l, k) joint p̂(j, r)
    W_star = (isp[:, None] * J.T) / f.mean(axis=0)[None, :]
    target = ermi(f, s, k)
    assert target > 0.01
    with jax.enable_x64(True):
        jnp = jax.numpy
        value = float(psi_batch(jnp.asarray(f), jnp.asarray(s), jnp.asarray(W_star), jnp.asarray(isp)))
        assert value == pytest.approx(target, abs=1e-12)
        grad = jax.jit(jax.grad(lambda W: psi_batch(jnp.asarray(f), jnp.asarray(s), W, jnp.asarray(isp))))
        W = jnp.zeros((k, ell))
        for _ in range(3000):
            W = W + 2.0 * grad(W)
        assert float(psi_batch(jnp.asarray(f), jnp.asarray(s), W, jnp.asarray(isp))) == pytest.approx(
            target, abs=1e-6
        )
        np.testing.assert_allclose(np.asarray(W), W_star, atol=1e-3)
    # ERMI is 0 when the predictions do not depend on the group
    assert ermi(np.tile(f[:1], (n, 1)), s, k) == pytest.approx(0.0, abs=1e-12)


def test_device_noise_is_standard_normal_and_independent_across_steps() -> None:
    """noise_source="device": each step's draws are N(0, 1) (mean within 5 standard errors of 0, variance
    within
    1 ± 0.02 on 200,000 draws) and consecutive steps are uncorrelated (|r| < 5/√n)."""
    from repro.learners.dp_fermi_cnn import _noise_fn

    draw = _noise_fn(100_000, (5, 9), jax.numpy.float32)
    key = jax.random.key(123)
    u1, v1 = (np.asarray(a, dtype=float) for a in draw(key, 1))
    u2, _ = (np.asarray(a, dtype=float) for a in draw(key, 2))
    both = np.concatenate([u1, u2])
    assert abs(both.mean()) < 5 / np.sqrt(both.size)
    assert both.var() == pytest.approx(1.0, abs=0.02)
    assert abs(np.corrcoef(u1, u2)[0, 1]) < 5 / np.sqrt(u1.size)
    assert v1.shape == (5, 9)
    again = np.asarray(draw(key, 1)[0], dtype=float)
    np.testing.assert_array_equal(again, u1)  # deterministic in (key, step)


def test_device_noise_training_is_seeded_and_noisy() -> None:
    X, y, s = _data()
    def run(cfg: DPFermiConfig):
        return train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(5), model="linear", device="cpu",
                                  noise_source="device")

    a, b, quiet = run(REF), run(REF), run(REF.with_(sigma_theta=0.0, sigma_w=0.0))
    np.testing.assert_array_equal(a.params[0], b.params[0])
    assert np.abs(a.params[0] - quiet.params[0]).max() > 1e-3
    with pytest.raises(InvalidParameterError, match="noise_source"):
        train_dp_fermi_jax(X, y, s, REF, rng=np.random.default_rng(5), model="linear", noise_source="gpu")


@pytest.mark.parametrize("lam", [0.0, 2.0])
def test_strict_sensitive_mode_matches_numpy_engine(lam: float) -> None:
    """Strict mode (noise only on the s-dependent parts, per-sample clip of the sensitive θ part by vmap,
    Poisson sampling, accountant-calibrated z): same θ, W and accounted event as the numpy engine's
    ``sensitive`` mode on a linear softmax model (float64, same generator). The events must be equal, not merely
    both present: the JAX engine once accounted with the Poisson q (amplification the unclipped part breaks)."""
    from repro.learners.dp_fermi import STRICT_SENSITIVE

    X, y, s = _data()
    cfg = STRICT_SENSITIVE.with_(head="softmax", lr_theta=0.05, lr_w=0.1, batch_size=64, epochs=2,
                                 clip_norm=0.02, noise_multiplier=0.9, lam=lam)
    ref = train_dp_fermi(X, y, s, cfg, rng=np.random.default_rng(11))
    with jax.enable_x64(True):
        out = train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(11), model="linear", device="cpu")
    assert out.steps == ref.steps and out.sampling_probability == ref.sampling_probability
    assert ref.event is not None and out.event == ref.event
    assert accountant_epsilon(out.event, 1e-5) == accountant_epsilon(ref.event, 1e-5)
    np.testing.assert_allclose(out.params[0], ref.model.w, rtol=0, atol=1e-10)
    np.testing.assert_allclose(out.params[1], ref.model.b, rtol=0, atol=1e-10)
    np.testing.assert_allclose(out.W, ref.W[0], rtol=0, atol=1e-10)
    if lam > 0:  # the per-sample clip binds in this setting, so the parity covers it
        loose = train_dp_fermi(X, y, s, cfg.with_(clip_norm=100.0, noise_multiplier=0.0),
                               rng=np.random.default_rng(11))
        tight = train_dp_fermi(X, y, s, cfg.with_(noise_multiplier=0.0), rng=np.random.default_rng(11))
        assert np.abs(loose.model.w - tight.model.w).max() > 1e-4


def test_strict_mode_needs_poisson_sampling() -> None:
    from repro.learners.dp_fermi import STRICT_SENSITIVE

    X, y, s = _data()
    with pytest.raises(InvalidParameterError, match="poisson"):
        train_dp_fermi_jax(X, y, s, STRICT_SENSITIVE.with_(head="softmax", sampling="shuffle"),
                           rng=np.random.default_rng(0), model="linear", device="cpu")


@pytest.mark.slow
def test_strict_mode_runs_on_the_cnn() -> None:
    """vmap per-sample gradients through the CNN (instance norm per image); W stays in its ball."""
    from repro.learners.dp_fermi import STRICT_SENSITIVE

    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, size=(48, 16, 16, 3), dtype=np.uint8)
    y, s = rng.integers(0, 9, size=48), np.arange(48) % 5
    cfg = STRICT_SENSITIVE.with_(head="softmax", lr_theta=0.001, lr_w=0.005, batch_size=16, epochs=1,
                                 noise_multiplier=1.0, lam=10.0, w_radius=2.0)
    # generator 21: its three Poisson batches (14, 16 and 16 rows) all pad to B = 16, so the CNN's strict step
    # compiles once (generator 0's 18-row batches, padded to 32, compiled a second ≈ 9 s variant); batches
    # padded past B are checked against the numpy engine in test_strict_sensitive_mode_matches_numpy_engine
    out = train_dp_fermi_jax(X, y, s, cfg, rng=np.random.default_rng(21), device="cpu", n_classes=9)
    assert out.steps == 3 and out.event is not None and np.linalg.norm(out.W) <= 2.0 + 1e-6
    assert all(np.all(np.isfinite(p)) for p in out.params)


def test_vgg_shapes_are_the_initialised_parameters_shapes() -> None:
    for resolution in (16, 32):
        params = vgg_init(np.random.default_rng(0), resolution)
        assert vgg_shapes(resolution) == tuple(p.shape for p in params)
        assert sum(int(np.prod(s)) for s in vgg_shapes(resolution)) == vgg_param_count(resolution)
