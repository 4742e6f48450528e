"""Exact step audit of the UTKFace CNN's ``strict`` step (DP-FERMI Fig. 5, ``--variant strict``) on the real VGG.

The claim is the CNN unit's (:func:`repro.learners.dp_fermi_cnn_unit.configure`) at Figure 5's ``cpu``-profile
run (n_train = 17,778, B = 64, 3 epochs, ε = 10, δ = 1/n², C_s = 1): each step releases the θ and W sums with a
joint sensitivity/noise ratio of at most μ = 1/z under "replace one record's sensitive attribute" (P̂_S public),
and the exact strict accountant composes that over the T Poisson-sampled steps (spec seed-004 §4.4).

The audit runs the jitted step the trainer runs (:func:`repro.learners.dp_fermi_cnn._make_strict_step`) on the
paper's VGG at 16 px (fresh initialisations, synthetic images, a batch of B records, learning rates 1 and no W
projection so that the released sums can be read back from the update). For sampled records i and groups
s′ ≠ s_i it computes the released sums without noise on D and on D′ (s_i → s′): Δ_θ and Δ_W. The noise the step
adds is observed in two parts: the scale the step multiplies its standard normals by, read back from the update
(normals set to one), at the stds the trainer takes from :func:`repro.learners.dp_fermi.noise_stds`; and the std
of the normals the trainer's own device draw (``_noise_fn``) gives over :data:`NOISE_DRAWS` steps.
The observed ratio is μ_obs = max over neighbours of √(‖Δ_θ‖²/σ_θ² + ‖Δ_W‖²/σ_W²); the audited ε is the exact
strict accountant's at z = 1/μ_obs with the configured q and T (:meth:`repro.learners.unit.Configured.observed`).
It is exact for the neighbours sampled: a lower bound of the step's sensitivity, so a clip or a noise std that
is wrong anywhere on the trainer's path shows. Control: the step built without its clip (C_s = ∞), noise as
calibrated.
"""

from __future__ import annotations

import math

import numpy as np

from repro.learners import dp_fermi_cnn_unit as cnn_unit
from repro.learners.unit import Configured
from repro.studies.audit.mechanisms import AuditResult, Mechanism

__all__ = ["SHIPPED_CNN", "audit_cnn_strict_step", "CNN_STEP"]

#: Figure 5's cpu-profile run, variant strict (experiments/dpfermi-fig-5.toml): n_train, B, epochs, ε, C_s
SHIPPED_CNN = {"n": 17_778, "batch_size": 64, "epochs": 3, "epsilon": 10.0, "clip_norm": 1.0}
#: the audited network's resolution (the paper's VGG; 16 px keeps the per-sample gradients cheap on a CPU)
RESOLUTION = 16
GROUPS, CLASSES = 5, 9
#: steps of the trainer's noise draw whose standard normals are measured (W: 45 a step; θ: the first four steps')
NOISE_DRAWS = 500


def configured() -> Configured:
    """The claim: the CNN unit's ``configure("strict", ...)`` at :data:`SHIPPED_CNN` (δ = 1/n²)."""
    ship = SHIPPED_CNN
    return cnn_unit.configure("strict", n=ship["n"], epsilon=ship["epsilon"], delta=1.0 / ship["n"] ** 2,
                              rho=1.0 / GROUPS, batch_size=ship["batch_size"], epochs=ship["epochs"],
                              lr_theta=0.001, lr_w=0.005, clip_norm=ship["clip_norm"], warn=False)


def _flat(tree) -> np.ndarray:
    return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in tree])


def audit_cnn_strict_step(runs: int, rng: np.random.Generator, *, broken: bool = False) -> AuditResult:
    """The step audit (module docstring) over ``runs`` sampled neighbours (at least one)."""
    import jax.numpy as jnp

    from repro.learners import dp_fermi_cnn as cnn
    from repro.learners.dp_fermi import noise_stds

    c = configured()
    cfg = c.config
    B = SHIPPED_CNN["batch_size"]
    s = np.arange(B) % GROUPS
    isp = 1.0 / np.sqrt(np.bincount(s, minlength=GROUPS) / B)
    th_std, (w_std,), _, _ = noise_stds([cfg], [isp], "full", 0)
    clip = math.inf if broken else cfg.clip_norm
    shapes = cnn.vgg_shapes(RESOLUTION, CLASSES)
    step = cnn._make_strict_step(cnn.vgg_apply, clip, 1.0, 1.0, "frobenius", 1e30, shapes)
    n_params = sum(int(np.prod(sh)) for sh in shapes)
    dtype = jnp.zeros(()).dtype
    X = jnp.asarray(rng.integers(0, 256, size=(B, RESOLUTION, RESOLUTION, 3), dtype=np.uint8))
    Y = jnp.asarray(rng.integers(0, CLASSES, size=B), dtype=jnp.int32)
    idx, mask = jnp.arange(B, dtype=jnp.int32), jnp.ones(B, dtype=dtype)
    isp_d, lam = jnp.asarray(isp, dtype=dtype), float(cfg.lam)
    zeros_u, zeros_v = jnp.zeros(n_params, dtype), jnp.zeros((GROUPS, CLASSES), dtype)
    denom = float(max(int(c.n * c.sampling_probability), 1))

    def released(params, W, S, u, V) -> tuple[np.ndarray, np.ndarray]:
        """The θ and W sums the step releases (the update × denom, learning rates 1, no projection)."""
        p_out, w_out = step(params, W, X, Y, jnp.asarray(S, dtype=jnp.int32), idx, mask, isp_d, lam, u, V,
                            float(th_std[0]), float(w_std[0]), denom)
        return (_flat(params) - _flat(p_out)) * denom, (np.asarray(w_out, np.float64) - np.asarray(W)).ravel() * denom

    import jax

    draw, key = cnn._noise_fn(n_params, (GROUPS, CLASSES), dtype), jax.random.key(int(rng.integers(2**31)))
    normals = [draw(key, t) for t in range(1, NOISE_DRAWS + 1)]
    u_std = float(np.std(np.concatenate([np.asarray(u, np.float64) for u, _ in normals[:4]])))   # 4 × |θ| normals
    v_std = float(np.std(np.concatenate([np.asarray(v, np.float64).ravel() for _, v in normals])))
    worst, theta_obs, w_obs = 0.0, math.nan, math.nan
    for r in range(max(int(runs), 1)):
        params = tuple(jnp.asarray(p, dtype) for p in cnn.vgg_init(rng, RESOLUTION, CLASSES))
        W = jnp.asarray(rng.standard_normal((GROUPS, CLASSES)), dtype)
        base = released(params, W, s, zeros_u, zeros_v)
        if r == 0:   # the scale the step gives its normals (read back with normals of one) × their drawn std
            ones = released(params, W, s, jnp.ones(n_params, dtype), jnp.ones((GROUPS, CLASSES), dtype))
            theta_obs = float(np.mean(ones[0] - base[0])) * u_std
            w_obs = float(np.mean(ones[1] - base[1])) * v_std
        i = int(rng.integers(B))
        other = s.copy()
        other[i] = (s[i] + 1 + int(rng.integers(GROUPS - 1))) % GROUPS
        moved = released(params, W, other, zeros_u, zeros_v)
        ratio = math.sqrt(float(np.sum((moved[0] - base[0]) ** 2)) / theta_obs**2
                          + float(np.sum((moved[1] - base[1]) ** 2)) / w_obs**2)
        worst = max(worst, ratio)
    z = c.noise_multiplier
    audited = c.observed(1.0 / worst, c.sampling_probability).epsilon() if worst > 0 else 0.0
    note = (f"Fig. 5 cpu run, strict (n = {c.n:,}, q = {c.sampling_probability:.5f}, T = {c.steps}, z = {z:.4f}); VGG at "
            f"{RESOLUTION} px, {max(int(runs), 1)} sampled neighbours (replace one record's s); step ratio observed "
            f"{worst:.4f} vs 1/z = {1 / z:.4f}; noise std observed θ {theta_obs:.4g} (intended "
            f"{th_std[0]:.4g}), W {w_obs:.4g} (intended {w_std[0]:.4g})")
    if broken:
        note += "; control: the step without its clip (C_s = ∞), noise as calibrated"
    return AuditResult("dp-fermi-cnn-strict-step", c.guarantee, audited,
                       "exact strict accountant at z = 1/(largest observed step ratio)", audited, 1.0,
                       max(int(runs), 1), method="exact", broken=broken, note=note)


#: the registry entry (:data:`repro.studies.audit.mechanisms.MECHANISMS` form): neighbours per profile
CNN_STEP = {"dp-fermi-cnn-strict-step": Mechanism(audit_cnn_strict_step, {"smoke": 4, "full": 32},
                                                  "the step without its clip (C_s = ∞), noise as calibrated")}
