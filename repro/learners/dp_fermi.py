"""DP-FERMI (Lowy, Gupta, Razaviyayn, ICLR 2023): noisy two-timescale DP-SGDA for fair logistic
regression — the ONE engine of the package, with switches for the paper's math and the authors' code.

Spec: seed-004-dpfermi.md §2–§5 (ERMI, min–max form, Algorithm 1, Theorem 3.3 noise levels), §4.3
(what the authors' code does) and §4.4 (the recommended switches); seed-003-thesis.md §3.3 (the
thesis's copy of that code: all-feature noise formulas, L_θ = 5, C = 5, η_θ = 0.005, η_W = 0.01).

Model: logistic regression on the non-sensitive features only, soft prediction F = σ(θᵀx̃).
Objective: min_θ max_W  BCE(θ) + λ·ψ̄(θ, W) with the per-sample

    ψ̂_i = −Σ_j f_j ‖W_{:,j}‖² + (2/√p̂_S(s_i)) Σ_j W_{s_i,j} f_j − 1

whose maximum over W is the ERMI of (Ŷ, S). Switches (:class:`DPFermiConfig`):

=====================  =======================================================  ==================
switch                 options                                                  authors' code [C0]
=====================  =======================================================  ==================
``ermi_form``          ``full`` (W ∈ R^{k×2}, f = (1−σ, σ)) / ``code_1x1``      ``code_1x1``
                       (W ∈ R^{1×1}; ``torch.trace`` keeps only the term of
                       group ``code_group``, §4.3)
``fairness``           ``dp`` (demographic parity) / ``eo`` (equalized odds:    ``dp`` / ``eo``
                       one W and P̂_{S|Y=y} per label, parts summed)
``theta_clip``         ``none`` / ``batch`` (clip the minibatch gradient to      ``batch``, L = 5
                       L_θ) / ``per_sample`` (clip each sample's joint
                       (θ, W) gradient to ``clip_norm``; noise multiplier)
``theta_noise_scale``  ``one`` / ``lambda``                                     ``one``
``w_noise_scale``      ``lambda`` / ``one``                                     ``lambda`` ([C0])
``w_projection``       ``frobenius`` / ``box``                                  ``frobenius``, 5
``w_init``             ``normal`` / ``zeros``                                   ``normal``
``sampling``           ``shuffle`` / ``poisson`` / ``uniform``                   ``shuffle``
``return_iterate``     ``last`` / ``random``                                    ``last``
=====================  =======================================================  ==================

With ``theta_clip="per_sample"`` the engine is plain DP-SGD(A) on the joint parameter (θ, W): each
sample's (∇_θ(ℓ_i + λψ̂_i), ∇_W ψ̂_i) is clipped to ``clip_norm`` and N(0, (z·clip_norm)²) is added to
the sum, divided by the expected batch size; its privacy is the DP-SGD event of
:func:`repro.privacy.accounting.dp_sgd_event` (privacy w.r.t. all features).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from scipy.special import expit

from repro.errors import InvalidParameterError
from repro.learners.logistic import LogisticModel, torch_linear_init
from repro.privacy.accounting import dp_sgd_event, opacus_sampling

__all__ = ["DPFermiConfig", "DPFermiResult", "train_dp_fermi", "thesis_all_feature_noise",
           "sensitive_only_noise", "group_floor", "ermi", "REFERENCE", "STRICT"]

_CHOICES = {
    "ermi_form": ("full", "code_1x1"),
    "fairness": ("dp", "eo"),
    "theta_clip": ("none", "batch", "per_sample"),
    "theta_noise_scale": ("one", "lambda"),
    "w_noise_scale": ("lambda", "one"),
    "w_projection": ("frobenius", "box"),
    "w_init": ("normal", "zeros"),
    "sampling": ("shuffle", "poisson", "uniform"),
    "return_iterate": ("last", "random"),
}


@dataclass(frozen=True)
class DPFermiConfig:
    """Hyperparameters and behaviour switches of :func:`train_dp_fermi` (see the module table).

    ``sigma_theta`` / ``sigma_w`` are the std of the Gaussian noise added to the θ and W steps in
    the ``none``/``batch`` clip modes; ``noise_multiplier`` (z) is used in ``per_sample`` mode.
    """

    lam: float = 1.0
    lr_theta: float = 0.005
    lr_w: float = 0.01
    batch_size: int = 1024
    epochs: int = 50
    ermi_form: Literal["full", "code_1x1"] = "code_1x1"
    code_group: int = 0
    fairness: Literal["dp", "eo"] = "dp"
    theta_clip: Literal["none", "batch", "per_sample"] = "batch"
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

    def with_(self, **changes) -> DPFermiConfig:
        return replace(self, **changes)


#: The thesis's (author-modified) DP-FERMI code path [C:dpfb dp_fermi.py], noise set separately.
REFERENCE = DPFermiConfig()
#: Paper math with per-sample clipping and accountant-calibrated noise (privacy w.r.t. all features).
STRICT = DPFermiConfig(ermi_form="full", theta_clip="per_sample", clip_norm=1.5, w_init="zeros",
                       sampling="poisson", theta_noise_scale="one", w_noise_scale="one")


@dataclass(frozen=True)
class DPFermiResult:
    """Trained model (non-sensitive features only), final W matrices, steps and the DP-SGD event
    (per-sample mode only; None otherwise)."""

    model: LogisticModel
    W: tuple[np.ndarray, ...]
    steps: int
    sampling_probability: float | None
    config: DPFermiConfig

    @property
    def event(self):
        c = self.config
        if c.theta_clip != "per_sample" or c.noise_multiplier <= 0 or self.sampling_probability is None:
            return None
        return dp_sgd_event(c.noise_multiplier, self.sampling_probability, self.steps)


def group_floor(s: np.ndarray) -> float:
    """ρ = (min_r count_r − 1)/n, as the authors' ``calculate_noise`` computes it. Spec: seed-003 §3.3."""
    s = np.asarray(s)
    counts = np.bincount(s)
    return float((counts[counts > 0].min() - 1) / s.size)


def thesis_all_feature_noise(n: int, steps: int, rho: float, epsilon: float, delta: float = 1e-5,
                             w_radius: float = 5.0, lipschitz: float = 5.0) -> tuple[float, float]:
    """(σ_θ, σ_W) of the thesis's DP-FERMI code for privacy w.r.t. all features:

    σ_W = √(32 T ln(1/δ) (C² + 1/ρ) / (ε² n²)),
    σ_θ = √(64 L² C² ln(1/δ) T / (ε² n² ρ) + 32 C⁴ L² · 4 ln(1/δ) T / (ε² n²)).

    Spec: seed-003 §3.3 [C:dpfb ``args.calculate_noise``]; seed-004 §5(b).
    """
    _check_noise_args(n, steps, rho, epsilon, delta)
    if math.isinf(epsilon):
        return 0.0, 0.0
    ln = math.log(1 / delta)
    c, lip = w_radius, lipschitz
    sigma_w = math.sqrt(32 * steps * ln * (c**2 + 1 / rho) / (epsilon**2 * n**2))
    sigma_theta = math.sqrt(64 * lip**2 * c**2 * ln * steps / (epsilon**2 * n**2 * rho)
                            + 32 * c**4 * lip**2 * 4 * ln * steps / (epsilon**2 * n**2))
    return sigma_theta, sigma_w


def sensitive_only_noise(n: int, steps: int, rho: float, epsilon: float, delta: float,
                         w_radius: float = 5.0, lipschitz: float = 5.0) -> tuple[float, float]:
    """(σ_θ, σ_W) of Theorem 3.3(a) (privacy w.r.t. the sensitive attribute only; [C0] uses δ = 1/n²):
    σ_θ = √(16 L² D² ln(1/δ) T / (ε² n² ρ)), σ_W = √(16 T ln(1/δ) / (ε² n² ρ)). Spec: seed-004 §5(a)."""
    _check_noise_args(n, steps, rho, epsilon, delta)
    if math.isinf(epsilon):
        return 0.0, 0.0
    ln = math.log(1 / delta)
    sigma_theta = math.sqrt(16 * lipschitz**2 * w_radius**2 * ln * steps / (epsilon**2 * n**2 * rho))
    sigma_w = math.sqrt(16 * steps * ln / (epsilon**2 * n**2 * rho))
    return sigma_theta, sigma_w


def _check_noise_args(n: int, steps: int, rho: float, epsilon: float, delta: float) -> None:
    if n < 1 or steps < 1:
        raise InvalidParameterError(f"n and steps must be >= 1; got {n}, {steps}.")
    if not 0 < rho < 1:
        raise InvalidParameterError(f"rho (group floor) must lie in (0, 1); got {rho}.")
    if not epsilon > 0:
        raise InvalidParameterError(f"epsilon must be > 0; got {epsilon}.")
    if not 0 < delta < 1:
        raise InvalidParameterError(f"delta must lie in (0, 1); got {delta}.")


def ermi(prob: np.ndarray, s: np.ndarray, k: int | None = None) -> float:
    """Empirical ERMI of soft binary predictions ``prob`` = P(Ŷ=1) and groups ``s``:
    Σ_{j,r} p̂(j,r)² / (p̂(j) p̂(r)) − 1 with f = (1−prob, prob). Spec: seed-004 §2 Def. 3.1."""
    prob = np.asarray(prob, dtype=float)
    s = np.asarray(s)
    k = int(s.max()) + 1 if k is None else k
    f = np.stack([1 - prob, prob], axis=1)
    onehot = np.eye(k)[s]
    joint = f.T @ onehot / len(prob)
    pj = f.mean(axis=0)
    pr = onehot.mean(axis=0)
    return float(np.sum(joint**2 / (pj[:, None] * pr[None, :])) - 1)


# ---------------------------------------------------------------------------------- engine

def _psi_parts(F: np.ndarray, s: np.ndarray, W: np.ndarray, inv_sqrt_p: np.ndarray, form: str,
               group: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample dψ̂_i/dz_i (z = logit) and the per-sample ∇_W ψ̂_i (shape (m, *W.shape))."""
    dF = F * (1 - F)
    if form == "code_1x1":
        w = W[0, 0]
        ind = (s == group).astype(float)
        coef = -w * w + 2 * w * ind * inv_sqrt_p[group]
        gW = (-2 * w * F + 2 * ind * inv_sqrt_p[group] * F)[:, None, None]
        return dF * coef, gW
    # full: f = (1 − F, F), W ∈ R^{k×2}; dψ/dz = σ(1−σ)(c_1 − c_0), c_j = −‖W_{:,j}‖² + 2W_{s,j}/√p_s
    col_sq = np.sum(W * W, axis=0)
    isp = inv_sqrt_p[s]
    c0 = -col_sq[0] + 2 * W[s, 0] * isp
    c1 = -col_sq[1] + 2 * W[s, 1] * isp
    m = F.size
    f = np.stack([1 - F, F], axis=1)
    gW = -2 * W[None, :, :] * f[:, None, :]
    gW[np.arange(m), s, :] += 2 * isp[:, None] * f
    return dF * (c1 - c0), gW


def _psi_dz(F: np.ndarray, s: np.ndarray, W: np.ndarray, inv_sqrt_p: np.ndarray, form: str,
            group: int) -> np.ndarray:
    """Per-sample dψ̂_i/dz_i only (cheap; no W-gradient arrays)."""
    dF = F * (1 - F)
    if form == "code_1x1":
        w = W[0, 0]
        return dF * (-w * w + 2 * w * inv_sqrt_p[group] * (s == group))
    col_sq = np.sum(W * W, axis=0)
    isp = inv_sqrt_p[s]
    return dF * ((-col_sq[1] + 2 * W[s, 1] * isp) - (-col_sq[0] + 2 * W[s, 0] * isp))


def _w_grad_sum(weights: np.ndarray, F: np.ndarray, s: np.ndarray, W: np.ndarray, inv_sqrt_p: np.ndarray,
                form: str, group: int) -> np.ndarray:
    """Σ_i weights_i ∇_W ψ̂_i in closed form (equals the weighted sum of :func:`_psi_parts`' gW)."""
    if form == "code_1x1":
        w = W[0, 0]
        wf = weights * F
        return np.array([[-2 * w * wf.sum() + 2 * inv_sqrt_p[group] * wf[s == group].sum()]])
    f = np.stack([1 - F, F], axis=1)
    k = W.shape[0]
    out = -2 * W * (weights @ f)[None, :]
    out += 2 * np.stack([np.bincount(s, weights=weights * inv_sqrt_p[s] * f[:, j], minlength=k)
                         for j in range(2)], axis=1)
    return out


def _w_grad_sqnorm(F: np.ndarray, s: np.ndarray, W: np.ndarray, inv_sqrt_p: np.ndarray, form: str,
                   group: int) -> np.ndarray:
    """‖∇_W ψ̂_i‖²_F per sample, in closed form."""
    if form == "code_1x1":
        w = W[0, 0]
        return (-2 * w * F + 2 * inv_sqrt_p[group] * F * (s == group)) ** 2
    f = np.stack([1 - F, F], axis=1)
    isp = inv_sqrt_p[s]
    col_sq = np.sum(W * W, axis=0)
    inner = col_sq[None, :] - 2 * isp[:, None] * W[s] + isp[:, None] ** 2
    return 4 * np.sum(f * f * inner, axis=1)


def _psi_value(F: np.ndarray, s: np.ndarray, W: np.ndarray, inv_sqrt_p: np.ndarray, form: str,
               group: int) -> float:
    """Batch mean of ψ̂_i (for tests and diagnostics)."""
    if form == "code_1x1":
        w = W[0, 0]
        return float(np.mean(-w * w * F + 2 * w * F * (s == group) * inv_sqrt_p[group]) - 1)
    f = np.stack([1 - F, F], axis=1)
    col_sq = np.sum(W * W, axis=0)
    return float(np.mean(-(f * col_sq[None, :]).sum(1) + 2 * inv_sqrt_p[s] * (W[s] * f).sum(1)) - 1)


def _project(W: np.ndarray, kind: str, radius: float) -> np.ndarray:
    if kind == "box":
        return np.clip(W, -radius, radius)
    norm = float(np.linalg.norm(W))
    return W * (radius / norm) if norm > radius else W


def _batch_data(X: np.ndarray, y: np.ndarray, s: np.ndarray, cfg: DPFermiConfig, rng: np.random.Generator):
    """Yield (X_B, y_B, s_B) for every step. Shuffled epochs permute the data once per epoch and
    slice contiguous batches (the last one partial), as a shuffled PyTorch DataLoader."""
    n = y.size
    per_epoch = math.ceil(n / cfg.batch_size)
    if cfg.sampling == "shuffle":
        for _ in range(cfg.epochs):
            perm = rng.permutation(n)
            Xp, yp, sp = X[perm], y[perm], s[perm]
            for i in range(0, n, cfg.batch_size):
                j = i + cfg.batch_size
                yield Xp[i:j], yp[i:j], sp[i:j]
    elif cfg.sampling == "poisson":
        q, steps = opacus_sampling(n, cfg.batch_size, cfg.epochs)
        for _ in range(steps):
            idx = np.flatnonzero(rng.random(n) < q)
            yield X[idx], y[idx], s[idx]
    else:
        m = min(cfg.batch_size, n)
        for _ in range(per_epoch * cfg.epochs):
            idx = rng.choice(n, size=m, replace=False)
            yield X[idx], y[idx], s[idx]


def train_dp_fermi(X: np.ndarray, y: np.ndarray, s: np.ndarray, config: DPFermiConfig, *,
                   rng: np.random.Generator) -> DPFermiResult:
    """Train DP-FERMI logistic regression (min over θ, max over W) with the given switches.

    Parameters
    ----------
    X, y, s
        Standardized non-sensitive features (n, d), 0/1 labels, integer groups 0..k−1.
    config
        :class:`DPFermiConfig`; :data:`REFERENCE` is the thesis's code path.
    rng
        Source of the initialization (θ as PyTorch's ``nn.Linear``, then W), batches and noise.

    Returns
    -------
    DPFermiResult

    Spec: seed-004 §4.1 (Algorithm 1), §4.3 ([C0] behaviour), §4.4; seed-003 §3.3.
    """
    cfg = config
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    s = np.asarray(s, dtype=np.int64)
    n, d = X.shape
    if not (y.shape == s.shape == (n,)):
        raise InvalidParameterError(f"X, y, s must have n rows; got {X.shape}, {y.shape}, {s.shape}.")
    k = int(s.max()) + 1
    if cfg.ermi_form == "code_1x1" and not 0 <= cfg.code_group < k:
        raise InvalidParameterError(f"code_group must be a group index in [0, {k}); got {cfg.code_group}.")
    labels = (0, 1) if cfg.fairness == "eo" else (None,)
    inv_sqrt = {}
    for lab in labels:
        sel = s if lab is None else s[y == lab]
        p = np.bincount(sel, minlength=k) / max(sel.size, 1)
        if np.any(p <= 0):
            raise InvalidParameterError(f"every group must appear in the training set (label {lab}); got {p}.")
        inv_sqrt[lab] = 1.0 / np.sqrt(p)

    theta_w, theta_b = torch_linear_init(d, rng=rng)
    shape = (1, 1) if cfg.ermi_form == "code_1x1" else (k, 2)
    Ws = {lab: (rng.standard_normal(shape) if cfg.w_init == "normal" else np.zeros(shape)) for lab in labels}
    per_sample = cfg.theta_clip == "per_sample"
    q, steps = (opacus_sampling(n, cfg.batch_size, cfg.epochs) if cfg.sampling == "poisson"
                else (None, math.ceil(n / cfg.batch_size) * cfg.epochs))
    expected = max(int(n * q), 1) if q is not None else None

    def row_norm_of(XB: np.ndarray) -> np.ndarray:
        return np.sqrt(np.einsum("ij,ij->i", XB, XB) + 1.0)
    t_hat = int(rng.integers(1, steps + 1)) if cfg.return_iterate == "random" else steps
    lam = cfg.lam
    th_scale = lam if cfg.theta_noise_scale == "lambda" else 1.0
    w_scale = lam if cfg.w_noise_scale == "lambda" else 1.0
    kept = None
    t = 0
    for XB, yB, sB in _batch_data(X, y, s, cfg, rng):
        t += 1
        m = yB.size
        F = expit(XB @ theta_w + theta_b)
        coef = F - yB                      # d(per-sample BCE)/dz
        subs = {}
        for lab in labels:
            sub = None if lab is None else (yB == lab)
            subs[lab] = sub
            if sub is None:
                dz = _psi_dz(F, sB, Ws[lab], inv_sqrt[lab], cfg.ermi_form, cfg.code_group)
                coef = coef + lam * dz
            else:
                msub = max(int(sub.sum()), 1)
                dz = np.zeros(m)
                dz[sub] = _psi_dz(F[sub], sB[sub], Ws[lab], inv_sqrt[lab], cfg.ermi_form, cfg.code_group)
                # batch mode: each label part is a mean over its own subset
                coef = coef + lam * dz * (1.0 if per_sample else m / msub)
        if per_sample:
            gnorm2 = (coef * row_norm_of(XB)) ** 2
            for lab in labels:
                sub = subs[lab]
                if sub is None:
                    gnorm2 = gnorm2 + _w_grad_sqnorm(F, sB, Ws[lab], inv_sqrt[lab], cfg.ermi_form, cfg.code_group)
                else:
                    gnorm2[sub] += _w_grad_sqnorm(F[sub], sB[sub], Ws[lab], inv_sqrt[lab], cfg.ermi_form,
                                                  cfg.code_group)
            clip = np.minimum(1.0, cfg.clip_norm / (np.sqrt(gnorm2) + 1e-6))
            cc = coef * clip
            sigma = cfg.noise_multiplier * cfg.clip_norm
            denom = expected if expected is not None else max(m, 1)
            gw = (XB.T @ cc + (rng.normal(0, sigma, d) if sigma > 0 else 0.0)) / denom
            gb = (cc.sum() + (rng.normal(0, sigma) if sigma > 0 else 0.0)) / denom
            theta_w = theta_w - cfg.lr_theta * gw
            theta_b = theta_b - cfg.lr_theta * gb
            for lab in labels:
                sub = subs[lab]
                if sub is None:
                    gW = _w_grad_sum(clip, F, sB, Ws[lab], inv_sqrt[lab], cfg.ermi_form, cfg.code_group)
                else:
                    gW = _w_grad_sum(clip[sub], F[sub], sB[sub], Ws[lab], inv_sqrt[lab], cfg.ermi_form,
                                     cfg.code_group)
                if sigma > 0:
                    gW = gW + rng.normal(0, sigma, shape)
                Ws[lab] = _project(Ws[lab] + cfg.lr_w * gW / denom, cfg.w_projection, cfg.w_radius)
        else:
            mm = max(m, 1)
            gw = XB.T @ coef / mm
            gb = float(coef.sum() / mm)
            if cfg.theta_clip == "batch":
                norm = math.sqrt(float(gw @ gw) + gb * gb)
                div = max(1.0, norm / cfg.clip_norm)
                gw, gb = gw / div, gb / div
            if cfg.sigma_theta > 0:
                u = rng.normal(0, cfg.sigma_theta, d + 1)
                gw, gb = gw + th_scale * u[:d], gb + th_scale * u[d]
            theta_w = theta_w - cfg.lr_theta * gw
            theta_b = theta_b - cfg.lr_theta * gb
            for lab in labels:
                sub = subs[lab]
                if sub is None:
                    gW = lam * _w_grad_sum(np.ones(m), F, sB, Ws[lab], inv_sqrt[lab], cfg.ermi_form,
                                           cfg.code_group) / mm
                else:
                    msub = max(int(sub.sum()), 1)
                    gW = lam * _w_grad_sum(np.ones(msub), F[sub], sB[sub], Ws[lab], inv_sqrt[lab],
                                           cfg.ermi_form, cfg.code_group) / msub
                if cfg.sigma_w > 0:
                    gW = gW + w_scale * rng.normal(0, cfg.sigma_w, shape)
                Ws[lab] = _project(Ws[lab] + cfg.lr_w * gW, cfg.w_projection, cfg.w_radius)
        if t == t_hat:
            kept = (theta_w.copy(), float(theta_b))
    if kept is None:
        kept = (theta_w, float(theta_b))
    return DPFermiResult(LogisticModel(kept[0], kept[1]), tuple(Ws[lab] for lab in labels), steps, q, cfg)
