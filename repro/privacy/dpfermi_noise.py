"""DP-FERMI Theorem 3.3: noise levels, the theorem's conditions, and an accountant cross-check.

Spec: seed-004-dpfermi.md §5 (Theorem 3.3 (a) sensitive-only and (b) all-features noise, the
conditions ε ≤ 2 ln(1/δ) and T ≥ (n√ε/(2m))², the worked numbers and privacy caveat 1).

This module holds the noise formulas (:func:`sensitive_only_noise`, Theorem 3.3(a), and
:func:`thesis_all_feature_noise`, the thesis code's all-feature version) and the group floor ρ
they use; the DP-FERMI engine (:mod:`repro.learners.dp_fermi`) takes σ's as inputs. Around the
formulas it adds what the theorem requires:

- :func:`theorem33_conditions` checks ε ≤ 2 ln(1/δ) and T ≥ (n√ε/(2m))² and logs a warning for each
  violated condition (the formulas are then *nominal*: the theorem says nothing about them);
- :func:`theorem33_noise` returns both σ's with the conditions, δ = 1/n² by default;
- :func:`accountant_epsilons` gives the ε that a Rényi-DP accountant assigns to the θ block alone,
  the W block alone and the joint (θ, W) mechanism (caveat 1: the paper calibrates each block to
  (ε, δ) separately and never composes them).

Accounting model of the cross-check (spec §5 "General rule"): with the Theorem 3.3(a) noise, both
blocks are Gaussian mechanisms on a minibatch average with the same noise multiplier
z = σ/Δ = q·√(2T ln(1/δ))/ε, q = m/n. Each block is T compositions of a Poisson-subsampled
Gaussian with multiplier z; the joint mechanism releases both blocks at every step, i.e. one
Gaussian with multiplier z/√2. Poisson subsampling in the add/remove relation approximates the
paper's shuffled replace-one setting (the same approximation as the spec's numbers).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from repro.errors import InvalidParameterError
from repro.privacy.accounting import Accountant, dp_sgd_epsilon

__all__ = ["group_floor", "sensitive_only_noise", "thesis_all_feature_noise", "Theorem33Conditions", "NoiseLevels", "theorem33_conditions", "theorem33_noise",
           "noise_multiplier", "accountant_epsilons", "min_steps",
           "DataBoundEpsilon", "data_bound_epsilons"]

log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class Theorem33Conditions:
    """The two conditions of Theorem 3.3 and whether they hold.

    ``eps_limit`` = 2 ln(1/δ); ``min_steps`` = (n√ε/(2m))².
    """

    eps_ok: bool
    steps_ok: bool
    eps_limit: float
    min_steps: float

    @property
    def ok(self) -> bool:
        return self.eps_ok and self.steps_ok


@dataclass(frozen=True)
class NoiseLevels:
    """σ_θ, σ_W of Theorem 3.3 for one (n, T, m, ρ, ε, δ), with the theorem's conditions."""

    sigma_theta: float
    sigma_w: float
    scope: str
    n: int
    steps: int
    batch_size: int
    rho: float
    epsilon: float
    delta: float
    conditions: Theorem33Conditions


def min_steps(n: int, batch_size: int, epsilon: float) -> float:
    """T_min = (n√ε/(2m))², the smallest T allowed by Theorem 3.3. Spec: seed-004 §5 conditions."""
    return (n * math.sqrt(epsilon) / (2 * batch_size)) ** 2


def theorem33_conditions(n: int, steps: int, batch_size: int, epsilon: float, delta: float, *,
                         warn: bool = True) -> Theorem33Conditions:
    """Check ε ≤ 2 ln(1/δ) and T ≥ (n√ε/(2m))²; log a warning for each violation (if ``warn``).

    ε = ∞ (non-private) satisfies neither condition trivially and is reported as not applicable
    (both flags True, no warning): no noise is added.

    Spec: seed-004 §5 (conditions), §10 item 5.
    """
    _check(n, steps, batch_size, epsilon, delta)
    limit = 2 * math.log(1 / delta)
    if math.isinf(epsilon):
        return Theorem33Conditions(True, True, limit, 0.0)
    t_min = min_steps(n, batch_size, epsilon)
    cond = Theorem33Conditions(epsilon <= limit, steps >= t_min, limit, t_min)
    if warn and not cond.eps_ok:
        log.warning("Theorem 3.3 condition violated: epsilon=%g > 2 ln(1/delta)=%.3f (delta=%g); "
                    "the noise formula is nominal, the stated epsilon is not guaranteed.",
                    epsilon, limit, delta)
    if warn and not cond.steps_ok:
        log.warning("Theorem 3.3 condition violated: T=%d < (n*sqrt(eps)/(2m))^2=%.0f (n=%d, m=%d, "
                    "eps=%g); the noise formula is nominal, the stated epsilon is not guaranteed.",
                    steps, t_min, n, batch_size, epsilon)
    return cond


def theorem33_noise(n: int, steps: int, batch_size: int, rho: float, epsilon: float,
                    delta: float | None = None, *, scope: Literal["sensitive", "all"] = "sensitive",
                    lipschitz: float = 5.0, w_radius: float = 5.0, warn: bool = True) -> NoiseLevels:
    """σ_θ and σ_W of Theorem 3.3 with its conditions checked (δ = 1/n² when None).

    ``scope="sensitive"``: part (a), σ_W² = 16T ln(1/δ)/(ε²n²ρ), σ_θ² = 16L²D² ln(1/δ)T/(ε²n²ρ).
    ``scope="all"``: part (b) with the theorem statement's (larger) constants for binary
    predictions (l = 2), as the engine implements them.

    Spec: seed-004 §5 (a), (b); §10 item 5 (σ_W(Adult, ε=1) ≈ 0.0779, σ_θ ≈ 1.948).
    """
    if delta is None:
        delta = 1.0 / n**2
    cond = theorem33_conditions(n, steps, batch_size, epsilon, delta, warn=warn)
    if scope == "sensitive":
        st, sw = sensitive_only_noise(n, steps, rho, epsilon, delta, w_radius=w_radius, lipschitz=lipschitz)
    elif scope == "all":
        st, sw = thesis_all_feature_noise(n, steps, rho, epsilon, delta, w_radius=w_radius,
                                          lipschitz=lipschitz)
    else:
        raise InvalidParameterError(f"scope must be 'sensitive' or 'all'; got {scope!r}.")
    return NoiseLevels(st, sw, scope, n, steps, batch_size, rho, epsilon, delta, cond)


def noise_multiplier(n: int, steps: int, batch_size: int, epsilon: float, delta: float) -> float:
    """z = σ/Δ = q√(2T ln(1/δ))/ε of each Theorem 3.3(a) block (q = m/n). Spec: seed-004 §5 general rule."""
    _check(n, steps, batch_size, epsilon, delta)
    if math.isinf(epsilon):
        return 0.0
    return (batch_size / n) * math.sqrt(2 * steps * math.log(1 / delta)) / epsilon


def accountant_epsilons(n: int, steps: int, batch_size: int, epsilon: float, delta: float | None = None,
                        *, accountant: Accountant = "rdp") -> dict[str, float]:
    """ε of the θ block, the W block and the joint (θ, W) mechanism under an accountant.

    Returns ``{"block": ε_one_block, "joint": ε_joint, "z": z}`` (ε = ∞ gives ∞ for both).
    Spec: seed-004 §5 caveat 1 (Adult: claimed 0.5/1/3/9 → block 0.50/1.02/3.16/11.1,
    joint 0.72/1.45/4.59/18.5 with the RDP accountant), §10 item 8.
    """
    if delta is None:
        delta = 1.0 / n**2
    z = noise_multiplier(n, steps, batch_size, epsilon, delta)
    if z == 0.0:
        return {"block": math.inf, "joint": math.inf, "z": 0.0}
    q = min(1.0, batch_size / n)
    block = dp_sgd_epsilon(z, q, steps, delta, accountant)
    joint = dp_sgd_epsilon(z / math.sqrt(2), q, steps, delta, accountant)
    return {"block": float(block), "joint": float(joint), "z": float(z)}


def _check(n: int, steps: int, batch_size: int, epsilon: float, delta: float) -> None:
    if n < 1 or steps < 1 or batch_size < 1:
        raise InvalidParameterError(
            f"n, steps and batch_size must be >= 1; got {n}, {steps}, {batch_size}.")
    if not epsilon > 0:
        raise InvalidParameterError(f"epsilon must be > 0; got {epsilon}. Pass a positive budget.")
    if not 0 < delta < 1:
        raise InvalidParameterError(f"delta must lie in (0, 1); got {delta}. The paper's code uses 1/n².")


@dataclass(frozen=True)
class DataBoundEpsilon:
    """ε of the reference variant's noise under the data's true bounds (issue 22, fact 5); see
    :func:`data_bound_epsilons`. ``ratio_theta``/``ratio_w`` = true sensitivity / the formula's."""

    ratio_theta: float
    ratio_w: float
    eps_theta_rdp: float
    eps_joint_rdp: float


def data_bound_epsilons(n: int, steps: int, batch_size: int, epsilon: float, delta: float, *, lam: float,
                        clip: float, radius: float, rho: float, max_row_norm: float, label_rows: float,
                        p_group: float, accountant: Accountant = "rdp") -> DataBoundEpsilon:
    """ε that the reference variant's Theorem 3.3(a) noise gives w.r.t. the sensitive attribute when the
    sensitivity is taken from the data and the code instead of from the formula's assumptions.

    The formula's per-record sensitivities of the two noisy batch means (spec seed-004 §5(a); σ = z·Δ with
    :func:`noise_multiplier` z) are Δ_θ = 2√2·L·D/(m√ρ) and Δ_W = 2√2/(m√ρ). In the code
    (:mod:`repro.learners.dp_fermi`, ``code_1x1``, batch clip) changing one record's s changes only the
    s-dependent term of its logit coefficient, λ·2·F(1−F)·w·p̂_g^{−1/2} (zero for s ≠ g); its θ gradient is that
    coefficient times x̃ = (x, 1). F(1−F) ≤ 1/4, |w| ≤ D (projection), so the record moves the θ mean by at
    most λ·2·(‖x̃‖/4)·D·p̂_g^{−1/2}/m_y: the prediction's true Lipschitz constant in θ is max‖x̃‖/4, whatever
    L is, and under equalized odds each label part is a mean over its own m_y rows (``label_rows``; m_y = m
    for demographic parity). The batch clip is a projection (1-Lipschitz), so the true Δ_θ is also ≤ 2L.
    W's s-dependent gradient 2·F·p̂_g^{−1/2} (×λ, as its noise) moves the W mean by at most
    2·p̂_g^{−1/2}/m_y. Hence the noise-multiplier ratios

        r_θ = min(2L, 2λ·(max‖x̃‖/4)·D·p̂_g^{−1/2}/m_y) / Δ_θ,   r_W = (2·p̂_g^{−1/2}/m_y) / Δ_W   (0 at λ = 0)

    and the ε of the θ block (multiplier z/r_θ) and of the joint (θ, W) step (z/√(r_θ² + r_W²)) from the
    same accountant as :func:`accountant_epsilons`. At λ = 0 the model does not depend on s: ε = 0.
    ``p_group`` = p̂(S = g) (p̂(S = g | Y = y) under EO) of the code's group g. P̂_S treated as public.
    """
    if not (max_row_norm > 0 and label_rows > 0 and 0 < p_group <= 1 and lam >= 0 and clip > 0 and radius > 0):
        raise InvalidParameterError(
            f"data_bound_epsilons needs max_row_norm > 0, label_rows > 0, p_group in (0, 1], lam >= 0, clip and "
            f"radius > 0; got {max_row_norm}, {label_rows}, {p_group}, {lam}, {clip}, {radius}.")
    z = noise_multiplier(n, steps, batch_size, epsilon, delta)
    if lam == 0:
        return DataBoundEpsilon(0.0, 0.0, 0.0, 0.0)
    if z == 0.0:
        return DataBoundEpsilon(math.inf, math.inf, math.inf, math.inf)
    formula_theta = 2 * math.sqrt(2) * clip * radius / (batch_size * math.sqrt(rho))
    formula_w = 2 * math.sqrt(2) / (batch_size * math.sqrt(rho))
    isp = 1 / math.sqrt(p_group)
    true_theta = min(2 * clip, 2 * lam * (max_row_norm / 4) * radius * isp / label_rows)
    true_w = 2 * isp / label_rows
    r_t, r_w = true_theta / formula_theta, true_w / formula_w
    q = min(1.0, batch_size / n)
    eps_t = float(dp_sgd_epsilon(z / r_t, q, steps, delta, accountant))
    eps_j = float(dp_sgd_epsilon(z / math.hypot(r_t, r_w), q, steps, delta, accountant))
    return DataBoundEpsilon(r_t, r_w, eps_t, eps_j)
