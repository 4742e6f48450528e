"""DP-FERMI (Lowy et al., ICLR 2023) on the tabular figures: every λ of a trial in one batched engine pass.

Variants (``--variant``): ``reference`` (the authors' released code path, (L, D, η_θ) ``tuned`` by
:mod:`repro.studies.dpfermi.tuning`, ``authors-eo`` (the same rule over (L, D) with η_θ fixed at
``authors_lr_theta``, the authors' ``args.py`` default 0.005; the EO figures' primary setting, issue 22)
and/or ``fixed``), ``strict`` and ``strict-all`` (the paper's ERMI with
accountant-calibrated noise); see :mod:`repro.studies.dpfermi.tradeoff_figures`. All λ of a trial and its
non-private λ = 0 model are trained together by :func:`repro.learners.dp_fermi_unit.train_batch` (one
compiled program; shared batches and noise draws); :func:`repro.learners.dp_fermi_unit.configure` calibrates them. Spec: seed-004-dpfermi.md §4.3–§4.4, §5, §7.2.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from repro.engine.trial import TrialContext
from repro.errors import InvalidParameterError
from repro.learners.dp_fermi import DPFermiConfig, accountant_name
from repro.learners.dp_fermi import guarantee as dp_fermi_guarantee
from repro.learners.dp_fermi_unit import VARIANTS, configure, fit_many, schedule
from repro.privacy.dpfermi_noise import accountant_epsilons, data_bound_epsilons, group_floor
from repro.privacy.group import SHARED_NOISE
from repro.studies.dpfermi._tabular import metrics, privileged_group, split
from repro.studies.methods import KnobFit, Method

#: the DP-FERMI engine configuration of each variant; its privacy mode decides the guarantee, which the
#: engine declares next to its code (:func:`repro.learners.dp_fermi.guarantee`; ε is filled per cell)
VARIANT_ENGINE = VARIANTS
GUARANTEES = {variant: dp_fermi_guarantee(engine, math.inf, 0.0) for variant, engine in VARIANT_ENGINE.items()}


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
    steps = schedule(base, n)[1]
    rho, delta = group_floor(str_), 1.0 / n**2
    base = base.with_(code_group=privileged_group(ytr, str_))

    def compute():
        carve = ctx.rng(*labels, "carve", scope="tuning")
        train = [ctx.rng(*labels, "train", j, scope="tuning") for j in range(grid.seeds)]
        return tune_reference(Xtr, ytr, str_, base=base, epsilon=eps, n_final=n, rho_final=rho, delta=delta,
                              grid=grid, carve_rng=carve, train_rngs=train)

    key = {"labels": labels, "grid": dataclasses.asdict(grid), "base": dataclasses.asdict(base), "n": n,
           "steps": steps, "rho": rho, "delta": delta}
    return ctx.shared_value("dpfermi-tuning", scope="tuning", key=key, compute=compute, module=__name__,
                            validate=_is_tuning_choice)


def _data_bound(n, steps, B, eps, delta, lam, clip, radius, rho, facts) -> dict[str, float]:
    """ε of the reference noise at λ = ``lam`` under the data's bounds (θ block and joint, RDP), or ∞."""
    if math.isinf(eps):
        return {"eps_data_theta_rdp": math.inf, "eps_data_joint_rdp": math.inf}
    r = data_bound_epsilons(n, steps, B, eps, delta, lam=lam, clip=clip, radius=radius, rho=rho,
                            max_row_norm=facts["max_row_norm"], label_rows=facts["label_rows"],
                            p_group=facts["p_group"])
    return {"eps_data_theta_rdp": r.eps_theta_rdp, "eps_data_joint_rdp": r.eps_joint_rdp}


def _is_tuning_choice(value: Any) -> bool:
    """Structure of a cached tuning value: a TuningChoice whose (L, D, η_θ) are numbers."""
    from repro.studies.dpfermi.tuning import TuningChoice

    return isinstance(value, TuningChoice) and all(
        isinstance(v, (int, float)) for v in (value.clip, value.radius, value.lr_theta, value.validation_error))


def data_facts(Xtr, ytr, str_, yte, fairness: str, code_group: int, batch_size: int) -> dict[str, Any]:
    """What :func:`repro.privacy.dpfermi_noise.data_bound_epsilons` needs from the data (issue 22), and the
    all-negative classifier's test error (for the released-points errata check).

    ``max_row_norm`` = max over training rows of ‖(x, 1)‖; ``label_rows`` = rows of the worst label part in a
    full batch of ``batch_size`` (its expected count m·n_y/n; batch_size for DP) and ``p_group`` = p̂(S = g)
    (p̂(S = g | Y = y) under EO) of that part, the part whose per-record weight 1/(m_y·√p̂_g) is largest."""
    import numpy as np

    Xtr, ytr, str_ = np.asarray(Xtr, float), np.asarray(ytr), np.asarray(str_)
    parts = [(batch_size, float(np.mean(str_ == code_group)))] if fairness != "eo" else [
        (batch_size * float(np.mean(ytr == y)), float(np.mean(str_[ytr == y] == code_group)))
        for y in np.unique(ytr)]
    m_y, p_g = max(parts, key=lambda t: 1.0 / (t[0] * math.sqrt(t[1])) if t[1] > 0 else 0.0)
    return {"max_row_norm": float(np.sqrt(np.einsum("ij,ij->i", Xtr, Xtr).max() + 1.0)),
            "label_rows": m_y, "p_group": p_g, "error_all_negative": float(np.mean(np.asarray(yte) != 0))}


def prepare(params: dict[str, Any], ctx: TrialContext, data: str, ds, parts: tuple) -> KnobFit:
    """Every λ of one (dataset, ε) cell and the non-private λ = 0 model, made ready for one batched pass
    (:func:`repro.learners.dp_fermi_unit.fit_many`); its ``finish`` scores them on the test rows."""
    Xtr, ytr, str_, Xte, yte, ste = parts
    eps = float(params["epsilon"])
    fairness = params["fairness"]
    variant = params["variant"]
    n = Xtr.shape[0]
    B = int(params["batch_size"])
    epochs = int(params["epochs"])
    delta = 1.0 / n**2
    rho = group_floor(str_)
    base = dict(lr_theta=float(params["lr_theta"]), lr_w=float(params["lr_w"]),
                batch_size=B, epochs=epochs, fairness=fairness)
    steps = schedule(VARIANT_ENGINE["reference"].with_(**base), n)[1]   # the strict variants record their own
    privacy: dict[str, Any] = {"method": "dp-fermi", "epsilon": eps, "delta": delta, "n_train": n,
                               "steps": steps, "rho": rho, "variant": variant, "joint_release": SHARED_NOISE}
    tables: dict[str, list[dict[str, Any]]] = {}
    if variant == "reference":
        lambdas = [float(v) for v in params["lambdas"]]
        acc = accountant_epsilons(n, steps, B, eps, delta)
        code_group = privileged_group(ytr, str_)
        ref = DPFermiConfig(**base, code_group=code_group)
        facts = data_facts(Xtr, ytr, str_, yte, fairness, code_group, B)
        lam_max = max(lambdas)
        # (L, D, η_θ) per hyperparameter setting: `tuned` by the declared validation rule, `fixed` = the
        # project's earlier reading L = D = 5, η_θ = params lr_theta (issue 13, item 3)
        settings: dict[str, tuple[float, float, float]] = {}
        for hyper in params["hyperparameters"]:
            if hyper == "fixed":
                settings[hyper] = (float(params["fixed_clip"]), float(params["fixed_radius"]),
                                   base["lr_theta"])
            elif hyper in ("tuned", "authors-eo"):
                # `authors-eo` (issue 22): the tuning rule chooses (L, D) with η_θ fixed at the authors'
                # args.py default (`authors_lr_theta`); `tuned` also tunes η_θ over tune_lr_thetas
                lrs = (float(params["authors_lr_theta"]),) if hyper == "authors-eo" else None
                choice = _tuned(params, ctx, data, ds, ref, lr_thetas=lrs)
                settings[hyper] = (choice.clip, choice.radius, choice.lr_theta)
                if ctx.repetition == 0:
                    tables.setdefault("tuning", []).extend(
                        {"epsilon": eps, "data": data, "hyper": hyper, **r} for r in choice.rows)
            else:
                raise InvalidParameterError(f"hyperparameters must list 'tuned', 'authors-eo' and/or 'fixed'; "
                                            f"got {hyper!r}.")
        cfgs, tags, privacy_rows = [], [], []
        for hyper, (clip, radius, lr) in settings.items():
            c = configure(ref, n=n, epsilon=eps, delta=delta, rho=rho, clip_norm=clip, w_radius=radius,
                          lr_theta=lr)
            cfg = c.config
            cfgs += [cfg.with_(lam=lam) for lam in lambdas]
            tags += [(hyper, clip, radius, lr, lam) for lam in lambdas]
            privacy_rows.append({**privacy, "hyper": hyper, "clip_L": clip, "radius_D": radius, "lr_theta": lr,
                                 "sigma_theta": cfg.sigma_theta, "sigma_w": cfg.sigma_w,
                                 "noise_multiplier": acc["z"], "eps_block_rdp": acc["block"],
                                 "eps_joint_rdp": acc["joint"], "conditions_ok": c.conditions_ok,
                                 "code_group": code_group, **facts, "lambda_max": lam_max,
                                 **_data_bound(n, steps, B, eps, delta, lam_max, clip, radius, rho, facts),
                                 "guarantee": c.guarantee.describe()})
        first = next(iter(settings.values()))
        nonpriv = ref.with_(clip_norm=first[0], w_radius=first[1], lr_theta=first[2], sigma_theta=0.0,
                            sigma_w=0.0, lam=0.0)

        def finish_reference(results: list) -> tuple[list, list, dict]:
            err0 = metrics(results[-1].model.predict(Xte), yte, ste, fairness)["error"]
            records = [{"method": "dp-fermi", "knob": lam, "hyper": hyper, "clip_L": clip, "radius_D": radius,
                        "lr_theta": lr, "error_nonprivate": err0,
                        **metrics(res.model.predict(Xte), yte, ste, fairness)}
                       for (hyper, clip, radius, lr, lam), res in zip(tags, results[:-1], strict=True)]
            return records, privacy_rows, tables

        return KnobFit(Xtr, ytr, str_, [*cfgs, nonpriv], ctx.rng(), finish_reference)
    elif variant in ("strict", "strict-all"):
        lambdas = [float(v) for v in params["strict_lambdas"]]
        # strict: the exact strict accountant (unclipped non-sensitive part, issue 14 defect 1; issue 21);
        # strict-all: PLD of the Poisson-subsampled Gaussian
        c = configure(variant, n=n, epsilon=eps, delta=delta, **base)
        cfg = c.config
        privacy.update(noise_multiplier=cfg.noise_multiplier, clip_norm=cfg.clip_norm, steps=c.steps,
                       sampling_probability=c.sampling_probability, accountant=accountant_name(cfg),
                       eps_joint_pld=c.accounted_epsilon, guarantee=c.guarantee.describe())
        nonpriv = cfg.with_(noise_multiplier=0.0, lam=0.0)
    else:
        raise InvalidParameterError(
            f"variant must be 'reference', 'strict' or 'strict-all'; got {variant!r}.")

    def finish_strict(results: list) -> tuple[list, list, dict]:
        err0 = metrics(results[-1].model.predict(Xte), yte, ste, fairness)["error"]
        records = [{"method": "dp-fermi", "knob": lam, "error_nonprivate": err0,
                    **metrics(res.model.predict(Xte), yte, ste, fairness)}
                   for lam, res in zip(lambdas, results[:-1], strict=True)]
        return records, [privacy], tables

    # all λ and the non-private λ = 0 model in one batched run (shared batches and noise draws)
    return KnobFit(Xtr, ytr, str_, [cfg.with_(lam=lam) for lam in lambdas] + [nonpriv], ctx.rng(), finish_strict)


#: declared by its batched hook: the study trains the λ grids of several trials in one ``fit_many`` call
METHOD = Method.batched(name="dp-fermi", prepare=prepare, fit_many=fit_many, guarantee=GUARANTEES, order=30,
                        style={"color": "tab:orange", "label": "DP-FERMI"})
