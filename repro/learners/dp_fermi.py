"""DP-FERMI (Lowy, Gupta, Razaviyayn, ICLR 2023): noisy two-timescale DP-SGDA for fair logistic
regression — the ONE engine of the package, with switches for the paper's math and the authors' code.

Spec: seed-004-dpfermi.md §2–§5 (ERMI, min–max form, Algorithm 1, Theorem 3.3 noise levels), §4.3
(what the authors' code does) and §4.4 (the recommended switches and the strict-DP mode);
seed-003-thesis.md §3.3 (the thesis's copy of that code: all-feature noise formulas, L_θ = 5, C = 5,
η_θ = 0.005, η_W = 0.01).

Model: logistic regression on the non-sensitive features only, soft prediction F = σ(θᵀx̃) (binary)
or F = softmax(Θᵀx̃) (``head="softmax"``, l classes; closed-form gradients as for the binary head:
d(CE)/dz = F − e_y and dψ̂_i/dz_c = F_c (c_c − Σ_j F_j c_j), c_j = −‖W_{:,j}‖² + 2W_{s_i,j}/√p̂_S(s_i)).
Objective: min_θ max_W  BCE(θ) + λ·ψ̄(θ, W) with the per-sample

    ψ̂_i = −Σ_j f_j ‖W_{:,j}‖² + (2/√p̂_S(s_i)) Σ_j W_{s_i,j} f_j − 1

whose maximum over W is the ERMI of (Ŷ, S). Switches (:class:`DPFermiConfig`):

=====================  =======================================================  ==================
switch                 options                                                  authors' code [C0]
=====================  =======================================================  ==================
``head``               ``logistic`` (binary: F = (1−σ(θᵀx̃), σ(θᵀx̃))) /          ``logistic``
                       ``softmax`` (l classes: F = softmax(Θᵀx̃), Θ ∈ R^{(d+1)×l};  (UTKFace: softmax)
                       labels 0..l−1, prediction argmax)
``ermi_form``          ``full`` (W ∈ R^{k×2}, f = (1−σ, σ)) / ``code_1x1``      ``code_1x1``
                       (W ∈ R^{1×1}; ``torch.trace`` keeps only the term of
                       group ``code_group``, §4.3)
``fairness``           ``dp`` (demographic parity) / ``eo`` (equalized odds:    ``dp`` / ``eo``
                       one W and P̂_{S|Y=y} per label)
``eo_weighting``       ``sum`` (each label part a mean over its own samples,    ``sum``
                       parts summed: ≈ Σ_y ERMI_y) / ``label_prior`` (one
                       mean over the whole batch: eq. (5)'s p̂_Y(y) weights)
``theta_clip``         ``none`` / ``batch`` (clip the minibatch gradient to      ``batch``, L = 5
                       L_θ) / ``per_sample`` (clip each sample's joint
                       (θ, W) gradient to ``clip_norm``: DP w.r.t. all
                       features) / ``sensitive`` (clip only each sample's
                       s-dependent θ part to ``clip_norm``: DP w.r.t. S)
``theta_noise_scale``  ``one`` / ``lambda``                                     ``one``
``w_noise_scale``      ``lambda`` / ``one``                                     ``lambda`` ([C0])
``w_projection``       ``frobenius`` / ``box``                                  ``frobenius``, 5
``w_init``             ``normal`` / ``zeros``                                   ``normal``
``sampling``           ``shuffle`` / ``poisson`` / ``uniform``                   ``shuffle``
``return_iterate``     ``last`` / ``random``                                    ``last``
=====================  =======================================================  ==================

Privacy modes (the noise sits in the config, the accounting in the caller):

- ``none``/``batch``: N(0, σ_θ²) on the θ minibatch gradient (×λ or ×1) and N(0, σ_W²) on the W
  gradient (×λ or ×1); σ's from Theorem 3.3 (:func:`repro.privacy.dpfermi_noise.sensitive_only_noise`)
  or the thesis's all-feature formulas (:func:`repro.privacy.dpfermi_noise.thesis_all_feature_noise`).
  Nominal ε (spec §5 caveats).
- ``per_sample`` (strict, all features): plain DP-SGD(A) on the joint parameter (θ, W). Each sample's
  (∇_θ(ℓ_i + λψ̂_i), ∇_W ψ̂_i) is clipped to C = ``clip_norm`` and N(0, (zC)²) is added to the sum,
  divided by the expected batch size. Event: :func:`repro.privacy.accounting.dp_sgd_event` (z, q, T).
- ``sensitive`` (strict, sensitive attribute only; spec §4.4 "Strict-DP mode"): only the s-dependent
  parts get noise. θ: g_i^sens = 2σ(1−σ)x̃_i (W_{s_i,1} − W_{s_i,0})/√p̂_S(s_i) is clipped to C_s =
  ``clip_norm`` (replace-one sensitivity of the sum 2C_s) and λ·N(0, (√2·z·2C_s)²) is added; ∇ℓ_i and the
  −Σ_j ∇F_j‖W_{:,j}‖² part need no noise (they depend on (x, y, θ, W) only, W is already private).
  W: G_i^sens = 2 P̂_S^{−1/2} e_{s_i} f_iᵀ is bounded without clipping (replace-one sensitivity
  Δ_W = 2√(1/p̂_a + 1/p̂_b) for the two smallest groups, ≤ √(8/ρ)); N(0, (√2·z·Δ_W)²) is added. The
  two blocks released at one step form one Gaussian mechanism whose joint sensitivity/noise ratio is
  1/z. Changing s_i keeps the record in or out of the batch, but its non-sensitive part c (∇ℓ_i and the
  W-norm term, not clipped) enters the same noisy sum, so one step is the pair
  (1−q)N(0) + qN(c + a) vs (1−q)N(0) + qN(c + b). For c ≠ 0 this is NOT dominated by the add/remove
  subsampled Gaussian (a large c tells whether the record was sampled; issue 14, defect 1). It is
  dominated by the pair that also reveals the sampling bit, whose T-fold composition is accounted exactly
  by :mod:`repro.privacy.strict_accountant` (event :class:`~repro.privacy.strict_accountant.StrictEvent`;
  issue 21, item 2); checked numerically against the PLD of the true pair for large c in the tests.
  P̂_S is treated as public (spec §5 caveat 3; ours): *public-statistics caveat*.

Training many models at once (:func:`train_dp_fermi_batch`): configurations that differ only in
λ and the noise levels are trained together on the same batches with the same standard-normal
noise draws (common random numbers, like the authors' per-seed ``torch.manual_seed`` across λ), so
a step is one (m × d)·(d × G) product. Each model is exactly the run that :func:`train_dp_fermi` would
give it alone with the same generator, up to floating-point summation order; its own privacy is
unchanged (sharing randomness across released models is not part of any one model's guarantee).

Calibration: this module is the one place that computes DP-FERMI's schedule (q, T) (:func:`schedule`) and
its noise (:func:`calibrate_privacy` for the accountant-calibrated modes, :func:`reference_noise` for
Theorem 3.3's σ's); the learner unit's ``configure`` (:mod:`repro.learners.dp_fermi_unit`) decides with them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Literal

import numpy as np
from scipy.special import expit

from repro.errors import InvalidParameterError
from repro.learners import dp_sgd
from repro.learners.logistic import LogisticModel, SoftmaxModel, torch_linear_init
from repro.privacy import sampling
from repro.privacy.accounting import dp_sgd_event
from repro.privacy.dpfermi_noise import NoiseLevels, theorem33_noise
from repro.privacy.dpfermi_noise import noise_multiplier as reference_multiplier
from repro.privacy.guarantee import STANDARDISED_FEATURES, Guarantee, Label, Neighbouring
from repro.privacy.strict_accountant import ACCOUNTANT_NAME, StrictEvent, calibrate_strict_noise_multiplier

__all__ = ["DPFermiConfig", "DPFermiResult", "train_dp_fermi", "train_dp_fermi_batch", "prepare_dp_fermi",
           "DPFermiPlan",
           "ermi", "REFERENCE", "privacy_event", "calibrate_privacy", "accountant_name", "guarantee",
           "STRICT_ALL_FEATURES", "STRICT_SENSITIVE", "PER_MODEL_FIELDS", "schedule", "reference_noise",
           "noise_stds"]

_CHOICES = {
    "head": ("logistic", "softmax"),
    "ermi_form": ("full", "code_1x1"),
    "fairness": ("dp", "eo"),
    "eo_weighting": ("sum", "label_prior"),
    "theta_clip": ("none", "batch", "per_sample", "sensitive"),
    "theta_noise_scale": ("one", "lambda"),
    "w_noise_scale": ("lambda", "one"),
    "w_projection": ("frobenius", "box"),
    "w_init": ("normal", "zeros"),
    "sampling": ("shuffle", "poisson", "uniform"),
    "return_iterate": ("last", "random"),
}

#: Observer of the iterates: (step t, Θ (d, G, L), b (G, L), {label: W (G, k, l)}) → None.
StepCallback = Callable[[int, np.ndarray, np.ndarray, dict], None]

#: Fields in which the configurations of one :func:`train_dp_fermi_batch` call may differ.
PER_MODEL_FIELDS = ("lam", "sigma_theta", "sigma_w", "noise_multiplier", "clip_norm", "w_radius", "lr_theta", "lr_w")


@dataclass(frozen=True)
class DPFermiConfig:
    """Hyperparameters and behaviour switches of :func:`train_dp_fermi` (see the module table).

    ``sigma_theta`` / ``sigma_w`` are the std of the Gaussian noise added to the θ and W steps in
    the ``none``/``batch`` clip modes; ``noise_multiplier`` (z) is used in the ``per_sample`` and
    ``sensitive`` modes.
    """

    lam: float = 1.0
    head: Literal["logistic", "softmax"] = "logistic"
    lr_theta: float = 0.005
    lr_w: float = 0.01
    batch_size: int = 1024
    epochs: int = 50
    ermi_form: Literal["full", "code_1x1"] = "code_1x1"
    code_group: int = 0
    fairness: Literal["dp", "eo"] = "dp"
    eo_weighting: Literal["sum", "label_prior"] = "sum"
    theta_clip: Literal["none", "batch", "per_sample", "sensitive"] = "batch"
    clip_norm: float = 5.0
    sigma_theta: float = 0.0
    sigma_w: float = 0.0
    noise_multiplier: float = 0.0
    theta_noise_scale: Literal["one", "lambda"] = "one"
    w_noise_scale: Literal["lambda", "one"] = "lambda"
    w_projection: Literal["frobenius", "box"] = "frobenius"
    w_radius: float = 5.0
    w_init: Literal["normal", "zeros"] = "normal"
    sampling: Literal["shuffle", "poisson", "uniform"] = "shuffle"
    return_iterate: Literal["last", "random"] = "last"

    def __post_init__(self) -> None:
        for key, options in _CHOICES.items():
            if getattr(self, key) not in options:
                raise InvalidParameterError(
                    f"DP-FERMI option {key!r} must be one of {', '.join(options)}; got {getattr(self, key)!r}.")
        if self.lam < 0:
            raise InvalidParameterError(f"lambda must be >= 0; got {self.lam}.")
        for key in ("lr_theta", "lr_w", "clip_norm", "w_radius"):
            if not getattr(self, key) > 0:
                raise InvalidParameterError(f"{key} must be > 0; got {getattr(self, key)}.")
        for key in ("sigma_theta", "sigma_w", "noise_multiplier"):
            if getattr(self, key) < 0:
                raise InvalidParameterError(f"{key} must be >= 0; got {getattr(self, key)}.")
        if self.batch_size < 1 or self.epochs < 1:
            raise InvalidParameterError(
                f"batch_size and epochs must be >= 1; got {self.batch_size}, {self.epochs}.")
        if self.head == "softmax" and self.ermi_form != "full":
            raise InvalidParameterError("head='softmax' needs ermi_form='full' (W ∈ R^(k×l)); code_1x1 is binary.")
        if self.fairness == "eo" and self.per_sample_privacy and self.eo_weighting != "label_prior":
            raise InvalidParameterError(
                f"theta_clip={self.theta_clip!r} bounds each sample's share of ONE batch mean; use "
                "eo_weighting='label_prior' (eq. (5)) with it.")

    @property
    def per_sample_privacy(self) -> bool:
        """True in the accountant-calibrated modes (``per_sample``, ``sensitive``)."""
        return self.theta_clip in ("per_sample", "sensitive")

    def with_(self, **changes) -> DPFermiConfig:
        return replace(self, **changes)


#: The authors' / thesis's code path [C0] (code_1x1 ERMI, batch clip 5, θ noise ×1, W noise ×λ); set the σ's.
REFERENCE = DPFermiConfig()
#: Paper math, per-sample clipping of the joint (θ, W) gradient, Poisson sampling: DP w.r.t. all features.
STRICT_ALL_FEATURES = DPFermiConfig(
    ermi_form="full", theta_clip="per_sample", clip_norm=1.5, w_init="zeros", sampling="poisson",
    theta_noise_scale="one", w_noise_scale="one", eo_weighting="label_prior")
#: Paper math, noise only on the s-dependent parts (spec §4.4 strict-DP mode): DP w.r.t. S. C_s = 1 (ours).
STRICT_SENSITIVE = DPFermiConfig(
    ermi_form="full", theta_clip="sensitive", clip_norm=1.0, w_init="zeros", sampling="poisson",
    theta_noise_scale="lambda", w_noise_scale="one", eo_weighting="label_prior")


def schedule(config: DPFermiConfig, n: int) -> tuple[float | None, int]:
    """(q, T) of ``config`` on ``n`` training rows: Poisson sampling with Opacus's q = 1/⌈n/B⌉ and
    T = epochs·⌈n/B⌉ (:func:`repro.learners.dp_sgd.schedule`), or (None, epochs·⌈n/B⌉) for shuffled or
    uniform batches. Every engine and caller reads (q, T) here. Spec: seed-004 §4.3–§4.4."""
    if n < 1:
        raise InvalidParameterError(f"n must be >= 1; got {n}.")
    if config.sampling == "poisson":
        return dp_sgd.schedule(n, config.batch_size, config.epochs)
    return None, config.epochs * math.ceil(n / config.batch_size)


def reference_noise(config: DPFermiConfig, n: int, epsilon: float, delta: float, rho: float, *,
                    scope: Literal["sensitive", "all"] = "sensitive", warn: bool = True
                    ) -> tuple[NoiseLevels, float, dict]:
    """Theorem 3.3's σ_θ and σ_W for ``config`` on ``n`` rows at (ε, δ) with group floor ρ (L_θ = its clip
    norm, D = its W radius, T from :func:`schedule`), with the theorem's conditions: part (a) (``sensitive``) or
    the thesis's all-feature formulas (``all``). For ``sensitive`` also part (a)'s block multiplier z and the
    paper's model of that noise (spec §5 caveat 1): each block T Poisson-subsampled Gaussians at q = B/n, the
    joint (θ, W) release one at z/√2 (indicative only: the code clips the batch gradient, not each sample's);
    z = 0 and no events for ε = ∞ or ``all``. Spec: seed-004 §5; seed-003 §3.3."""
    _, steps = schedule(config, n)
    levels = theorem33_noise(n, steps, config.batch_size, rho, epsilon, delta, scope=scope,
                             lipschitz=config.clip_norm, w_radius=config.w_radius, warn=warn)
    z = reference_multiplier(n, steps, config.batch_size, epsilon, delta) if scope == "sensitive" else 0.0
    if z == 0.0:
        return levels, 0.0, {}
    q = dp_sgd.schedule(n, config.batch_size, 1, rule="B/n")[0]
    return levels, z, {"joint": dp_sgd_event(z / math.sqrt(2), q, steps), "block": dp_sgd_event(z, q, steps)}


def privacy_event(config: DPFermiConfig, noise_multiplier: float, q: float, steps: int):
    """The accounted event of an accountant-calibrated mode (None for the others or z = 0).

    ``per_sample``: the add/remove Poisson-subsampled Gaussian (the whole per-record contribution is
    clipped), a ``dp_accounting`` event. ``sensitive``: :class:`~repro.privacy.strict_accountant.StrictEvent`
    — the unclipped non-sensitive part of a record breaks amplification by subsampling, so the exact
    accountant of that mechanism is used (module docstring). Both are read by
    :func:`repro.privacy.accounting.epsilon`. Spec: §4.4 "Strict-DP mode".
    """
    if not config.per_sample_privacy or noise_multiplier <= 0:
        return None
    if config.theta_clip == "sensitive":
        return StrictEvent(float(noise_multiplier), float(q), int(steps))
    return dp_sgd_event(noise_multiplier, q, steps)


def calibrate_privacy(config: DPFermiConfig, epsilon: float, delta: float, q: float, steps: int) -> float:
    """Smallest noise multiplier z whose :func:`privacy_event` has ε ≤ ``epsilon`` at ``delta``."""
    if config.theta_clip == "sensitive":
        return calibrate_strict_noise_multiplier(float(epsilon), float(q), int(steps), float(delta))
    if config.theta_clip == "per_sample":
        return dp_sgd.calibrate_noise(epsilon, delta, q, steps)
    raise InvalidParameterError(
        f"theta_clip={config.theta_clip!r} is not accountant-calibrated; use 'per_sample' or 'sensitive'.")


def accountant_name(config: DPFermiConfig) -> str:
    """How :func:`privacy_event` is accounted (recorded in the results)."""
    if config.theta_clip == "sensitive":
        return ACCOUNTANT_NAME
    return "PLD (dp_accounting), Poisson-subsampled Gaussian" if config.per_sample_privacy else "none"


def guarantee(config: DPFermiConfig, epsilon: float, delta: float) -> Guarantee:
    """What a DP-FERMI run of this privacy mode promises at its stated (ε, δ) (module docstring, spec §4.4, §5).

    ``none``/``batch`` (the authors' code path): *nominal* (Theorem 3.3's formula; the θ and W blocks are
    calibrated alone, the Lipschitz bound is not enforced per sample). ``sensitive`` (strict): replace one
    record's sensitive attribute, exact strict accountant; ``per_sample`` (strict-all): add/remove one record,
    PLD. Both strict modes treat P̂_S and the feature standardisation as public."""
    if config.theta_clip == "sensitive":
        return Guarantee(epsilon, delta, Label.PUBLIC_STATISTICS, Neighbouring.REPLACE_SENSITIVE_ATTRIBUTE,
                         protects="the sensitive attribute", accountant=ACCOUNTANT_NAME,
                         caveat=f"P-hat_S (group proportions) treated as public; {STANDARDISED_FEATURES}")
    if config.theta_clip == "per_sample":
        return Guarantee(epsilon, delta, Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE,
                         accountant=accountant_name(config),
                         caveat=f"P-hat_S (group proportions) treated as public; {STANDARDISED_FEATURES}")
    return Guarantee(epsilon, delta, Label.NOMINAL, Neighbouring.REPLACE_SENSITIVE_ATTRIBUTE,
                     protects="the sensitive attribute", accountant="paper formula (Theorem 3.3)",
                     caveat="Theorem 3.3's noise per block, never composed; the Lipschitz bound is not enforced "
                            "per sample (batch-gradient clip)")


@dataclass(frozen=True)
class DPFermiResult:
    """Trained model (non-sensitive features only), final W matrices, steps and the DP-SGD event
    (accountant-calibrated modes only; None otherwise)."""

    model: LogisticModel | SoftmaxModel
    W: tuple[np.ndarray, ...]
    steps: int
    sampling_probability: float | None
    config: DPFermiConfig

    @property
    def event(self):
        c = self.config
        if not c.per_sample_privacy or c.noise_multiplier <= 0 or self.sampling_probability is None:
            return None
        return privacy_event(c, c.noise_multiplier, self.sampling_probability, self.steps)


def ermi(prob: np.ndarray, s: np.ndarray, k: int | None = None) -> float:
    """Empirical ERMI of soft predictions and groups ``s``: Σ_{j,r} p̂(j,r)² / (p̂(j) p̂(r)) − 1.

    ``prob`` is P(Ŷ=1) (n,) for a binary model (f = (1−prob, prob)) or the (n, l) class
    probabilities of a multi-class one. Spec: seed-004 §2 Def. 3.1."""
    prob = np.asarray(prob, dtype=float)
    s = np.asarray(s)
    k = int(s.max()) + 1 if k is None else k
    f = np.stack([1 - prob, prob], axis=1) if prob.ndim == 1 else prob
    onehot = np.eye(k)[s]
    joint = f.T @ onehot / len(prob)
    pj = f.mean(axis=0)
    pr = onehot.mean(axis=0)
    return float(np.sum(joint**2 / (pj[:, None] * pr[None, :])) - 1)


# ---------------------------------------------------------------------------------- engine
#
# Shapes: f is the (m, G, l) array of soft predictions of G models (binary: f = (1 − F, F));
# W is (G, k, l) (``full``) or (G, 1, 1) (``code_1x1``, binary only); ``isp`` is the (k,) vector
# 1/√p̂_S (or 1/√p̂_{S|Y=y}); logit coefficients are (m, G, L) with L = 1 (binary) or l (softmax).

def _psi_parts(F: np.ndarray, s: np.ndarray, W: np.ndarray, inv_sqrt_p: np.ndarray, form: str,
               group: int) -> tuple[np.ndarray, np.ndarray]:
    """ONE binary model, explicit per-sample arrays (the test oracle): dψ̂_i/dz_i (m,) and ∇_W ψ̂_i."""
    dF = F * (1 - F)
    if form == "code_1x1":
        w = W[0, 0]
        ind = (s == group).astype(float)
        coef = -w * w + 2 * w * ind * inv_sqrt_p[group]
        gW = (-2 * w * F + 2 * ind * inv_sqrt_p[group] * F)[:, None, None]
        return dF * coef, gW
    isp = inv_sqrt_p[s]
    col_sq = np.sum(W * W, axis=0)
    c0 = -col_sq[0] + 2 * W[s, 0] * isp
    c1 = -col_sq[1] + 2 * W[s, 1] * isp
    m = F.size
    f = np.stack([1 - F, F], axis=1)
    gW = -2 * W[None, :, :] * f[:, None, :]
    gW[np.arange(m), s, :] += 2 * isp[:, None] * f
    return dF * (c1 - c0), gW


def _psi_value(F: np.ndarray, s: np.ndarray, W: np.ndarray, inv_sqrt_p: np.ndarray, form: str,
               group: int) -> float:
    """ONE model: batch mean of ψ̂_i. ``F`` is P(Ŷ=1) (m,) or the (m, l) class probabilities."""
    if form == "code_1x1":
        w = W[0, 0]
        return float(np.mean(-w * w * F + 2 * w * F * (s == group) * inv_sqrt_p[group]) - 1)
    f = np.stack([1 - F, F], axis=1) if F.ndim == 1 else F
    col_sq = np.sum(W * W, axis=0)
    return float(np.mean(-(f * col_sq[None, :]).sum(1) + 2 * inv_sqrt_p[s] * (W[s] * f).sum(1)) - 1)


def _positive(f: np.ndarray) -> np.ndarray:
    """P(Ŷ = 1) of every sample and model from ``f``: column 1 of the class probabilities (m, G, l ≥ 2),
    or the one column of a logistic head's (m, G, 1) array, which the training loop passes for the
    one-term ERMI (it reads nothing else, so the two-column stack is never built)."""
    return f[..., 1] if f.shape[-1] > 1 else f[..., 0]


def _psi_dz(f: np.ndarray, s: np.ndarray, W: np.ndarray, isp: np.ndarray, form: str, group: int,
            head: str = "logistic") -> tuple[np.ndarray, np.ndarray]:
    """dψ̂_i/dz of every sample, model and logit, split into the part that does not depend on s_i and
    the part that does (spec §3: "Only the second term of each gradient depends on s_i"); (m, G, L)."""
    if form == "code_1x1":
        F = _positive(f)
        dF = F * (1 - F)
        w = W[:, 0, 0]
        ind = (s == group).astype(float)
        return ((dF * (-w * w)[None, :])[..., None],
                (dF * (2 * isp[group]) * ind[:, None] * w[None, :])[..., None])
    c_ns = -np.sum(W * W, axis=1)[None, :, :]                          # (1, G, l)
    c_se = 2 * isp[s][:, None, None] * W[:, s, :].transpose(1, 0, 2)     # (m, G, l)
    if head == "logistic":
        dF = (f[..., 0] * f[..., 1])[..., None]
        return dF * (c_ns[..., 1:] - c_ns[..., :1]), dF * (c_se[..., 1:] - c_se[..., :1])
    return (f * (c_ns - np.sum(f * c_ns, axis=2, keepdims=True)),
            f * (c_se - np.sum(f * c_se, axis=2, keepdims=True)))


def _w_grad_sum(a: np.ndarray | None, f: np.ndarray, s: np.ndarray, W: np.ndarray, isp: np.ndarray, form: str,
                group: int) -> np.ndarray:
    """Σ_i a_ig ∇_W ψ̂_i of every model g in closed form; ``a`` is (m, G), or ``None`` for all ones (the
    unclipped sum; the same bytes as passing ones, without the products); returns W's shape."""
    if form == "code_1x1":
        aF = _positive(f) if a is None else a * _positive(f)
        w = W[:, 0, 0]
        out = -2 * w * aF.sum(axis=0) + 2 * isp[group] * aF[s == group].sum(axis=0)
        return out[:, None, None]
    m, G, lab = f.shape
    k = W.shape[1]
    af = f if a is None else a[:, :, None] * f                                               # (m, G, l)
    onehot = (s[:, None] == np.arange(k)[None, :]).astype(float) * isp[s][:, None]
    sens = (onehot.T @ af.reshape(m, G * lab)).reshape(k, G, lab)
    return -2 * W * af.sum(axis=0)[:, None, :] + 2 * sens.transpose(1, 0, 2)


def _w_grad_sqnorm(f: np.ndarray, s: np.ndarray, W: np.ndarray, isp: np.ndarray, form: str,
                   group: int) -> np.ndarray:
    """‖∇_W ψ̂_i‖²_F of every sample and model in closed form, (m, G)."""
    if form == "code_1x1":
        F = _positive(f)
        w = W[:, 0, 0]
        return (-2 * w[None, :] * F + 2 * isp[group] * F * (s == group)[:, None]) ** 2
    col_sq = np.sum(W * W, axis=1)                            # (G, l)
    Ws = W[:, s, :].transpose(1, 0, 2)                         # (m, G, l)
    ii = isp[s][:, None, None]
    return 4 * np.sum(f * f * (col_sq[None, :, :] - 2 * ii * Ws + ii**2), axis=2)


def _w_sensitivity(isp: np.ndarray, form: str, group: int) -> float:
    """Replace-one-attribute bound on ‖G_i^sens(s) − G_i^sens(s')‖_F, G^sens = 2P̂_S^{−1/2}e_s fᵀ, ‖f‖ ≤ 1.

    ``full``: 2√(1/p̂_a + 1/p̂_b) for the two smallest groups (≤ √(8/ρ), spec §4.4); ``code_1x1``: 2/√p̂_g."""
    if form == "code_1x1":
        return float(2 * isp[group])
    top = np.sort(isp**2)[-2:]
    return float(2 * math.sqrt(top.sum()))


def noise_stds(configs: Sequence[DPFermiConfig], isps: Sequence[np.ndarray], form: str,
               group: int) -> tuple[np.ndarray, list[np.ndarray], bool, bool]:
    """Per-model noise std of θ (per coordinate) and of each W part (one per entry of ``isps``, its 1/√p̂_S),
    and whether θ and W noise is drawn at all, for configurations of one privacy mode.

    ``per_sample``: σ = z·C on both blocks; ``sensitive``: the joint (θ, W) sensitivity/noise ratio 1/z,
    λ√2·z·2C on θ (×λ: Algorithm 1 line 4) and √2·z·Δ_W on W; otherwise the configured σ_θ, σ_W (×λ where
    the configuration says). Spec: seed-004 §4.4, §5."""
    cfg = configs[0]
    lam = np.array([c.lam for c in configs])
    if cfg.per_sample_privacy:
        z = np.array([c.noise_multiplier for c in configs])
        clip = np.array([c.clip_norm for c in configs])
        if cfg.theta_clip == "per_sample":
            th_std, w_std = z * clip, [z * clip for _ in isps]
        else:
            th_std = lam * math.sqrt(2) * z * 2 * clip
            w_std = [math.sqrt(2) * z * _w_sensitivity(isp, form, group) for isp in isps]
        draw = any(c.noise_multiplier > 0 for c in configs)
        return th_std, w_std, draw, draw
    th_std = np.array([c.sigma_theta for c in configs]) * (lam if cfg.theta_noise_scale == "lambda" else 1.0)
    w_std = [np.array([c.sigma_w for c in configs]) * (lam if cfg.w_noise_scale == "lambda" else 1.0) for _ in isps]
    return th_std, w_std, any(c.sigma_theta > 0 for c in configs), any(c.sigma_w > 0 for c in configs)


def _project(W: np.ndarray, kind: str, radius: float | np.ndarray) -> np.ndarray:
    """Per model (axis 0): Frobenius ball of ``radius`` or the entrywise box [−radius, radius];
    ``radius`` is a scalar or one value per model (a float array of those is used as it is)."""
    radius = np.asarray(radius, dtype=float)
    if radius.ndim == 0:
        radius = np.full(W.shape[0], radius)
    if kind == "box":
        return np.clip(W, -radius[:, None, None], radius[:, None, None])
    norm = np.sqrt(np.sum(W * W, axis=(1, 2)))
    scale = np.where(norm > radius, radius / np.maximum(norm, 1e-300), 1.0)
    return W * scale[:, None, None]


def _batch_indices(n: int, cfg: DPFermiConfig, rng: np.random.Generator):
    """Yield the row indices of every step. Shuffled epochs permute the data once per epoch and
    slice contiguous batches (the last one partial), as a shuffled PyTorch DataLoader; Poisson
    includes each row with q (Opacus); uniform draws B rows without replacement."""
    if cfg.sampling == "shuffle":
        for _ in range(cfg.epochs):
            yield from sampling.shuffled_batches(n, cfg.batch_size, rng=rng)
    elif cfg.sampling == "poisson":
        q, steps = schedule(cfg, n)
        yield from sampling.poisson_batches(n, q, steps, rng=rng)
    else:
        for _ in range(schedule(cfg, n)[1]):
            yield sampling.fixed_size_batch(n, cfg.batch_size, rng=rng)


def _shared_config(configs: Sequence[DPFermiConfig]) -> DPFermiConfig:
    if not configs:
        raise InvalidParameterError("train_dp_fermi_batch needs at least one configuration.")
    base = configs[0]
    for c in configs[1:]:
        if replace(c, **{f: getattr(base, f) for f in PER_MODEL_FIELDS}) != base:
            diff = [f.name for f in fields(base) if f.name not in PER_MODEL_FIELDS
                    and getattr(c, f.name) != getattr(base, f.name)]
            raise InvalidParameterError(
                f"configurations trained together may differ only in {', '.join(PER_MODEL_FIELDS)}; "
                f"these differ: {', '.join(diff)}. Train them in separate calls.")
    return base


def _checked_inputs(X: np.ndarray, y: np.ndarray, s: np.ndarray, cfg: DPFermiConfig):
    """The engines' input checks (shared by :mod:`repro.learners.dp_fermi_compiled`): (X float64, integer labels,
    integer groups, number of classes, the label parts, {part: 1/√p̂_S of the part})."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    s = np.asarray(s, dtype=np.int64)
    n = X.shape[0]
    yi = np.asarray(y).astype(np.int64)
    if not (yi.shape == s.shape == (n,)):
        raise InvalidParameterError(f"X, y, s must have n rows; got {X.shape}, {yi.shape}, {s.shape}.")
    if np.any(yi != np.asarray(y)) or yi.min() < 0:
        raise InvalidParameterError("labels must be integers 0, 1, … (class indices).")
    n_classes = max(int(yi.max()) + 1, 2)
    if cfg.head != "softmax" and n_classes > 2:
        raise InvalidParameterError(f"head='logistic' needs 0/1 labels; got {n_classes} classes (use head='softmax').")
    k = int(s.max()) + 1
    if cfg.ermi_form == "code_1x1" and not 0 <= cfg.code_group < k:
        raise InvalidParameterError(f"code_group must be a group index in [0, {k}); got {cfg.code_group}.")
    labels = tuple(range(n_classes)) if cfg.fairness == "eo" else (None,)
    isp = {}
    for lab in labels:
        sel = s if lab is None else s[yi == lab]
        p = np.bincount(sel, minlength=k) / max(sel.size, 1)
        if np.any(p <= 0):
            raise InvalidParameterError(f"every group must appear in the training set (label {lab}); got {p}.")
        isp[lab] = 1.0 / np.sqrt(p)
    return X, yi, s, n_classes, labels, isp


def _init_theta(d: int, n_out: int, G: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """θ of PyTorch's ``nn.Linear(d, n_out)`` (U(−1/√d, 1/√d)), the same for all G models: (d, G, L), (G, L)."""
    if n_out == 1:
        w0, b0 = torch_linear_init(d, rng=rng)
        w0, b0 = w0[:, None], np.array([b0])
    else:
        bound = 1.0 / math.sqrt(d)
        w0 = rng.uniform(-bound, bound, size=(n_out, d)).T
        b0 = rng.uniform(-bound, bound, size=n_out)
    return np.repeat(w0[:, None, :], G, axis=1), np.repeat(b0[None, :], G, axis=0)


def train_dp_fermi(X: np.ndarray, y: np.ndarray, s: np.ndarray, config: DPFermiConfig, *,
                   rng: np.random.Generator, on_step: StepCallback | None = None) -> DPFermiResult:
    """Train one DP-FERMI model (min over θ, max over W) with the given switches.

    Parameters
    ----------
    X, y, s
        Standardized non-sensitive features (n, d), labels (0/1, or 0..l−1 for ``head="softmax"``),
        integer groups 0..k−1.
    config
        :class:`DPFermiConfig`; :data:`REFERENCE` is the authors' code path.
    rng
        Source of the initialization (θ as PyTorch's ``nn.Linear``, then W), batches and noise.

    on_step
        Optional observer of every iterate (see :func:`train_dp_fermi_batch`).

    Spec: seed-004 §4.1 (Algorithm 1), §4.3 ([C0] behaviour), §4.4; seed-003 §3.3.
    """
    return train_dp_fermi_batch(X, y, s, [config], rng=rng, on_step=on_step)[0]


def train_dp_fermi_batch(X: np.ndarray, y: np.ndarray, s: np.ndarray, configs: Sequence[DPFermiConfig], *,
                         rng: np.random.Generator, on_step: StepCallback | None = None) -> list[DPFermiResult]:
    """Train G DP-FERMI models together: same initialization, batches and standard-normal noise
    draws (common random numbers), per-model λ and noise levels (:data:`PER_MODEL_FIELDS`).

    One step costs one (m × d)·(d × G·L) product; the result list follows ``configs``. A model
    trained together with others equals its run alone with the same generator (up to summation
    order) whenever both draw noise (or neither does). ``on_step(t, Th, b, Ws)``, if given, sees every
    iterate after step t (read-only copies not made; it must not modify them): the DP-SGD accountant
    covers the release of all iterates, so the privacy auditor (:mod:`repro.studies.audit.mechanisms`) observes them.
    It draws no randomness and changes nothing.

    Spec: seed-004 §4.1, §4.4 ("vectorise over seeds/λ", §7.6).
    """
    return prepare_dp_fermi(X, y, s, configs).train(rng=rng, on_step=on_step)


@dataclass(frozen=True, eq=False)
class DPFermiPlan:
    """The checked inputs of :func:`train_dp_fermi_batch` and everything it derives from them before its first
    draw (from :func:`prepare_dp_fermi`). :meth:`train` is that function's run on them: the same draws in the
    same order, the same arithmetic, the same result; the setup is done once for many runs (the privacy
    auditor trains tens of thousands of models on one data set). Spec: seed-004 §4.1, §4.4."""

    configs: tuple[DPFermiConfig, ...]
    cfg: DPFermiConfig
    X: np.ndarray
    yi: np.ndarray
    s: np.ndarray
    Y: np.ndarray
    labels: tuple
    isp: dict
    n_classes: int
    k: int
    L: int
    lam: np.ndarray
    clip: np.ndarray
    radius: np.ndarray
    lr_th: np.ndarray
    lr_w: np.ndarray
    shape: tuple[int, int]
    q: float | None
    steps: int
    expected: int | None
    th_std: np.ndarray
    w_std: dict
    draw_theta: bool
    draw_w: bool

    def train(self, *, rng: np.random.Generator, on_step: StepCallback | None = None) -> list[DPFermiResult]:
        """Train the planned models with ``rng`` (see :func:`train_dp_fermi_batch`)."""
        return _train_planned(self, rng, on_step)


def prepare_dp_fermi(X: np.ndarray, y: np.ndarray, s: np.ndarray, configs: Sequence[DPFermiConfig]) -> DPFermiPlan:
    """Check the inputs of :func:`train_dp_fermi_batch` and derive its per-run constants once (no draw).

    Spec: seed-004 §4.1, §4.4."""
    configs = list(configs)
    cfg = _shared_config(configs)
    X, yi, s, n_classes, labels, isp = _checked_inputs(X, y, s, cfg)
    n = X.shape[0]
    softmax_head = cfg.head == "softmax"
    L = n_classes if softmax_head else 1
    k = int(s.max()) + 1
    Y = np.eye(n_classes)[yi] if softmax_head else yi.astype(np.float64)[:, None]   # (n, L) targets

    lam = np.array([c.lam for c in configs])
    clip = np.array([c.clip_norm for c in configs])      # per-model L (or C): (G,)
    radius = np.array([c.w_radius for c in configs], dtype=float)     # per-model D (float: used as is per step)
    lr_th = np.array([c.lr_theta for c in configs])
    lr_w = np.array([c.lr_w for c in configs])
    form, group = cfg.ermi_form, cfg.code_group
    shape = (1, 1) if form == "code_1x1" else (k, n_classes)
    q, steps = schedule(cfg, n)
    expected = max(int(n * q), 1) if q is not None else None

    # per-model noise std (θ: per coordinate of the (d+1)×L parameter; W: per label matrix)
    th_std, w_stds, draw_theta, draw_w = noise_stds(configs, [isp[lab] for lab in labels], form, group)
    w_std = dict(zip(labels, w_stds, strict=True))
    return DPFermiPlan(tuple(configs), cfg, X, yi, s, Y, labels, isp, n_classes, k, L, lam, clip, radius, lr_th,
                       lr_w, shape, q, steps, expected, th_std, w_std, draw_theta, draw_w)


def _train_planned(p: DPFermiPlan, rng: np.random.Generator, on_step: StepCallback | None) -> list[DPFermiResult]:
    """The training loop of :func:`train_dp_fermi_batch` on a :class:`DPFermiPlan`."""
    configs, cfg, X, yi, s, Y, labels, isp = p.configs, p.cfg, p.X, p.yi, p.s, p.Y, p.labels, p.isp
    n, d = X.shape
    softmax_head = cfg.head == "softmax"
    L, G, shape, q, steps, expected = p.L, len(configs), p.shape, p.q, p.steps, p.expected
    lam, clip, radius, lr_th, lr_w = p.lam, p.clip, p.radius, p.lr_th, p.lr_w
    th_std, w_std, draw_theta, draw_w = p.th_std, p.w_std, p.draw_theta, p.draw_w
    form, group, mode = cfg.ermi_form, cfg.code_group, cfg.theta_clip
    Th, b = _init_theta(d, L, G, rng)
    Ws = {lab: np.repeat((rng.standard_normal(shape) if cfg.w_init == "normal" else np.zeros(shape))[None],
                         G, axis=0) for lab in labels}
    t_hat = int(rng.integers(1, steps + 1)) if cfg.return_iterate == "random" else steps

    kept = None
    for t, idx in enumerate(_batch_indices(n, cfg, rng), start=1):
        XB, YB, sB, yB = np.take(X, idx, axis=0), Y[idx], s[idx], yi[idx]   # take: the same rows, ≈ 25 % faster
        m = sB.size
        Z = (XB @ Th.reshape(d, G * L)).reshape(m, G, L) + b[None]
        if softmax_head:
            f = np.exp(Z - Z.max(axis=2, keepdims=True))
            f /= f.sum(axis=2, keepdims=True)
            coef = f - YB[:, None, :]                 # d(per-sample CE)/dz, (m, G, L)
        else:
            F = expit(Z[..., 0])
            # the one-term ERMI reads only P(Ŷ = 1) (:func:`_positive`): no (m, G, 2) stack per step
            f = F[..., None] if form == "code_1x1" else np.stack([1 - F, F], axis=2)
            coef = (F - YB)[..., None]                # d(per-sample BCE)/dz, (m, G, 1)
        sens = np.zeros_like(coef) if mode == "sensitive" else None
        rows, parts = {}, {}   # per label part: its rows, and (f, s) of those rows, gathered once per step
        for lab in labels:
            r = slice(None) if lab is None else (yB == lab)
            rows[lab] = r
            parts[lab] = f[r], sB[r]
            ns, se = _psi_dz(*parts[lab], Ws[lab], isp[lab], form, group, cfg.head)
            weight = (m / max(int(np.count_nonzero(r)), 1)
                      if (lab is not None and cfg.eo_weighting == "sum") else 1.0)
            if mode == "sensitive":
                coef[r] += lam[None, :, None] * ns
                sens[r] = se
            else:
                coef[r] += (lam * weight)[None, :, None] * (ns + se)
        if cfg.per_sample_privacy:
            denom = expected if expected is not None else max(m, 1)
            row_norm = np.sqrt(np.einsum("ij,ij->i", XB, XB) + 1.0)[:, None]
            if mode == "per_sample":
                gn2 = np.sum(coef * coef, axis=2) * row_norm**2
                for lab in labels:
                    gn2[rows[lab]] += _w_grad_sqnorm(*parts[lab], Ws[lab], isp[lab], form, group)
                w_coef = np.minimum(1.0, clip[None, :] / (np.sqrt(gn2) + 1e-6))
                coef = coef * w_coef[..., None]
            else:
                sens_norm = np.sqrt(np.sum(sens * sens, axis=2)) * row_norm
                sens_clip = np.minimum(1.0, clip[None, :] / (sens_norm + 1e-12))
                coef = coef + lam[None, :, None] * sens * sens_clip[..., None]
                w_coef = np.ones((m, G))
            gw, gb = (XB.T @ coef.reshape(m, G * L)).reshape(d, G, L), coef.sum(axis=0)
            if draw_theta:
                u = rng.standard_normal((d + 1) * L).reshape(d + 1, L)
                gw, gb = gw + u[:d, None, :] * th_std[None, :, None], gb + u[d][None, :] * th_std[:, None]
            Th = Th - (lr_th / denom)[None, :, None] * gw
            b = b - (lr_th / denom)[:, None] * gb
            for lab in labels:
                r = rows[lab]
                gW = _w_grad_sum(w_coef[r], *parts[lab], Ws[lab], isp[lab], form, group)
                if draw_w:
                    gW = gW + rng.standard_normal(shape)[None] * w_std[lab][:, None, None]
                Ws[lab] = _project(Ws[lab] + (lr_w / denom)[:, None, None] * gW, cfg.w_projection, radius)
        else:
            mm = max(m, 1)
            gw, gb = (XB.T @ coef.reshape(m, G * L)).reshape(d, G, L) / mm, coef.sum(axis=0) / mm
            if mode == "batch":
                norm = np.sqrt(np.sum(gw * gw, axis=(0, 2)) + np.sum(gb * gb, axis=1))
                div = np.maximum(1.0, norm / clip)
                gw, gb = gw / div[None, :, None], gb / div[:, None]
            if draw_theta:
                u = rng.standard_normal((d + 1) * L).reshape(d + 1, L)
                gw, gb = gw + u[:d, None, :] * th_std[None, :, None], gb + u[d][None, :] * th_std[:, None]
            Th = Th - lr_th[None, :, None] * gw
            b = b - lr_th[:, None] * gb
            for lab in labels:
                n_r = parts[lab][0].shape[0]
                m_lab = mm if (lab is None or cfg.eo_weighting == "label_prior") else max(n_r, 1)
                gW = lam[:, None, None] * _w_grad_sum(None, *parts[lab], Ws[lab], isp[lab], form, group) / m_lab
                if draw_w:
                    gW = gW + rng.standard_normal(shape)[None] * w_std[lab][:, None, None]
                Ws[lab] = _project(Ws[lab] + lr_w[:, None, None] * gW, cfg.w_projection, radius)
        if on_step is not None:
            on_step(t, Th, b, Ws)
        if t == t_hat:
            kept = (Th.copy(), b.copy())
    if kept is None:
        kept = (Th, b)

    def model(g: int) -> LogisticModel | SoftmaxModel:
        if softmax_head:
            return SoftmaxModel(kept[0][:, g, :].copy(), kept[1][g].copy())
        return LogisticModel(kept[0][:, g, 0].copy(), float(kept[1][g, 0]))

    return [DPFermiResult(model(g), tuple(Ws[lab][g].copy() for lab in labels), steps, q, c)
            for g, c in enumerate(configs)]
