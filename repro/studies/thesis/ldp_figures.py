"""Thesis Part II, Figures 5.1–5.10: LDP on the training sensitive attribute as fairness pre-processing.

One trial = one (mechanism, ε, repetition): draw the repetition's stratified 80/20 split (shared
by every mechanism and ε of that repetition: common random numbers), perturb only the training
set's sensitive attribute with OPT (Theorem 14 for k = 2, problem (5.5.9) for k > 2), GRR or Subset
Selection, fit LightGBM with the fixed hyper-parameters of spec §6.1 on the one-hot features (the
perturbed attribute one-hot, or multi-hot for SS), and evaluate accuracy, F1, Δ_SP and Δ_EO on the
unperturbed test set, grouped by the true attribute. ``method = "non-private"`` fits on the
original data (the dashed baseline).

Reuse: the one-hot encoding of the non-sensitive features and the full-data statistics are built
once per worker process (``functools.lru_cache``); the non-binary OPT matrix is solved once per
(dataset, attribute, ε, ζ) per process and shared by every repetition; the non-private baseline is
its own cell (fitted once per repetition, not per ε or mechanism). The fit goes straight to
``lightgbm.train`` (:func:`fit_predict`): the model and predictions of ``LGBMClassifier`` bit for bit
(tested), without the wrapper's model copy, the row/column-wise timing test, or scoring repeated
one-hot test rows twice; the boosting itself is ≈ 80 % of a trial (benchmarks/README.md).

Privacy labels (issue 21, "Labelling gaps"): each record carries the label and caveat of its mechanism's ε
from :func:`repro.privacy.ldp_mechanisms.guarantee` (:func:`mechanism_guarantee`): GRR and Subset
Selection are *accounted* (exact, data-independent); OPT carries the *public-statistics caveat*, since its
matrix is built from data: Theorem 14 (k = 2) from the training split's minority group, problem (5.5.9)
(k > 2) from the full table's P(A) and P(Y = 1 | A), test rows included.

Variants: ``reference`` (ζ = 1, the authors' code; decision L1) and ``zeta-min`` (ζ = ζ_min + 1e-6,
the thesis text). They differ only for non-binary OPT.

Spec: ../shared/specs/seed-003-thesis.md §5, §6.1–6.3, §7, §10 (L1–L11).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pandas as pd

from repro.engine.study import Study
from repro.engine.trial import TrialContext, TrialOutput
from repro.errors import InvalidParameterError
from repro.fairness.data_fairness import delta, delta_prime, group_stats
from repro.fairness.metrics import eo_gap, eo_signed, sp_gap, sp_signed
from repro.privacy.guarantee import NON_PRIVATE, Guarantee
from repro.privacy.ldp_mechanisms import (
    grr_matrix,
    optimal_binary_matrix,
    optimal_nonbinary_matrix,
    perturb,
    subset_selection,
    zeta_min,
)
from repro.privacy.ldp_mechanisms import guarantee as ldp_guarantee

METHODS = ("OPT", "GRR", "SS")
BASELINE = "non-private"
ZETA_MARGIN = 1e-6

#: the data statistics an OPT matrix is built from (treated as public), by k = 2 / k > 2
OPT_STATISTICS = {
    True: "the training split's minority group (Theorem 14)",
    False: "the full table's P(A) and P(Y=1|A), test rows included (problem (5.5.9))",
}


def mechanism_guarantee(method: str, epsilon: float, k: int) -> Guarantee:
    """What ``method`` at ``epsilon`` promises each training record's attribute (module docstring)."""
    if method == BASELINE:
        return NON_PRIVATE
    if method == "OPT":
        return ldp_guarantee(epsilon, statistics=OPT_STATISTICS[k == 2])
    if method in METHODS:
        return ldp_guarantee(epsilon)
    raise InvalidParameterError(f"method must be one of {(*METHODS, BASELINE)}; got {method!r}")

# dataset -> (label column, attributes, loader path)
_DATASETS = {
    "adult": ("income", ("gender", "race", "race_gender")),
    "lsac": ("pass_bar", ("gender", "fam_inc")),
}


# --------------------------------------------------------------------------------------------
# data (cached per worker process)


def _load(dataset: str, source: str) -> pd.DataFrame:
    if dataset == "adult":
        from repro.datasets.adult_reconstruction import load_adult_reconstruction

        return load_adult_reconstruction(source)
    from repro.datasets.lsac import load_lsac

    return load_lsac(source)


@functools.lru_cache(maxsize=4)
def prepared(dataset: str, attribute: str, source: str = "auto") -> dict[str, Any]:
    """One-hot non-sensitive features, sensitive attribute, label and full-data statistics.

    Every feature is categorical and one-hot encoded with k = #distinct values in the full
    table (spec §6.1). For ``race_gender`` (= race·2 + gender, k = 10) race and gender are
    dropped from the features; otherwise all other columns stay (decision L5).
    """
    if dataset not in _DATASETS:
        raise InvalidParameterError(f"dataset must be one of {sorted(_DATASETS)}; got {dataset!r}")
    label, attributes = _DATASETS[dataset]
    if attribute not in attributes:
        raise InvalidParameterError(f"attribute for {dataset!r} must be one of {attributes}; got {attribute!r}")
    frame = _load(dataset, source)
    y = frame[label].to_numpy(dtype=np.int64)
    if attribute == "race_gender":
        a = (frame["race"] * 2 + frame["gender"]).to_numpy(dtype=np.int64)
        drop = {"race", "gender"}
    else:
        a = frame[attribute].to_numpy(dtype=np.int64)
        drop = {attribute}
    feats = [c for c in frame.columns if c != label and c not in drop]
    blocks = [np.eye(int(frame[c].max()) + 1, dtype=np.float32)[frame[c].to_numpy()] for c in feats]
    k = int(a.max()) + 1
    p, p1, py = group_stats(a, y, k)
    return {"x": np.hstack(blocks), "a": a, "y": y, "k": k, "p": p, "p1": p1, "py": py,
            "source": frame.attrs.get("source", source), "features": feats}


def stratified_split(y: np.ndarray, *, test_size: float, subsample: float, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test) of a stratified split, optionally of a stratified subsample first.

    Per class c with n_c rows: keep round(subsample·n_c) random rows, of which round(test_size·m_c)
    go to the test set. Spec §6.1 (80/20, stratify=y).
    """
    if not 0 < test_size < 1 or not 0 < subsample <= 1:
        raise InvalidParameterError(f"need 0 < test_size < 1 and 0 < subsample <= 1; got {test_size}, {subsample}")
    train, test = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        m = int(round(subsample * idx.size))
        idx = idx[:m]
        n_test = int(round(test_size * m))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


@functools.lru_cache(maxsize=64)
def _nonbinary_opt(dataset: str, attribute: str, source: str, epsilon: float, zeta_mode: str) -> tuple[np.ndarray, float]:
    data = prepared(dataset, attribute, source)
    zeta = 1.0 if zeta_mode == "one" else min(1.0, zeta_min(data["p"], epsilon) + ZETA_MARGIN)
    sol = optimal_nonbinary_matrix(data["p"], data["p1"], epsilon, zeta=zeta)
    return sol.matrix, zeta


def mechanism_output(method: str, a_train: np.ndarray, k: int, epsilon: float, *, opt_matrix: np.ndarray | None,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """(encoded training attribute, perturbed values or None for SS) for one mechanism."""
    eye = np.eye(k, dtype=np.float32)
    if method == BASELINE:
        return eye[a_train], a_train
    if method == "GRR":
        z = perturb(a_train, grr_matrix(k, epsilon), rng=rng)
        return eye[z], z
    if method == "SS":
        return subset_selection(a_train, k, epsilon, rng=rng).astype(np.float32), None
    if method == "OPT":
        if opt_matrix is None:
            raise InvalidParameterError("OPT needs its matrix")
        z = perturb(a_train, opt_matrix, rng=rng)
        return eye[z], z
    raise InvalidParameterError(f"method must be one of {(*METHODS, BASELINE)}; got {method!r}")


def lgbm_params(*, n_estimators: int, max_depth: int, learning_rate: float, seed: int) -> dict[str, Any]:
    """LightGBM parameters of spec §6.1: exactly what ``LGBMClassifier(objective="binary", n_estimators,
    max_depth, learning_rate, random_state=seed, n_jobs=1, verbose=-1)`` hands to ``lightgbm.train``
    (its defaults written out), plus ``force_row_wise``, which only skips LightGBM's timing test of
    row- versus column-wise histograms (same histograms, same model, and no choice made by a clock)."""
    return {"boosting_type": "gbdt", "objective": "binary", "metric": "binary", "num_leaves": 31,
            "max_depth": max_depth, "learning_rate": learning_rate, "num_iterations": n_estimators,
            "subsample_for_bin": 200000, "min_split_gain": 0.0, "min_child_weight": 0.001,
            "min_child_samples": 20, "subsample": 1.0, "subsample_freq": 0, "colsample_bytree": 1.0,
            "reg_alpha": 0.0, "reg_lambda": 0.0, "random_state": seed, "num_threads": 1, "verbose": -1,
            "force_row_wise": True}


def fit_lgbm(x_train: np.ndarray, y_train: np.ndarray, *, n_estimators: int, max_depth: int, learning_rate: float,
             seed: int) -> Any:
    """The spec §6.1 LightGBM booster fitted on (x_train, y_train): the model ``LGBMClassifier.fit``
    builds, without the wrapper's validation passes and its copy of the model through its text form."""
    import lightgbm as lgb

    params = lgbm_params(n_estimators=n_estimators, max_depth=max_depth, learning_rate=learning_rate, seed=seed)
    return lgb.train(params, lgb.Dataset(x_train, label=y_train, params=params), num_boost_round=n_estimators,
                     keep_training_booster=True)


def _distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(indices of one copy of each distinct row, map from every row to its copy) of a 0/1 matrix, or
    None if ``x`` holds other values. Rows are compared as packed bits (a sort of short byte strings)."""
    if not np.all((x == 0) | (x == 1)):
        return None
    bits = np.packbits(x != 0, axis=1)
    keys = np.ascontiguousarray(bits).view(np.dtype((np.void, bits.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def predict_labels(booster: Any, x_test: np.ndarray) -> np.ndarray:
    """0/1 predictions equal to ``LGBMClassifier.predict``: the larger of (1 − p, p), ties to 0.

    Each distinct row of a one-hot ``x_test`` is scored once (a row's score does not depend on the
    other rows; on LSAC a tenth of the test rows are distinct, on Adult nine tenths)."""
    distinct = _distinct_rows(x_test)
    if distinct is None:
        p = np.asarray(booster.predict(x_test, num_threads=1), dtype=np.float64)
    else:
        first, inverse = distinct
        p = np.asarray(booster.predict(x_test[first], num_threads=1), dtype=np.float64)[inverse]
    return (p > 1.0 - p).astype(np.int64)


def fit_predict(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, *, n_estimators: int,
                max_depth: int, learning_rate: float, seed: int) -> np.ndarray:
    """Test-set 0/1 predictions of the spec §6.1 LightGBM fitted on (x_train, y_train)."""
    booster = fit_lgbm(x_train, y_train, n_estimators=n_estimators, max_depth=max_depth,
                       learning_rate=learning_rate, seed=seed)
    return predict_labels(booster, x_test)


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """One fit: mechanism ``params['method']`` at ``params['epsilon']`` on one repetition's split."""
    method = str(params["method"])
    dataset, attribute = str(params["dataset"]), str(params["attribute"])
    source = str(params["data_source"])
    data = prepared(dataset, attribute, source)
    k = data["k"]
    train, test = stratified_split(data["y"], test_size=float(params["test_size"]),
                                   subsample=float(params["subsample"]), rng=ctx.rng("split", scope="repetition"))
    lgbm_seed = int(ctx.rng("lightgbm", scope="repetition").integers(2**31 - 1))
    a_train, a_test = data["a"][train], data["a"][test]
    y_train, y_test = data["y"][train], data["y"][test]

    opt_matrix = None
    epsilon = float(params["epsilon"]) if method != BASELINE else math.nan
    guarantee = mechanism_guarantee(method, epsilon if method != BASELINE else math.inf, k)
    record: dict[str, Any] = {"method": method, "eps_label": guarantee.label.value, "eps_caveat": guarantee.caveat}
    if method == "OPT":
        if k == 2:
            counts = np.bincount(a_train, minlength=2)
            minority = int(np.argmin(counts))  # majority = training-split mode, as in the authors' code
            opt_matrix = optimal_binary_matrix(epsilon, minority)
        else:
            zeta_mode = "min" if params["variant"] == "zeta-min" else "one"
            opt_matrix, zeta = _nonbinary_opt(dataset, attribute, source, epsilon, zeta_mode)
            record["zeta"] = zeta
    enc, z = mechanism_output(method, a_train, k, epsilon, opt_matrix=opt_matrix, rng=ctx.rng())
    eye = np.eye(k, dtype=np.float32)
    x_train = np.hstack([data["x"][train], enc])
    x_test = np.hstack([data["x"][test], eye[a_test]])
    yhat = fit_predict(x_train, y_train, x_test, n_estimators=int(params["n_estimators"]),
                       max_depth=int(params["max_depth"]), learning_rate=float(params["learning_rate"]),
                       seed=lgbm_seed)

    tp = float(np.sum((yhat == 1) & (y_test == 1)))
    f1_den = float(np.sum(yhat == 1) + np.sum(y_test == 1))
    record.update(accuracy=float(np.mean(yhat == y_test)), f1=2 * tp / f1_den if f1_den else 0.0,
                  sp_gap=sp_gap(yhat, a_test), eo_gap=eo_gap(yhat, a_test, y_test))
    if k == 2:
        record.update(sp_signed=sp_signed(yhat, a_test), eo_signed=eo_signed(yhat, a_test, y_test))
    if z is not None:
        pz, p1z, _ = group_stats(z, y_train, k)
        record.update(train_delta=delta(pz, p1z), train_delta_prime=delta_prime(pz, p1z))
    return TrialOutput(records=[record])


#: values: the label and caveat of the mechanism's ε (non-metric value columns of a record)
STUDY = Study(run_trial=run_trial, values=("eps_label", "eps_caveat"), version="2")
