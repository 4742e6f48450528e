"""Study: DP-FERMI test error against the noise level L·D (experiment ``dpfermi-noise-sweep``, issue 13 item 4).

Theorem 3.3(a)'s σ_θ = √(16 L² D² ln(1/δ) T / (ε² n² ρ)) grows with the product of the clip L and the
radius D, while on these datasets the batch-mean gradient norm stays below 1, so the clip never fires
and a smaller L·D removes noise without changing the signal (issue 13 fact 6). The released runs do
not say which (L, D) they used. This diagnostic trains the reference code path (the authors' [C0],
engine config ``REFERENCE``) on the authors' data and split at every declared (L, D) pair, λ ∈
``lambdas`` and η_θ ∈ ``lr_thetas`` (all in one batched engine call: same batches and noise draws),
and reports test error and violation; the report draws the released λ = 0 points as reference lines
and names the L·D whose λ = 0 error is closest to each — an *inference* about the noise level of the
released runs, not a measurement of it.

Spec: seed-004-dpfermi.md §5(a), §7.2; issue 13 facts 5–8.
"""

from __future__ import annotations

from typing import Any

from repro.engine.study import Study
from repro.engine.trial import TrialContext, TrialOutput
from repro.errors import InvalidParameterError
from repro.fairness.notion import Fairness
from repro.learners.dp_fermi import REFERENCE
from repro.learners.dp_fermi_unit import configure, train_batch
from repro.privacy.dpfermi_noise import group_floor
from repro.studies.dpfermi.tradeoff_figures import _metrics, _privileged_group, _split, load_dataset

__all__ = ["STUDY", "run_trial"]


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """Every (L, D) × λ × η_θ of one (dataset, fairness, ε) on one repetition. Spec: seed-004 §5(a)."""
    fairness = str(Fairness.of(params["fairness"]))
    pairs = [tuple(float(v) for v in p) for p in params["clip_radius_pairs"]]
    if not pairs or any(len(p) != 2 or min(p) <= 0 for p in pairs):
        raise InvalidParameterError("clip_radius_pairs must be a non-empty list of [L, D] pairs with L, D > 0.")
    data = str(params["data"])
    ds = load_dataset(str(params["dataset"]), data)
    Xtr, ytr, s_tr, Xte, yte, s_te = _split(ds, params, ctx, data)
    eps = float(params["epsilon"])
    n, B, epochs = Xtr.shape[0], int(params["batch_size"]), int(params["epochs"])
    delta, rho = 1.0 / n**2, group_floor(s_tr)
    base = REFERENCE.with_(fairness=fairness, batch_size=B, epochs=epochs, lr_w=float(params["lr_w"]),
                           code_group=_privileged_group(ytr, s_tr))
    configs, tags = [], []
    for clip, radius in pairs:
        c = configure(base, n=n, epsilon=eps, delta=delta, rho=rho, warn=False, clip_norm=clip, w_radius=radius)
        for lr in params["lr_thetas"]:
            for lam in params["lambdas"]:
                configs.append(c.config.with_(lam=float(lam), lr_theta=float(lr)))
                tags.append({"clip_L": clip, "radius_D": radius, "LD": clip * radius, "lr_theta": float(lr),
                             "knob": float(lam), "sigma_theta": c.config.sigma_theta})
    results = train_batch(Xtr, ytr, s_tr, configs, rng=ctx.rng())
    label = c.guarantee.label.value   # the engine's declaration for its mode
    records = [{"method": "dp-fermi", **tag, "eps_label": label,
                **_metrics(res.model.predict(Xte), yte, s_te, fairness)}
               for tag, res in zip(tags, results, strict=True)]
    return TrialOutput(records=records)


STUDY = Study(run_trial=run_trial, index=("clip_L", "radius_D", "lr_theta", "knob"),
              values=("LD", "sigma_theta", "eps_label"))
