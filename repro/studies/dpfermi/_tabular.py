"""The tabular DP-FERMI figures' data and metrics, shared by the study and its method files, and the one
run of their declared methods (:func:`run_declared`).

Spec: seed-004-dpfermi.md §7.1 (datasets, 3:1 split), §7.3 (metrics (10)/(11)), §8 (baselines).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from repro.datasets import registry
from repro.datasets.split import split as split_rows
from repro.engine.trial import TrialContext
from repro.fairness.notion import Fairness
from repro.learners.unit import privacy_row
from repro.studies.methods import Declared, Param, Trial

__all__ = ["load_dataset", "split", "metrics", "run_declared", "BASELINE_SGD"]

#: the DP-SGD hyperparameters the baselines share (spec §8: C = 1, lr 0.1, batch 1024 in the experiment files)
BASELINE_SGD = {"batch_size": Param("batch_size", int), "lr": Param("baseline_lr"),
                "clip_norm": Param("baseline_clip")}


@functools.lru_cache(maxsize=8)
def load_dataset(name: str, data: str):
    """The :class:`repro.datasets.tabular.TabularDataset` of ``name`` in data mode ``data``: any tabular
    dataset of the registry (the experiment's ``[domains]`` says which it accepts; cached per process).
    Spec: seed-004 §7.1."""
    return registry.get_dataset(name).require("tabular", "the DP-FERMI tabular figures").load(data)


def split(ds, params: dict[str, Any], ctx: TrialContext, data: str):
    """The 3:1 split (:func:`repro.datasets.split.split` with the data mode's policy and
    ``subsample_of="train"``: ``subsample`` training rows), training-statistics standardization.

    ``data="authors"``: the authors' fixed split, the same for every repetition; ``"clean"``: a random
    split per repetition, from ``ctx.rng("split", dataset, scope="repetition")``.
    """
    from repro.datasets.tabular import standardize

    rng = ctx.rng("split", ds.name, scope="repetition")
    entry = registry.get_dataset(str(params["dataset"]))
    parts = split_rows(entry, data, n=ds.n, rng=rng, subsample=int(params["subsample"] or 0),
                       subsample_of="train", train_fraction=float(params["train_fraction"]))
    train, test = parts.train, parts.test
    X = standardize(ds.X, train, ds.numeric_columns)
    return (X[train], ds.y[train].astype(np.int64), ds.s[train].astype(np.int64),
            X[test], ds.y[test].astype(np.int64), ds.s[test].astype(np.int64))


def metrics(prob_pred: np.ndarray, y: np.ndarray, s: np.ndarray, fairness: Fairness | str) -> dict[str, float]:
    """Error, DP violation (10), EO violation (11) of (possibly expected) 0/1 predictions, and the violation of
    the figure's notion (:class:`repro.fairness.notion.Fairness`)."""
    p = np.asarray(prob_pred, dtype=float)
    err = float(np.mean(p * (1 - y) + (1 - p) * y))
    dp, eo = Fairness.DP.violation(p, s, y), Fairness.EO.violation(p, s, y)
    return {"error": err, "dp_violation": dp, "eo_violation": eo,
            "violation": dp if Fairness(fairness) is Fairness.DP else eo}


def run_declared(method: Declared, trial: Trial) -> tuple[list, list, dict]:
    """A declared method's trial (:meth:`repro.studies.methods.Method.declare`): its estimator
    (:class:`repro.studies.methods.Learner`) on the training rows with the budget (ε, δ = 1/n²) and the trial's
    generator, over its knob's points in one run; one record per knob point scored on the test rows, and the
    privacy row: the facts it reports (:func:`repro.learners.unit.privacy_row` of the estimator's ``configured_``,
    the learner unit's z and T, where it has one; else its fitted attributes) and the declared guarantee at the
    cell's (ε, δ), the claim the row's ε column states. Spec: seed-004 §7.2–§7.4, §8."""
    (Xtr, ytr, str_, Xte, yte, ste), params = trial.parts, trial.params
    learner = method.learner
    eps = float(params["epsilon"])
    n = Xtr.shape[0]
    delta = 1.0 / n**2
    fitted = learner.fit(Xtr, ytr, str_, params, epsilon=eps, delta=delta, rng=trial.ctx.rng())
    records = [{"method": method.name, **({} if point is None else {"knob": point}),
                **metrics(learner.predictions(est, Xte), yte, ste, params["fairness"])} for point, est in fitted]
    est = fitted[0][1]
    reported = (privacy_row(est.configured_, **learner.reports) if getattr(est, "configured_", None) is not None
                else {column: getattr(est, f"{fact}_") for column, fact in learner.reports.items()})
    return records, [{"method": method.name, "epsilon": eps, "delta": delta, "n_train": n, **reported,
                      "guarantee": method.guarantee.with_epsilon(eps, delta).describe()}], {}
