"""DP-FERMI with a JAX model: the paper's 9-conv VGG-like CNN on UTKFace (Figure 5), same semantics as
the numpy engine.

Spec: seed-004-dpfermi.md §3 (multi-class ERMI, softmax F, W ∈ R^{k×l}), §4.1 (Algorithm 1), §4.3 (the
authors' code: batch-gradient clip, θ noise ×1, W noise ×λ, Frobenius ball, W₀ ~ N(0, 1), shuffled
epochs, last iterate; for UTKFace the code's 9×9 W is used only through its first 5 rows = the paper's
W ∈ R^{5×9}), §5 (Theorem 3.3 noise), §7.5 (model and training), §7.6 (compute).

Semantics are those of :func:`repro.learners.dp_fermi.train_dp_fermi` with ``head="softmax"``,
``ermi_form="full"``, ``fairness="dp"`` and ``theta_clip`` ``none``/``batch`` (the ``reference`` path) or
``sensitive`` with Poisson sampling (the ``strict`` mode, spec §4.4: the s-dependent θ part of each sample,
∇_θ 2 isp[s_i] Σ_j W_{s_i,j} f_ij, is clipped to ``clip_norm`` using per-sample gradients from ``jax.vmap``,
noise λ·√2·z·2C on θ and √2·z·Δ_W on W, sums divided by the expected batch size; accounted like the numpy
engine's by the exact strict accountant (:mod:`repro.privacy.strict_accountant`), not by add/remove
amplification by subsampling, because each record's unclipped loss and W-norm part enters every noisy sum; the all-features ``per_sample`` mode is not implemented). Per step of the reference path, on the batch B:

    objective(θ, W) = mean_B CE(F_θ(x), y) + λ · mean_B ψ̂_i(θ, W),
    ψ̂_i = −Σ_j f_j ‖W_{:,j}‖² + (2/√p̂_S(s_i)) Σ_j W_{s_i,j} f_j − 1,       f = softmax(model_θ(x_i))
    g_θ = ∇_θ objective, clipped as a whole to ``clip_norm`` (``batch``), + σ_θ·u (×λ if ``lambda``)
    g_W = λ ∇_W mean_B ψ̂_i + σ_W·V (×λ if ``w_noise_scale="lambda"``),
    θ ← θ − η_θ g_θ,   W ← Π(W + η_W g_W)          (both gradients at (θ_t, W_t))

**Randomness is drawn exactly as the numpy engine draws it**, from the same numpy Generator in the same
order: θ initialisation (PyTorch ``nn.Linear`` / ``Conv2d`` defaults), W₀, the batch permutation of each
epoch, then per step the θ noise (one standard normal per parameter, in parameter order) and the W noise.
So on a linear softmax model this trainer reproduces the numpy engine's numbers (tested; float64 under
``jax.enable_x64``). The device only runs the deterministic step; noise comes from the host.

Model (:func:`vgg_init`, :func:`vgg_apply`; spec §7.5): 3×3 convs (padding 1) 3→8→16→16(s2)→32→64→64(s2)
→128→256→256(s2), instance normalisation (no affine) after conv1_2, conv1, conv2_2, conv2, conv3_2, conv3,
ReLU after every conv (order conv → norm → ReLU, as the authors' ``FeedForward.forward``); flatten; FC to 9
logits. Inputs are uint8 images scaled to [0, 1] (torchvision ``ToTensor``). 1,612,713 parameters at 128 px
(the paper's "≈ 1.6M"); the convolutions hold 1,022,880 at every resolution, the FC 256·(r/8)²·9 + 9.

**Normalisation statistics** (issue 37). The authors' layers are ``InstanceNorm2d(track_running_stats=True)``
(PyTorch defaults: momentum 0.1, eps 1e-5, running mean 0 and variance 1 at the start) and their script calls
``model.eval()`` before testing. In training mode each image is normalised by its own statistics and every
forward pass moves the running statistics: running ← (1 − 0.1)·running + 0.1·(batch mean of the per-image
means, resp. of the per-image *unbiased* variances over the H·W positions); at [C0] (the commit of the released
curves) one forward pass is one batch of 64. In eval mode every image is normalised by the running statistics.
``norm_stats="running"`` (the default) does exactly that: :func:`vgg_forward` returns the per-image statistics,
the step updates the running ones (padded rows masked out) and :func:`predict` takes them. ``"instance"``
(the earlier choice, kept as an ablation) uses each image's own statistics at test time too.

**W's shape** (issue 37). The paper's W is k × l (5 × 9). The authors' code draws W₀ ~ N(0, 1) of shape
l × l (9 × 9): the trace of the cross term reads only its first k rows, but −Tr(W p̄ Wᵀ) = −Σ_j p̄_j ‖W_{:,j}‖²,
the W noise and the Frobenius projection involve all l rows. ``w_rows="classes"`` trains that l × l W
(:func:`psi_batch` is the code's ψ for any number of rows ≥ k); ``"groups"`` (the default here and the numpy
engine's shape) trains the paper's k × l W.

JAX is a core dependency (issue 34); it is imported through :mod:`repro.learners._jax`, which pins XLA's CPU
thread pool; on an NVIDIA GPU ``pip install "jax[cuda12]"`` runs the same code.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners._jax import jax, jnp  # JAX with XLA's CPU pool pinned (the same bytes for any --jobs)
from repro.learners.dp_fermi import (
    DPFermiConfig,
    _batch_indices,
    _init_theta,
    noise_stds,
    privacy_event,
    schedule,
)

__all__ = [
    "VGG_CHANNELS",
    "VGG_STRIDES",
    "VGG_NORM",
    "NORM_MOMENTUM",
    "NORM_EPS",
    "NORM_STATS",
    "W_ROWS",
    "vgg_param_count",
    "vgg_init",
    "vgg_norm_init",
    "vgg_forward",
    "vgg_apply",
    "update_running_stats",
    "psi_batch",
    "linear_init",
    "linear_apply",
    "CnnResult",
    "train_dp_fermi_jax",
    "train_dp_fermi_jax_many",
    "MANY_FIELDS",
    "predict",
    "select_device",
]

#: (in, out) channels of the 9 convolutions and their strides; spec §7.5
VGG_CHANNELS = ((3, 8), (8, 16), (16, 16), (16, 32), (32, 64), (64, 64), (64, 128), (128, 256), (256, 256))
VGG_STRIDES = (1, 1, 2, 1, 1, 2, 1, 1, 2)
#: instance norm after conv1_2, conv1, conv2_2, conv2, conv3_2, conv3 (not after the _1 layers)
VGG_NORM = (False, True, True, False, True, True, False, True, True)
#: PyTorch's InstanceNorm2d defaults, the authors' layers (spec §7.5)
NORM_MOMENTUM = 0.1
NORM_EPS = 1e-5
#: test-time normalisation: the authors' running statistics after ``model.eval()``, or each image's own
NORM_STATS = ("running", "instance")
#: rows of W: the code's l × l (``classes``) or the paper's k × l (``groups``)
W_ROWS = ("classes", "groups")

Params = tuple[Any, ...]


def vgg_param_count(resolution: int, n_classes: int = 9) -> int:
    """Number of parameters of the VGG-like CNN at input ``resolution`` (1,612,713 at 128, 9 classes)."""
    _check_resolution(resolution)
    conv = sum(9 * a * b + b for a, b in VGG_CHANNELS)
    return conv + 256 * (resolution // 8) ** 2 * n_classes + n_classes


def vgg_shapes(resolution: int, n_classes: int = 9) -> tuple[tuple[int, ...], ...]:
    """The shapes of :func:`vgg_init`'s parameters, without drawing them."""
    _check_resolution(resolution)
    conv = [shape for a, b in VGG_CHANNELS for shape in ((3, 3, a, b), (b,))]
    return (*conv, (256 * (resolution // 8) ** 2, n_classes), (n_classes,))


def _check_resolution(resolution: int) -> None:
    if resolution < 8 or resolution % 8:
        raise InvalidParameterError(
            f"the CNN needs a resolution that is a multiple of 8 (>= 8); got {resolution}."
        )


def vgg_init(rng: np.random.Generator, resolution: int, n_classes: int = 9) -> Params:
    """PyTorch's default initialisation (weights and biases U(−1/√fan_in, 1/√fan_in)), from ``rng``.

    Returns the tuple (w1, b1, …, w9, b9, w_fc, b_fc): conv weights HWIO (3, 3, in, out), FC (in, out)."""
    _check_resolution(resolution)
    out: list[np.ndarray] = []
    for a, b in VGG_CHANNELS:
        bound = 1.0 / math.sqrt(9 * a)
        out.append(rng.uniform(-bound, bound, size=(b, a, 3, 3)).transpose(2, 3, 1, 0).copy())
        out.append(rng.uniform(-bound, bound, size=b))
    fan_in = 256 * (resolution // 8) ** 2
    bound = 1.0 / math.sqrt(fan_in)
    out.append(rng.uniform(-bound, bound, size=(n_classes, fan_in)).T.copy())
    out.append(rng.uniform(-bound, bound, size=n_classes))
    return tuple(out)


def vgg_norm_init() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """PyTorch's initial running statistics of the six InstanceNorm2d layers: (mean 0, variance 1) per channel."""
    return tuple((np.zeros(b), np.ones(b)) for (_, b), norm in zip(VGG_CHANNELS, VGG_NORM, strict=True) if norm)


def vgg_forward(params: Params, x, running=None) -> tuple[Any, tuple[tuple[Any, Any], ...]]:
    """(logits (N, n_classes), per-image statistics) of uint8 or float images (N, r, r, 3).

    Without ``running`` each normalised layer uses the image's own mean and (biased) variance over its H·W
    positions, PyTorch's training mode; the second value then holds, per normalised layer, the per-image means
    and *unbiased* variances (N, C) that PyTorch folds into the running statistics. With ``running`` (one
    (mean, var) pair of shape (C,) per layer, :func:`vgg_norm_init`'s layout) every image is normalised by
    them, PyTorch's eval mode, and the second value is empty. uint8 is scaled to [0, 1]. Spec §7.5."""
    h = x.astype(params[0].dtype) / 255.0 if x.dtype == jnp.uint8 else x
    stats = []
    layer = 0
    for i, (stride, norm) in enumerate(zip(VGG_STRIDES, VGG_NORM, strict=True)):
        h = (
            jax.lax.conv_general_dilated(
                h,
                params[2 * i],
                (stride, stride),
                ((1, 1), (1, 1)),
                dimension_numbers=("NHWC", "HWIO", "NHWC"),
            )
            + params[2 * i + 1]
        )
        if norm:
            if running is None:
                mean = h.mean(axis=(1, 2), keepdims=True)
                var = h.var(axis=(1, 2), keepdims=True)
                positions = h.shape[1] * h.shape[2]
                stats.append((mean[:, 0, 0, :], var[:, 0, 0, :] * positions / max(positions - 1, 1)))
            else:
                mean, var = running[layer]
            h = (h - mean) / jnp.sqrt(var + NORM_EPS)
            layer += 1
        h = jax.nn.relu(h)
    h = h.transpose(0, 3, 1, 2).reshape(h.shape[0], -1)
    return h @ params[-2] + params[-1], tuple(stats)


def update_running_stats(running, stats, mask, momentum: float = NORM_MOMENTUM):
    """PyTorch's running-statistics update of InstanceNorm2d after one training forward pass of the batch:
    running ← (1 − momentum)·running + momentum·(mean over the batch's rows with mask 1 of the per-image
    statistics); padded rows (mask 0) are not part of the pass. Spec §7.5 (issue 37)."""
    w = mask / mask.sum()
    return tuple(
        ((1 - momentum) * rm + momentum * (w @ mu), (1 - momentum) * rv + momentum * (w @ var))
        for (rm, rv), (mu, var) in zip(running, stats, strict=True)
    )


def vgg_apply(params: Params, x, running=None) -> Any:
    """Logits (N, n_classes) of uint8 or float images (N, r, r, 3); uint8 is scaled to [0, 1]. Instance
    statistics without ``running``; the running statistics (eval mode) with it (:func:`vgg_forward`)."""
    return vgg_forward(params, x, running)[0]


def linear_init(rng: np.random.Generator, d: int, n_classes: int) -> Params:
    """θ of ``nn.Linear(d, n_classes)`` drawn exactly as the numpy engine draws it: (w (d, l), b (l,))."""
    w, b = _init_theta(d, n_classes, 1, rng)
    return (w[:, 0, :].copy(), b[0].copy())


def linear_apply(params: Params, x) -> Any:
    """Logits x w + b of a linear softmax model (the numpy engine's ``head="softmax"``)."""
    return x @ params[0] + params[1]


def psi_batch(f, s, W, isp, mask=None):
    """Batch mean of ψ̂_i(θ, W) = −Σ_j f_ij ‖W_{:,j}‖² + 2 isp[s_i] Σ_j W_{s_i,j} f_ij − 1 (mask 0: left out).

    ``f`` (m, l) soft predictions, ``s`` (m,) groups, ``W`` (k, l), ``isp`` = 1/√p̂_S (k,). Its maximum over W
    is the multi-class ERMI of (Ŷ, S) on the batch (spec §3 "Inner maximizer"; tested)."""
    psi_i = -(f * (W * W).sum(axis=0)[None, :]).sum(axis=1) + 2 * isp[s] * (W[s] * f).sum(axis=1) - 1
    if mask is None:
        return psi_i.mean()
    return (psi_i * mask).sum() / mask.sum()


@dataclass(frozen=True)
class CnnResult:
    """Final θ (host arrays), W (k × l, or l × l with ``w_rows="classes"``), steps, timing, the device the steps
    ran on and the running normalisation statistics (None unless tracked: pass them to :func:`predict`)."""

    params: Params
    W: np.ndarray
    steps: int
    seconds: float
    images_per_second: float
    device: str
    config: DPFermiConfig
    sampling_probability: float | None = None
    running_stats: tuple[tuple[np.ndarray, np.ndarray], ...] | None = None

    @property
    def event(self):
        """The accounted event of a ``sensitive`` run (None otherwise): the numpy engine's
        :attr:`repro.learners.dp_fermi.DPFermiResult.event` for the same config, the exact strict accountant's
        :class:`~repro.privacy.strict_accountant.StrictEvent` (no add/remove amplification by subsampling: each
        record's unclipped part enters every noisy sum; issue 21, items 1–2)."""
        c = self.config
        if c.theta_clip != "sensitive" or c.noise_multiplier <= 0 or self.sampling_probability is None:
            return None
        return privacy_event(c, c.noise_multiplier, self.sampling_probability, self.steps)


def select_device(device: str = "auto"):
    """The JAX device for ``device``: ``auto`` (JAX's default: an accelerator when one is visible),
    ``cpu``, ``gpu`` or ``tpu``.

    Raises
    ------
    InvalidParameterError
        If the requested kind has no device here (names the fix)."""
    if device == "auto":
        return jax.devices()[0]
    if device not in ("cpu", "gpu", "tpu"):
        raise InvalidParameterError(f"device must be auto, cpu, gpu or tpu; got {device!r}.")
    try:
        return jax.devices(device)[0]
    except RuntimeError as err:
        raise InvalidParameterError(
            f"no {device} device is visible to JAX ({err}); use --set device=auto or cpu, or install "
            'the accelerator wheel (e.g. `pip install "jax[cuda12]"`).'
        ) from err


def _check_config(cfg: DPFermiConfig) -> None:
    unsupported = {
        "head": ("softmax",),
        "ermi_form": ("full",),
        "fairness": ("dp",),
        "theta_clip": ("none", "batch", "sensitive"),
        "sampling": ("shuffle", "uniform", "poisson"),
        "return_iterate": ("last",),
    }
    for key, ok in unsupported.items():
        if getattr(cfg, key) not in ok:
            raise InvalidParameterError(
                f"the JAX DP-FERMI trainer supports {key} in {ok}; got {getattr(cfg, key)!r} "
                "(use repro.learners.dp_fermi for the other modes)."
            )
    if (cfg.theta_clip == "sensitive") != (cfg.sampling == "poisson"):
        raise InvalidParameterError(
            "the JAX trainer's strict mode is theta_clip='sensitive' with sampling='poisson' (the accounted "
            f"DP-SGD event); got theta_clip={cfg.theta_clip!r}, sampling={cfg.sampling!r}."
        )


def _project_w(W: Any, kind: str, radius: float) -> Any:
    """W back onto its set (the numpy engine's ``_project``): the box [−r, r] or the Frobenius ball of radius r."""
    if kind == "box":
        return jnp.clip(W, -radius, radius)
    norm_w = jnp.sqrt(jnp.sum(W * W))
    return W * jnp.where(norm_w > radius, radius / jnp.maximum(norm_w, 1e-300), 1.0)


@functools.lru_cache(maxsize=16)
def _make_step(
    apply: Callable,
    theta_clip: str,
    clip_norm: float,
    lr_theta: float,
    lr_w: float,
    w_projection: str,
    w_radius: float,
    shapes: tuple[tuple[int, ...], ...],
    momentum: float | None = None,
):
    """The jitted step; cached on everything it closes over, so the runs of one λ grid compile once. With
    ``momentum`` (``apply`` is then :func:`vgg_forward`) the step also moves the running normalisation
    statistics by the batch's forward pass, as PyTorch's training mode does."""
    sizes = [int(np.prod(s)) for s in shapes]
    splits = np.cumsum(sizes)[:-1].tolist()
    forward = apply if momentum is not None else (lambda p, x: (apply(p, x), ()))

    def objective(params, W, xb, yb, sb, mask, isp, lam):
        logits, stats = forward(params, xb)
        logp = jax.nn.log_softmax(logits, axis=1)
        f = jnp.exp(logp)
        ce = -(jnp.take_along_axis(logp, yb[:, None], axis=1)[:, 0] * mask).sum() / mask.sum()
        return ce + lam * psi_batch(f, sb, W, isp, mask), stats

    grad = jax.grad(objective, argnums=(0, 1), has_aux=True)

    def step(params, W, running, X, Y, S, idx, mask, isp, lam, u, V, th_std, w_std):
        xb, yb, sb = X[idx], Y[idx], S[idx]
        (g, gW), stats = grad(params, W, xb, yb, sb, mask, isp, lam)
        if momentum is not None:
            running = update_running_stats(running, stats, mask, momentum)
        if theta_clip == "batch":
            norm = jnp.sqrt(sum(jnp.sum(t * t) for t in g))
            div = jnp.maximum(1.0, norm / clip_norm)
            g = tuple(t / div for t in g)
        noise = jnp.split(u, splits) if splits else [u]
        params = tuple(
            p - lr_theta * (t + n.reshape(p.shape) * th_std) for p, t, n in zip(params, g, noise, strict=True)
        )
        W = W + lr_w * (gW + V * w_std)
        return params, _project_w(W, w_projection, w_radius), running

    return jax.jit(step)


@functools.lru_cache(maxsize=16)
def _make_strict_step(
    apply: Callable,
    clip_norm: float,
    lr_theta: float,
    lr_w: float,
    w_projection: str,
    w_radius: float,
    shapes: tuple[tuple[int, ...], ...],
):
    """The jitted step of the ``sensitive`` (strict) mode, the numpy engine's semantics: the s-independent
    part Σ_i [∇ℓ_i + λ∇(−Σ_j f_ij‖W_{:,j}‖²)] unclipped, each sample's s-dependent part
    ∇_θ 2 isp[s_i] Σ_j W_{s_i,j} f_ij clipped to ``clip_norm`` (per-sample gradients by ``jax.vmap``) and
    scaled by λ, the W gradient Σ_i ∇_W ψ̂_i unscaled, all divided by the expected batch size."""
    splits = np.cumsum([int(np.prod(s)) for s in shapes])[:-1].tolist()

    def ns_objective(params, W, xb, yb, mask, lam):
        logp = jax.nn.log_softmax(apply(params, xb), axis=1)
        f = jnp.exp(logp)
        ce = -(jnp.take_along_axis(logp, yb[:, None], axis=1)[:, 0] * mask).sum()
        psi_ns = (-(f * (W * W).sum(axis=0)[None, :]).sum(axis=1) * mask).sum()
        return ce + lam * psi_ns

    def h_single(params, x, s, W, isp):
        f = jax.nn.softmax(apply(params, x[None])[0])
        return 2 * isp[s] * (W[s] * f).sum()

    per_sample = jax.vmap(jax.grad(h_single), in_axes=(None, 0, 0, None, None))

    def psi_sum(W, f, sb, isp, mask):
        psi_i = -(f * (W * W).sum(axis=0)[None, :]).sum(axis=1) + 2 * isp[sb] * (W[sb] * f).sum(axis=1) - 1
        return (psi_i * mask).sum()

    def step(params, W, X, Y, S, idx, mask, isp, lam, u, V, th_std, w_std, denom):
        xb, yb, sb = X[idx], Y[idx], S[idx]
        g = jax.grad(ns_objective)(params, W, xb, yb, mask, lam)
        gs = per_sample(params, xb, sb, W, isp)
        norms = jnp.sqrt(sum(jnp.sum(t.reshape(t.shape[0], -1) ** 2, axis=1) for t in gs))
        clip = mask * jnp.minimum(1.0, clip_norm / (norms + 1e-12))
        g = tuple(a + lam * jnp.tensordot(clip, b, axes=1) for a, b in zip(g, gs, strict=True))
        f = jax.nn.softmax(apply(params, xb), axis=1)
        gW = jax.grad(psi_sum)(W, f, sb, isp, mask)
        noise = jnp.split(u, splits) if splits else [u]
        params = tuple(
            p - (lr_theta / denom) * (t + n.reshape(p.shape) * th_std)
            for p, t, n in zip(params, g, noise, strict=True)
        )
        W = W + (lr_w / denom) * (gW + V * w_std)
        return params, _project_w(W, w_projection, w_radius)

    return jax.jit(step)


@functools.lru_cache(maxsize=16)
def _noise_fn(n_params: int, shape: tuple[int, int], dtype: Any):
    """Standard normals (θ noise (n_params,), W noise ``shape``) of step t, drawn on the device."""

    def draw(key, t):
        ku, kv = jax.random.split(jax.random.fold_in(key, t))
        return jax.random.normal(ku, (n_params,), dtype), jax.random.normal(kv, shape, dtype)

    return jax.jit(draw)


def train_dp_fermi_jax(
    X: np.ndarray,
    y: np.ndarray,
    s: np.ndarray,
    config: DPFermiConfig,
    *,
    rng: np.random.Generator,
    model: str = "vgg",
    device: str = "auto",
    n_classes: int | None = None,
    noise_source: str = "host",
    progress: Callable[[int, int, float], None] | None = None,
    norm_stats: str = "running",
    norm_momentum: float = NORM_MOMENTUM,
    w_rows: str = "groups",
    on_epoch: Callable[[int, Params, Any], None] | None = None,
) -> CnnResult:
    """Train one DP-FERMI model (reference semantics of the numpy engine) with a JAX model.

    Parameters
    ----------
    X, y, s
        Inputs (``vgg``: uint8 images (n, r, r, 3); ``linear``: features (n, d)), labels 0..l−1,
        groups 0..k−1.
    config
        :class:`repro.learners.dp_fermi.DPFermiConfig` with ``head="softmax"``, ``ermi_form="full"`` and
        ``theta_clip`` ``none`` or ``batch``; σ_θ, σ_W as from Theorem 3.3.
    rng
        Source of the initialisation, batches and noise, consumed in the numpy engine's order.
    model
        ``vgg`` (the paper's CNN) or ``linear`` (softmax regression; the cross-check against the engine).
    device
        See :func:`select_device`.
    n_classes
        Number of classes l (default: max label + 1, at least 2, as the numpy engine infers it).
    noise_source
        ``host``: every standard normal from ``rng`` in the numpy engine's order (bit-for-bit the engine's
        stream; the default). ``device``: the per-step normals from ``jax.random`` on the device, keyed by one
        draw from ``rng`` after W₀ (same distribution, no 1.6M host normals and transfers per step: for
        accelerators).
    progress
        Called as ``progress(step, total_steps, images_per_second)`` about 20 times per run.
    norm_stats
        ``vgg`` on the reference path: ``running`` (the authors' ``track_running_stats`` + ``model.eval()``:
        running statistics, updated by each batch's forward pass with ``norm_momentum``, returned in
        :attr:`CnnResult.running_stats` for :func:`predict`) or ``instance`` (each image's own statistics
        at test time too; no running statistics). The strict mode and ``linear`` have none to track.
    w_rows
        ``groups``: W is k × l (the paper; the numpy engine). ``classes``: W is l × l as in the authors' code
        (needs l ≥ k; only its first k rows enter the cross term, all rows the rest).
    on_epoch
        Shuffled epochs only: called as ``on_epoch(epoch, params, running_stats)`` after each epoch's last
        step (host arrays; ``running_stats`` None unless tracked), e.g. to evaluate the iterate as training goes.

    Spec: seed-004 §4.1, §4.3, §7.5; issue 37.
    """
    return train_dp_fermi_jax_many(X, y, s, [config], rng=rng, model=model, device=device, n_classes=n_classes,
                                   noise_source=noise_source, progress=progress, norm_stats=norm_stats,
                                   norm_momentum=norm_momentum, w_rows=w_rows, on_epoch=on_epoch)[0]


#: fields in which the models of one :func:`train_dp_fermi_jax_many` call may differ (λ and the noise levels)
MANY_FIELDS = ("lam", "sigma_theta", "sigma_w", "noise_multiplier")


def train_dp_fermi_jax_many(
    X: np.ndarray,
    y: np.ndarray,
    s: np.ndarray,
    configs: list[DPFermiConfig],
    *,
    rng: np.random.Generator,
    model: str = "vgg",
    device: str = "auto",
    n_classes: int | None = None,
    noise_source: str = "host",
    progress: Callable[[int, int, float], None] | None = None,
    norm_stats: str = "running",
    norm_momentum: float = NORM_MOMENTUM,
    w_rows: str = "groups",
    on_epoch: Callable[[int, Params, Any], None] | None = None,
    vectorize: bool | None = None,
) -> list[CnnResult]:
    """Train several DP-FERMI models that differ only in λ and the noise levels (:data:`MANY_FIELDS`) together:
    one program whose step is ``vmap``-ed over the models (issue 34, item 4).

    The models share the initialisation, the batches and the standard-normal noise draws (common random
    numbers, as one trial's λ grid does when each model restarts the trial's stream), so each equals its run
    alone by :func:`train_dp_fermi_jax` with the same generator up to floating-point rounding (float32 on an
    accelerator; tested at 16 px). One model runs the unbatched step, exactly :func:`train_dp_fermi_jax`.
    ``vectorize``: ``vmap`` the models (the default on an accelerator) or train them one after the other from
    the same generator state (the default on a CPU, where XLA's batched convolutions are slower than the
    models in turn: measured, the 3-model cpu profile trial took over 20 CPU-minutes against ≈ 13 in turn);
    in turn, each model is exactly :func:`train_dp_fermi_jax` of that state. Other parameters as
    :func:`train_dp_fermi_jax`; ``on_epoch`` only with one model. Spec: seed-004 §7.5–§7.6.
    """
    configs = list(configs)
    if not configs:
        raise InvalidParameterError("train_dp_fermi_jax_many needs at least one configuration.")
    cfg = configs[0]
    for c in configs[1:]:
        if dataclasses.replace(c, **{f: getattr(cfg, f) for f in MANY_FIELDS}) != cfg:
            raise InvalidParameterError(
                f"models trained together may differ only in {', '.join(MANY_FIELDS)}; train the others apart.")
    if on_epoch is not None and len(configs) > 1:
        raise InvalidParameterError("on_epoch observes one model; train the models apart to observe each.")
    if vectorize is None:
        vectorize = select_device(device).platform != "cpu"
    if len(configs) > 1 and not vectorize:  # in turn, each from the generator's state at the start
        start = copy.deepcopy(rng.bit_generator.state)
        outs = []
        for c in configs:
            rng.bit_generator.state = copy.deepcopy(start)
            outs += train_dp_fermi_jax_many(X, y, s, [c], rng=rng, model=model, device=device, n_classes=n_classes,
                                            noise_source=noise_source, progress=progress, norm_stats=norm_stats,
                                            norm_momentum=norm_momentum, w_rows=w_rows)
        return outs
    G = len(configs)
    for c in configs:
        _check_config(c)
    if norm_stats not in NORM_STATS:
        raise InvalidParameterError(f"norm_stats must be one of {NORM_STATS}; got {norm_stats!r}.")
    if w_rows not in W_ROWS:
        raise InvalidParameterError(f"w_rows must be one of {W_ROWS}; got {w_rows!r}.")
    if not 0 < norm_momentum <= 1:
        raise InvalidParameterError(f"norm_momentum must lie in (0, 1]; got {norm_momentum}.")
    yi = np.asarray(y).astype(np.int64)
    s = np.asarray(s, dtype=np.int64)
    n = yi.size
    if X.shape[0] != n or s.shape != (n,):
        raise InvalidParameterError(f"X, y, s must have n rows; got {X.shape}, {yi.shape}, {s.shape}.")
    if yi.min() < 0:
        raise InvalidParameterError("labels must be integers 0, 1, … (class indices).")
    inferred = max(int(yi.max()) + 1, 2)
    if n_classes is None:
        n_classes = inferred
    elif n_classes < inferred:
        raise InvalidParameterError(f"n_classes={n_classes} but the labels go up to {inferred - 1}.")
    k = int(s.max()) + 1
    p = np.bincount(s, minlength=k) / n
    if np.any(p <= 0):
        raise InvalidParameterError(f"every group must appear in the training set; got proportions {p}.")
    isp = 1.0 / np.sqrt(p)
    dev = select_device(device)
    dtype = jnp.zeros(()).dtype  # float32, or float64 under jax.enable_x64

    if noise_source not in ("host", "device"):
        raise InvalidParameterError(f"noise_source must be 'host' or 'device'; got {noise_source!r}.")
    if model == "vgg":
        if X.ndim != 4 or X.shape[3] != 3 or X.shape[1] != X.shape[2] or X.dtype != np.uint8:
            raise InvalidParameterError(f"vgg needs uint8 images (n, r, r, 3); got {X.dtype} {X.shape}.")
        params0 = vgg_init(rng, X.shape[1], n_classes)
        apply = vgg_apply
    elif model == "linear":
        params0 = linear_init(rng, X.shape[1], n_classes)
        apply = linear_apply
    else:
        raise InvalidParameterError(f"model must be 'vgg' or 'linear'; got {model!r}.")
    if w_rows == "classes" and n_classes < k:
        raise InvalidParameterError(f"w_rows='classes' needs at least as many classes as groups; got {n_classes} < {k}.")
    rows = n_classes if w_rows == "classes" else k
    W0 = rng.standard_normal((rows, n_classes)) if cfg.w_init == "normal" else np.zeros((rows, n_classes))
    noise_key = int(rng.integers(0, 2**32)) if noise_source == "device" else None
    shapes = [q.shape for q in params0]
    n_params = sum(int(np.prod(sh)) for sh in shapes)
    lam = np.array([c.lam for c in configs])
    strict = cfg.theta_clip == "sensitive"
    track = model == "vgg" and norm_stats == "running" and not strict
    q, steps = schedule(cfg, n)   # strict ⇔ Poisson (_check_config): q is None on the reference path
    th_std, (w_std,), draw_theta, draw_w = noise_stds(configs, [isp], "full", 0)   # the numpy engine's noise
    if strict:  # the numpy engine's "sensitive" mode: joint (θ, W) sensitivity/noise ratio 1/z
        denom = float(max(int(n * q), 1))
        if rows != k:
            raise InvalidParameterError("the strict mode trains the paper's k × l W (w_rows='groups').")
        if len({c.clip_norm for c in configs}) > 1:
            raise InvalidParameterError("the strict mode clips every model to one clip_norm; got several.")
        step_fn = _make_strict_step(
            apply, cfg.clip_norm, cfg.lr_theta, cfg.lr_w, cfg.w_projection, cfg.w_radius, tuple(shapes)
        )
    else:
        step_fn = _make_step(
            vgg_forward if track else apply,
            cfg.theta_clip,
            cfg.clip_norm,
            cfg.lr_theta,
            cfg.lr_w,
            cfg.w_projection,
            cfg.w_radius,
            tuple(shapes),
            norm_momentum if track else None,
        )
    if G == 1:  # the unbatched step: exactly one model's program
        lam, th_std, w_std = float(lam[0]), float(th_std[0]), float(w_std[0])
    else:  # models on axis 0 of θ, W, the running statistics, λ and the noise levels; draws shared
        step_fn = _batched(step_fn, strict)
    put = lambda a, dt=None: jax.device_put(np.asarray(a, dtype=dt), dev)  # noqa: E731
    stack = (lambda a: np.stack([a] * G)) if G > 1 else (lambda a: a)  # noqa: E731
    with jax.default_device(dev):
        Xd = put(X, np.uint8 if model == "vgg" else dtype)
        Yd, Sd = put(yi, np.int32), put(s, np.int32)
        params = tuple(put(stack(q), dtype) for q in params0)
        W = put(stack(W0), dtype)
        running = tuple((put(stack(a), dtype), put(stack(b), dtype)) for a, b in vgg_norm_init()) if track else ()
        if G > 1:
            lam, th_std, w_std = put(lam, dtype), put(th_std, dtype), put(w_std, dtype)
        isp_d = put(isp, dtype)
        zeros_u, zeros_v = put(np.zeros(n_params), dtype), put(np.zeros((rows, n_classes)), dtype)
        if noise_key is not None:
            key = jax.device_put(jax.random.key(noise_key), dev)
            draw = _noise_fn(n_params, (rows, n_classes), dtype)
        B = min(cfg.batch_size, n)
        t0 = time.perf_counter()
        done = 0
        every = max(1, steps // 20)
        per_epoch = steps // cfg.epochs if cfg.sampling == "shuffle" else None
        for t, idx in enumerate(_batch_indices(n, cfg, rng), start=1):
            m = idx.size
            size = B * max(1, math.ceil(m / B))  # Poisson batches vary: pad to a multiple of B (few compiles)
            pad = np.zeros(size, dtype=np.int32)
            pad[:m] = idx
            mask = np.zeros(size)
            mask[:m] = 1.0
            if noise_key is None:
                u = put(rng.standard_normal(n_params), dtype) if draw_theta else zeros_u
                V = put(rng.standard_normal((rows, n_classes)), dtype) if draw_w else zeros_v
            else:
                u, V = draw(key, t) if (draw_theta or draw_w) else (zeros_u, zeros_v)
            args = (Xd, Yd, Sd, put(pad), put(mask, dtype), isp_d, lam, u, V, th_std, w_std)
            if strict:
                params, W = step_fn(params, W, *args, denom)
            else:
                params, W, running = step_fn(params, W, running, *args)
            done += m * G
            if on_epoch is not None and per_epoch is not None and t % per_epoch == 0:
                on_epoch(t // per_epoch, tuple(np.asarray(leaf) for leaf in params),
                         tuple((np.asarray(a), np.asarray(b)) for a, b in running) if track else None)
            if progress is not None and (t % every == 0 or t == steps):
                jax.block_until_ready(W)
                progress(t, steps, done / max(time.perf_counter() - t0, 1e-9))
        jax.block_until_ready(W)
        seconds = time.perf_counter() - t0
    host = lambda a, g: np.asarray(a[g] if G > 1 else a)  # noqa: E731
    return [
        CnnResult(
            tuple(host(leaf, g) for leaf in params),
            host(W, g),
            steps,
            seconds,
            done / max(seconds, 1e-9),
            f"{dev.platform}:{dev.id}",
            c,
            q,
            tuple((host(a, g), host(b, g)) for a, b in running) if track else None,
        )
        for g, c in enumerate(configs)
    ]


def _batched(step_fn: Callable, strict: bool) -> Callable:
    """``step_fn`` vmapped over the models: θ, W, the running statistics (reference step), λ and the noise
    levels per model (axis 0); the data, the batch, the mask, 1/√p̂ and the standard normals shared."""
    inner = step_fn.__wrapped__ if hasattr(step_fn, "__wrapped__") else step_fn
    if strict:  # (params, W, X, Y, S, idx, mask, isp, lam, u, V, th_std, w_std, denom)
        axes = (0, 0, None, None, None, None, None, None, 0, None, None, 0, 0, None)
    else:  # (params, W, running, X, Y, S, idx, mask, isp, lam, u, V, th_std, w_std)
        axes = (0, 0, 0, None, None, None, None, None, None, 0, None, None, 0, 0)
    return jax.jit(jax.vmap(inner, in_axes=axes))


@functools.lru_cache(maxsize=4)
def _predict_fn(apply: Callable):
    return jax.jit(lambda p, x: jax.nn.softmax(apply(p, x), axis=1))


@functools.lru_cache(maxsize=1)
def _predict_running_fn():
    return jax.jit(lambda p, r, x: jax.nn.softmax(vgg_apply(p, x, r), axis=1))


def predict(
    params: Params,
    X: np.ndarray,
    *,
    model: str = "vgg",
    batch: int = 512,
    device: str = "auto",
    running_stats: tuple[tuple[np.ndarray, np.ndarray], ...] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(argmax labels, class probabilities) of a trained model, in chunks of ``batch`` rows. ``vgg`` with
    ``running_stats`` (:attr:`CnnResult.running_stats`) normalises by them, the authors' eval mode; without,
    each image by its own statistics."""
    apply = {"vgg": vgg_apply, "linear": linear_apply}.get(model)
    if apply is None:
        raise InvalidParameterError(f"model must be 'vgg' or 'linear'; got {model!r}.")
    if running_stats is not None and model != "vgg":
        raise InvalidParameterError("running normalisation statistics belong to the vgg model only.")
    dev = select_device(device)
    if running_stats is None:
        fn = _predict_fn(apply)
    else:
        inner = _predict_running_fn()
        fn = lambda p, x: inner(p, rs, x)  # noqa: E731
    with jax.default_device(dev):
        pd = tuple(jax.device_put(q, dev) for q in params)
        if running_stats is not None:
            rs = tuple((jax.device_put(a, dev), jax.device_put(b, dev)) for a, b in running_stats)
        probs = [
            np.asarray(fn(pd, jax.device_put(X[i : i + batch], dev))) for i in range(0, X.shape[0], batch)
        ]
    prob = np.concatenate(probs, axis=0) if probs else np.zeros((0, 0))
    return prob.argmax(axis=1), prob
