"""The DP-FERMI reference variant's per-cell inputs on the tabular figures: its (L, D, η_θ) settings (tuned on
validation data, :mod:`repro.studies.dpfermi.tuning`, or fixed) and the data facts and data-bound ε its privacy
row records (issue 22). Spec: seed-004-dpfermi.md §5, §7.2.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from repro.engine.trial import TrialContext
from repro.errors import InvalidParameterError
from repro.learners.dp_fermi import DPFermiConfig
from repro.learners.dp_fermi_unit import privileged_group
from repro.learners.unit import Configured, privacy_row
from repro.privacy.dpfermi_noise import data_bound_epsilons, group_floor
from repro.studies.dpfermi._tabular import split

__all__ = ["ReferenceCell", "settings"]


def _tuned(params, ctx, data: str, ds, base: DPFermiConfig, lr_thetas: tuple[float, ...] | None = None):
    """The (L, D, η_θ) chosen by :func:`repro.studies.dpfermi.tuning.tune_reference` for this cell, computed
    once per run (and cached) for all repetitions: on the authors' fixed training part, or (clean data)
    on repetition 0's training part. Everything the search depends on (its rows, n, T, ρ, the code's
    group) is taken from that one training part, never from the calling repetition, so every
    repetition gets the same choice."""
    from repro.studies.dpfermi.tuning import TuningGrid, tune_reference

    grid = TuningGrid.from_params(params)
    if lr_thetas is not None:  # `authors-eo`: η_θ fixed, the rule still chooses (L, D)
        grid = dataclasses.replace(grid, lr_thetas=tuple(lr_thetas))
    eps = float(params["epsilon"])
    # the labels of the tuning streams (scope `tuning`, declared by the experiment files): never the repetition
    labels = [params["dataset"], data, params["fairness"], eps, int(params["subsample"] or 0),
              float(params["train_fraction"])]
    rep0 = ctx.for_repetition(0)
    if data == "clean":  # the split depends on the experiment and the repetition (rep 0 here)
        labels.append(ctx.experiment_id)
    Xtr, ytr, str_ = split(ds, params, rep0, data)[:3]
    n = Xtr.shape[0]
    rho, delta = group_floor(str_), 1.0 / n**2
    base = base.with_(code_group=privileged_group(ytr, str_))

    def compute():
        carve = ctx.rng(*labels, "carve", scope="tuning")
        train = [ctx.rng(*labels, "train", j, scope="tuning") for j in range(grid.seeds)]
        return tune_reference(Xtr, ytr, str_, base=base, epsilon=eps, n_final=n, rho_final=rho, delta=delta,
                              grid=grid, carve_rng=carve, train_rngs=train)

    key = {"labels": labels, "grid": dataclasses.asdict(grid), "base": dataclasses.asdict(base), "n": n,
           "rho": rho, "delta": delta}
    return ctx.shared_value("dpfermi-tuning", scope="tuning", key=key, compute=compute, module=__name__,
                            validate=_is_tuning_choice)


def _is_tuning_choice(value: Any) -> bool:
    """Structure of a cached tuning value: a TuningChoice whose (L, D, η_θ) are numbers."""
    from repro.studies.dpfermi.tuning import TuningChoice

    return isinstance(value, TuningChoice) and all(
        isinstance(v, (int, float)) for v in (value.clip, value.radius, value.lr_theta, value.validation_error))


@dataclass(frozen=True)
class ReferenceCell:
    """The reference variant's inputs of one cell: (L, D, η_θ) per ``hyperparameters`` entry (``chosen``), the
    tuning table's rows (repetition 0 only), the group whose 1×1 trace term the code keeps (``code_group``) and
    the data facts its privacy row records (``facts``, issue 22)."""

    chosen: dict[str, tuple[float, float, float]]
    tuning: list[dict[str, Any]]
    code_group: int
    facts: dict[str, Any]

    def privacy_columns(self, c: Configured, hyper: str, epsilon: float, lam_max: float, rho: float
                        ) -> dict[str, Any]:
        """The reference row's own columns for the setting ``hyper`` (the unit's row, :func:`privacy_row`): δ, T,
        the σ's, Theorem 3.3(a)'s z and the RDP ε of the paper's model (one block, joint), the conditions, the
        data facts and the ε of that noise under the data's true bounds at λ = ``lam_max`` (θ block and joint,
        RDP; issue 22, fact 5), and the guarantee."""
        L, D, _ = self.chosen[hyper]
        bound = {"eps_data_theta_rdp": math.inf, "eps_data_joint_rdp": math.inf}   # (ε = ∞: no noise)
        if not math.isinf(epsilon):
            r = data_bound_epsilons(c.n, c.steps, c.config.batch_size, epsilon, c.delta, lam=lam_max, clip=L,
                                    radius=D, rho=rho, max_row_norm=self.facts["max_row_norm"],
                                    label_rows=self.facts["label_rows"], p_group=self.facts["p_group"])
            bound = {"eps_data_theta_rdp": r.eps_theta_rdp, "eps_data_joint_rdp": r.eps_joint_rdp}
        return {**privacy_row(c, "delta", "steps", "sigma_theta", "sigma_w", "noise_multiplier",
                              eps_block_rdp="block_epsilon_rdp", eps_joint_rdp="epsilon_rdp"),
                **privacy_row(c, "conditions_ok"), "code_group": self.code_group, **self.facts, "lambda_max": lam_max,
                **bound, **privacy_row(c, "guarantee")}


def settings(params: dict[str, Any], ctx: TrialContext, data: str, ds, base: DPFermiConfig, parts: tuple
             ) -> ReferenceCell:
    """The reference inputs of the cell whose training and test rows are ``parts`` = (X, y, s, X_test, y_test,
    s_test) (:class:`ReferenceCell`), ``base`` the reference configuration with the cell's hyperparameters.

    (L, D, η_θ) per ``hyperparameters`` entry: ``tuned`` by the declared validation rule, ``authors-eo`` the same
    rule over (L, D) with η_θ fixed at the authors' ``args.py`` default (issue 22), ``fixed`` = the earlier
    reading L = D = 5, η_θ = ``lr_theta``. The data facts are what
    :func:`repro.privacy.dpfermi_noise.data_bound_epsilons` needs (issue 22), and the all-negative classifier's
    test error (for the released-points errata check): ``max_row_norm`` = max over training rows of ‖(x, 1)‖;
    ``label_rows`` = rows of the worst label part in a full batch (its expected count m·n_y/n; the batch size for
    DP) and ``p_group`` = p̂(S = g) (p̂(S = g | Y = y) under EO) of that part, the part whose per-record weight
    1/(m_y·√p̂_g) is largest."""
    Xtr, ytr, str_, _, yte, _ = (np.asarray(a) for a in parts)
    Xtr = Xtr.astype(float, copy=False)
    code = privileged_group(ytr, str_)
    ref, eps, batch, out, rows = base.with_(code_group=code), float(params["epsilon"]), base.batch_size, {}, []
    for hyper in params["hyperparameters"]:
        if hyper == "fixed":
            out[hyper] = (float(params["fixed_clip"]), float(params["fixed_radius"]), float(params["lr_theta"]))
        elif hyper in ("tuned", "authors-eo"):
            lrs = (float(params["authors_lr_theta"]),) if hyper == "authors-eo" else None
            choice = _tuned(params, ctx, data, ds, ref, lr_thetas=lrs)
            out[hyper] = (choice.clip, choice.radius, choice.lr_theta)
            if ctx.repetition == 0:
                rows.extend({"epsilon": eps, "data": data, "hyper": hyper, **r} for r in choice.rows)
        else:
            raise InvalidParameterError(f"hyperparameters must list 'tuned', 'authors-eo' and/or 'fixed'; "
                                        f"got {hyper!r}.")
    label_parts = [(batch, float(np.mean(str_ == code)))] if params["fairness"] != "eo" else [
        (batch * float(np.mean(ytr == y)), float(np.mean(str_[ytr == y] == code))) for y in np.unique(ytr)]
    m_y, p_g = max(label_parts, key=lambda t: 1.0 / (t[0] * math.sqrt(t[1])) if t[1] > 0 else 0.0)
    facts = {"max_row_norm": float(np.sqrt(np.einsum("ij,ij->i", Xtr, Xtr).max() + 1.0)), "label_rows": m_y,
             "p_group": p_g, "error_all_negative": float(np.mean(yte != 0))}
    return ReferenceCell(out, rows, code, facts)
