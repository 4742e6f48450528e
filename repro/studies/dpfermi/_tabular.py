"""The tabular DP-FERMI figures' data and metrics, shared by the study and its method files.

Spec: seed-004-dpfermi.md §7.1 (datasets, 3:1 split), §7.3 (metrics (10)/(11)).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from repro.datasets import registry
from repro.engine.trial import TrialContext
from repro.errors import InvalidParameterError
from repro.fairness.metrics import eq_odds_gap, sp_gap

__all__ = ["DATASETS", "load_dataset", "split", "metrics", "privileged_group"]


#: the datasets of the tabular figures (the registry, :mod:`repro.datasets.registry`, holds more)
DATASETS = ("adult", "credit-card", "retired-adult", "parkinsons")


@functools.lru_cache(maxsize=8)
def load_dataset(name: str, data: str):
    """The :class:`repro.datasets.tabular.TabularDataset` of ``name`` in data mode ``data``, from the
    dataset registry (cached per process). Spec: seed-004 §7.1."""
    if name not in DATASETS:
        raise InvalidParameterError(f"dataset must be one of {', '.join(DATASETS)}; got {name!r}.")
    return registry.load(name, data)


def split(ds, params: dict[str, Any], ctx: TrialContext, data: str):
    """The 3:1 split (the data mode's policy, :func:`repro.datasets.registry.train_test_split`),
    training-statistics standardization, optional training subsample.

    ``data="authors"``: the authors' fixed split, the same for every repetition; ``"clean"``: a random
    split per repetition, from ``ctx.rng("split", dataset, scope="repetition")``.
    """
    from repro.datasets.tabular import standardize

    rng = ctx.rng("split", ds.name, scope="repetition")
    train, test = registry.train_test_split(ds.n, data, rng=rng,
                                            train_fraction=float(params["train_fraction"]))
    sub = int(params["subsample"] or 0)
    if 0 < sub < train.size:
        train = np.sort(rng.choice(train, size=sub, replace=False))
        test = np.sort(rng.choice(test, size=min(test.size, max(sub // 3, 200)), replace=False))
    X = standardize(ds.X, train, ds.numeric_columns)
    return (X[train], ds.y[train].astype(np.int64), ds.s[train].astype(np.int64),
            X[test], ds.y[test].astype(np.int64), ds.s[test].astype(np.int64))


def metrics(prob_pred: np.ndarray, y: np.ndarray, s: np.ndarray, fairness: str) -> dict[str, float]:
    """Error, DP violation (10), EO violation (11) of (possibly expected) 0/1 predictions."""
    p = np.asarray(prob_pred, dtype=float)
    err = float(np.mean(p * (1 - y) + (1 - p) * y))
    dp = sp_gap(p, s)
    eo = eq_odds_gap(p, s, y)
    return {"error": err, "dp_violation": dp, "eo_violation": eo,
            "violation": dp if fairness == "dp" else eo}


def privileged_group(y: np.ndarray, s: np.ndarray) -> int:
    rates = [y[s == g].mean() for g in range(int(s.max()) + 1)]
    return int(np.argmax(rates))
