"""DP-FERMI on the tabular figures (variants: :mod:`repro.studies.dpfermi.tradeoff_figures`): every λ of a trial and
the λ = 0 model in one pass of :mod:`repro.learners.dp_fermi_unit`. Spec: seed-004 §4.3–§4.4, §5, §7.2."""

from __future__ import annotations

from repro.learners import dp_fermi_unit as unit
from repro.learners.unit import privacy_row
from repro.privacy.dpfermi_noise import group_floor
from repro.privacy.group import SHARED_NOISE
from repro.studies.dpfermi import reference_settings as ref_settings
from repro.studies.dpfermi._tabular import metrics
from repro.studies.methods import KnobFit, Method, Trial


def prepare(trial: Trial) -> KnobFit:
    """Every λ of one (dataset, ε) cell (per (L, D, η_θ) setting for ``reference``) and the λ = 0 model."""
    (Xtr, ytr, str_, Xte, yte, ste), params, ctx = trial.parts, trial.params, trial.ctx
    eps, fairness, variant, n, rho = float(params["epsilon"]), params["fairness"], params["variant"], len(Xtr), \
        group_floor(str_)
    base = dict(lr_theta=float(params["lr_theta"]), lr_w=float(params["lr_w"]), batch_size=int(params["batch_size"]),
                epochs=int(params["epochs"]), fairness=fairness)
    head, tables = {"method": "dp-fermi", "epsilon": eps, "n_train": n, "rho": rho, "variant": variant,
                    "joint_release": SHARED_NOISE}, {}
    if variant != "reference":
        c, lambdas, tags = unit.configure(variant, n=n, epsilon=eps, **base), params["strict_lambdas"], {None: {}}
        settings, rows = {None: c}, [{**head, **privacy_row(c, "delta", "steps", "noise_multiplier", "clip_norm",
                                                             "sampling_probability", "accountant", "guarantee",
                                                             eps_joint_pld="epsilon_pld")}]
    else:
        lambdas = params["lambdas"]
        cell = ref_settings.settings(params, ctx, trial.data, trial.ds, unit.VARIANTS["reference"].with_(**base),
                                     trial.parts)
        tables = {"tuning": cell.tuning} if cell.tuning else {}
        settings = {h: unit.configure("reference", n=n, epsilon=eps, rho=rho, **{
            **base, "clip_norm": L, "w_radius": D, "lr_theta": lr, "code_group": cell.code_group})
            for h, (L, D, lr) in cell.chosen.items()}
        tags = {h: dict(zip(("hyper", "clip_L", "radius_D", "lr_theta"), (h, *cell.chosen[h]), strict=True))
                for h in cell.chosen}
        rows = [{**head, **tags[h], **cell.privacy_columns(c, h, eps, max(map(float, lambdas)), rho)}
                for h, c in settings.items()]
    points = [(h, float(lam)) for h in settings for lam in lambdas]
    zero = dict(lam=0.0, noise_multiplier=0.0, sigma_theta=0.0, sigma_w=0.0)

    def finish(results: list) -> tuple[list, list, dict]:
        err0 = metrics(results[-1].model.predict(Xte), yte, ste, fairness)["error"]
        return [{"method": "dp-fermi", "knob": lam, **tags[h], "error_nonprivate": err0,
                 **metrics(r.model.predict(Xte), yte, ste, fairness)}
                for (h, lam), r in zip(points, results[:-1], strict=True)], rows, tables

    configs = [settings[h].config.with_(lam=lam) for h, lam in points]
    return KnobFit(Xtr, ytr, str_, [*configs, configs[0].with_(**zero)], ctx.rng(), finish)


#: declared by its batched hook: the study trains the λ grids of several trials in one ``fit_many`` call
METHOD = Method.batched(name="dp-fermi", prepare=prepare, fit_many=unit.fit_many, guarantee=unit.DECLARED, order=30,
                        style={"color": "tab:orange", "label": "DP-FERMI"})
