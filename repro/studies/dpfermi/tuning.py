"""DP-FERMI's tuning of the clip L, the radius D and the step size η_θ, done on validation data (issue 13, item 3).

The paper: "We tuned the ℓ2 diameter of the projection set W and θ-gradient clipping threshold in [1, 5]
in order to generate stable results with high privacy" ([1, 2] for equalized odds), with η_θ ∈ {0.005, 0.01}
(spec seed-004 §7.2); the authors' ``args.py`` says to tune L and D "preferably for each value of the pair
{lambda, epsilon}". The released runs do not say which values were chosen. Here the choice is made by a
rule declared in the experiment file *before* any result is seen, on data the test split never touches:

1. carve a validation part (``validation_fraction`` of the training rows, drawn from a generator the
   caller keys by the dataset, data mode, fairness notion and ε only: the same carve for every repetition);
2. for each (L, D, η_θ) of the declared grid, train the reference code path at λ = 0 on the rest of the
   training rows with the Theorem 3.3(a) noise *of the final run* (its n, T and ρ) at that L and D,
   ``seeds`` times (all grid points share batches and noise draws: one batched engine call per seed);
3. pick the lowest mean validation error; ties (grid points whose runs coincide, e.g. equal L·D and a
   clip that never fires) go to the larger D, then the larger L, then the smaller η_θ.

At λ = 0 the dual variable W does not enter the θ update, so D acts only through σ_θ ∝ L·D: the rule
chooses the noise level and the clip, and D follows from the tie-break. The search itself is not
privacy-accounted (neither was the paper's). Spec: seed-004 §5(a) (σ's), §7.2; issue 13 facts 5–8.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners.dp_fermi import DPFermiConfig
from repro.learners.dp_fermi_unit import configure, fit_many

__all__ = ["TuningGrid", "TuningChoice", "tune_reference"]


@dataclass(frozen=True)
class TuningGrid:
    """The declared search space and rule inputs (experiment file ``tune_*`` params)."""

    clips: tuple[float, ...]
    radii: tuple[float, ...]
    lr_thetas: tuple[float, ...]
    seeds: int = 3
    validation_fraction: float = 0.2

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> TuningGrid:
        grid = cls(clips=tuple(float(v) for v in params["tune_clips"]),
                   radii=tuple(float(v) for v in params["tune_radii"]),
                   lr_thetas=tuple(float(v) for v in params["tune_lr_thetas"]),
                   seeds=int(params["tune_seeds"]),
                   validation_fraction=float(params["tune_validation_fraction"]))
        if not (grid.clips and grid.radii and grid.lr_thetas) or grid.seeds < 1:
            raise InvalidParameterError("tune_clips, tune_radii and tune_lr_thetas must be non-empty and "
                                        "tune_seeds >= 1; set them in the experiment's [params].")
        if not 0 < grid.validation_fraction < 1:
            raise InvalidParameterError(f"tune_validation_fraction must lie in (0, 1); got "
                                        f"{grid.validation_fraction}. Use e.g. 0.2.")
        return grid

    def points(self) -> list[tuple[float, float, float]]:
        """(L, D, η_θ) in a fixed order."""
        return list(itertools.product(self.clips, self.radii, self.lr_thetas))


@dataclass(frozen=True)
class TuningChoice:
    """The chosen (L, D, η_θ), its mean validation error, and every grid point's result (for the report)."""

    clip: float
    radius: float
    lr_theta: float
    validation_error: float
    rows: tuple[dict[str, Any], ...]


def tune_reference(Xtr: np.ndarray, ytr: np.ndarray, s_tr: np.ndarray, *, base: DPFermiConfig, epsilon: float,
                   n_final: int, rho_final: float, delta: float, grid: TuningGrid,
                   carve_rng: np.random.Generator, train_rngs: list[np.random.Generator]) -> TuningChoice:
    """Choose (L, D, η_θ) for the reference code path by the module's rule (λ = 0, validation error).

    ``base`` is the final run's configuration (code path, epochs, batch size, η_W, code group); the
    noise of each grid point is Theorem 3.3(a)'s at the final run's ``n_final`` (and so its T) and
    ``rho_final`` (:func:`repro.learners.dp_fermi_unit.configure`). ``carve_rng`` draws the validation part
    and ``train_rngs`` (one per seed of ``grid``) the training passes; the caller keys them by the cell, never
    by the repetition.
    """
    if len(train_rngs) != grid.seeds:
        raise ValueError(f"tune_reference: {len(train_rngs)} training generators for {grid.seeds} seeds")
    n = Xtr.shape[0]
    perm = carve_rng.permutation(n)
    n_val = int(round(grid.validation_fraction * n))
    val, fit = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    points = grid.points()
    configs = [configure(base, n=n_final, epsilon=epsilon, delta=delta, rho=rho_final, warn=False, lam=0.0,
                         clip_norm=clip, w_radius=radius, lr_theta=lr).config
               for clip, radius, lr in points]
    errors = np.empty((grid.seeds, len(points)))
    # every seed's pass in one compiled program, each from its own stream
    passes = fit_many(Xtr[fit], ytr[fit], s_tr[fit], [configs] * grid.seeds, list(train_rngs))
    for j, results in enumerate(passes):
        errors[j] = [float(np.mean(r.model.predict(Xtr[val]) != ytr[val])) for r in results]
    mean = errors.mean(axis=0)
    best = min(range(len(points)), key=lambda i: (mean[i], -points[i][1], -points[i][0], points[i][2]))
    rows = tuple({"clip_L": c, "radius_D": r, "lr_theta": lr, "sigma_theta": cfg.sigma_theta,
                  "validation_error": float(mean[i]), "validation_error_std":
                  float(errors[:, i].std(ddof=1)) if grid.seeds > 1 else 0.0, "chosen": i == best}
                 for i, ((c, r, lr), cfg) in enumerate(zip(points, configs, strict=True)))
    c, r, lr = points[best]
    return TuningChoice(clip=c, radius=r, lr_theta=lr, validation_error=float(mean[best]), rows=rows)
