"""The UTKFace CNN trained for several λ at once (issue 34, item 4): ``vmap`` over the models equals each
model trained alone with the same generator (24 images of 8 px in batches of 12: XLA's float64 convolutions
on a CPU are slow, and the compile is most of the rest).

Checked in float64 (``jax.enable_x64``) to 1e-9: there the two programs differ by summation order only, so
the comparison can fail for a real defect. In float32 a single model's own rounding (float32 against float64)
already moves θ by ≈ 1e-3 after ten steps at 16 px (instance normalisation of small maps amplifies it), so
float32 equality would be a tolerance that hides nothing. Spec: seed-004 §7.5–§7.6.
"""

from __future__ import annotations

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.learners._jax import float64
from repro.learners.dp_fermi import STRICT_SENSITIVE, DPFermiConfig
from repro.learners.dp_fermi_cnn import train_dp_fermi_jax, train_dp_fermi_jax_many

REF = DPFermiConfig(head="softmax", ermi_form="full", batch_size=12, epochs=1, sigma_theta=0.01, sigma_w=0.05,
                    theta_clip="batch")


def _images(n: int = 24, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8), rng.integers(0, 9, n), rng.integers(0, 5, n))


@pytest.mark.parametrize("variant", ["reference", "strict"])
def test_models_trained_together_equal_each_trained_alone(variant: str) -> None:
    X, y, s = _images()
    if variant == "reference":
        base, kw = REF, {"norm_stats": "running", "w_rows": "classes"}
    else:
        base, kw = STRICT_SENSITIVE.with_(head="softmax", batch_size=12, epochs=1, noise_multiplier=2.0), {
            "norm_stats": "instance"}
    configs = [base.with_(lam=0.0), base.with_(lam=10.0)]
    with float64():
        many = train_dp_fermi_jax_many(X, y, s, configs, rng=np.random.default_rng(3), device="cpu", n_classes=9,
                                       vectorize=True, **kw)
        for c, m in zip(configs, many, strict=True):
            one = train_dp_fermi_jax(X, y, s, c, rng=np.random.default_rng(3), device="cpu", n_classes=9, **kw)
            assert m.config == c and m.steps == one.steps
            for a, b in zip(one.params, m.params, strict=True):
                np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(m.W, one.W, rtol=1e-9, atol=1e-12)
            if one.running_stats is not None:
                for (a1, a2), (b1, b2) in zip(one.running_stats, m.running_stats, strict=True):
                    np.testing.assert_allclose(b1, a1, rtol=1e-9, atol=1e-12)
                    np.testing.assert_allclose(b2, a2, rtol=1e-9, atol=1e-12)
    assert not all(np.array_equal(a, b) for a, b in zip(many[0].params, many[1].params, strict=True))  # λ matters


def test_models_in_turn_are_each_the_single_model_run_from_the_same_generator_state() -> None:
    """The CPU default (``vectorize=False``): bytes equal to one call per λ, each from a fresh copy of the stream."""
    X, y, s = _images()
    configs = [REF.with_(lam=0.0), REF.with_(lam=10.0)]
    rng = np.random.default_rng(4)
    turn = train_dp_fermi_jax_many(X, y, s, configs, rng=rng, device="cpu", n_classes=9)
    for c, m in zip(configs, turn, strict=True):
        one = train_dp_fermi_jax(X, y, s, c, rng=np.random.default_rng(4), device="cpu", n_classes=9)
        assert all(np.array_equal(a, b) for a, b in zip(one.params, m.params, strict=True))
        assert np.array_equal(one.W, m.W)
    ref = np.random.default_rng(4)
    train_dp_fermi_jax(X, y, s, configs[0], rng=ref, device="cpu", n_classes=9)
    assert rng.random() == ref.random()   # the caller's stream ends where one model's run leaves it


def test_models_trained_together_may_differ_only_in_lambda_and_noise() -> None:
    X, y, s = _images()
    with pytest.raises(InvalidParameterError, match="may differ only in"):
        train_dp_fermi_jax_many(X, y, s, [REF, REF.with_(lr_theta=0.1)], rng=np.random.default_rng(0),
                                device="cpu", n_classes=9)
    with pytest.raises(InvalidParameterError, match="at least one"):
        train_dp_fermi_jax_many(X, y, s, [], rng=np.random.default_rng(0), device="cpu")
    with pytest.raises(InvalidParameterError, match="on_epoch"):
        train_dp_fermi_jax_many(X, y, s, [REF, REF.with_(lam=2.0)], rng=np.random.default_rng(0), device="cpu",
                                n_classes=9, on_epoch=lambda *a: None)
