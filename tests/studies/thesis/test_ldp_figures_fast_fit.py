"""The lean LightGBM path of Figures 5.1–5.10 gives the model and the numbers of the scikit-learn wrapper.

``reference_fit_predict`` is the unoptimised path as it was (``LGBMClassifier.fit`` then ``predict``);
the study's ``fit_predict`` (``lightgbm.train`` on a kept booster, ``force_row_wise``, distinct test
rows scored once) must agree with it bit for bit: scores, labels, and every record of a trial.

Spec: ../shared/specs/seed-003-thesis.md §6.1.
"""

from __future__ import annotations

import numpy as np
import pytest

from repro.engine.identity import TrialKey
from repro.engine.trial import TrialContext
from repro.studies.thesis import ldp_figures
from repro.studies.thesis.ldp_figures import fit_lgbm, fit_predict, predict_labels


def reference_model(x_train, y_train, *, n_estimators, max_depth, learning_rate, seed):
    import lightgbm as lgb

    model = lgb.LGBMClassifier(objective="binary", n_estimators=n_estimators, max_depth=max_depth,
                               learning_rate=learning_rate, random_state=seed, n_jobs=1, verbose=-1)
    return model.fit(x_train, y_train)


def reference_fit_predict(x_train, y_train, x_test, **kw):
    return reference_model(x_train, y_train, **kw).predict(x_test).astype(np.int64)


def _one_hot_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Categorical features one-hot encoded (rows repeat, as in the real data) and a noisy label."""
    rng = np.random.default_rng(seed)
    cats = np.column_stack([rng.integers(0, c, n) for c in (2, 3, 5, 4, 2)])
    x = np.hstack([np.eye(c, dtype=np.float32)[cats[:, j]] for j, c in enumerate((2, 3, 5, 4, 2))])
    logit = 1.2 * cats[:, 0] - 0.7 * cats[:, 1] + 0.3 * cats[:, 2] - 0.5 * (cats[:, 3] == 2) + cats[:, 4]
    y = (rng.random(n) < 1 / (1 + np.exp(-(logit - 1.0)))).astype(np.int64)
    return x, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_fit_equals_the_wrapper_bit_for_bit(seed: int) -> None:
    x, y = _one_hot_data(3000, seed)
    kw = dict(n_estimators=60, max_depth=6, learning_rate=0.1, seed=1234 + seed)
    ref = reference_model(x[:2400], y[:2400], **kw)
    booster = fit_lgbm(x[:2400], y[:2400], **kw)
    x_test = x[2400:]
    assert np.unique(x_test, axis=0).shape[0] < x_test.shape[0]  # the de-duplication is exercised
    assert ref.predict_proba(x_test)[:, 1].tobytes() == booster.predict(x_test).tobytes()
    assert np.array_equal(predict_labels(booster, x_test), ref.predict(x_test))
    assert np.array_equal(fit_predict(x[:2400], y[:2400], x_test, **kw),
                          reference_fit_predict(x[:2400], y[:2400], x_test, **kw))


def test_labels_follow_the_wrapper_at_a_tie() -> None:
    class Half:  # a booster whose every score is exactly 0.5: LGBMClassifier's argmax picks class 0
        @staticmethod
        def predict(rows, num_threads=1):
            return np.full(rows.shape[0], 0.5)

    assert predict_labels(Half(), np.eye(3, dtype=np.float32)).tolist() == [0, 0, 0]


SMOKE = dict(n_estimators=40, test_size=0.2, subsample=0.15, data_source="auto", variant="reference")
CASES = [
    ("adult", "gender", 2, 38, 0.02255696731716368, [("non-private", None), ("OPT", 0.5), ("GRR", 8.0), ("SS", 0.5)]),
    ("lsac", "fam_inc", 5, 9, 0.18177994587365698, [("OPT", 1.0), ("SS", 2.0)]),
]


@pytest.mark.data
@pytest.mark.parametrize("dataset,attribute,k,depth,lr,methods", CASES)
def test_trial_records_unchanged(data_mirror, monkeypatch, dataset, attribute, k, depth, lr, methods) -> None:
    """Every number of smoke-size trials equals the one the unoptimised path gives."""
    def records(fitter):
        monkeypatch.setattr(ldp_figures, "fit_predict", fitter)
        out = []
        for method, eps in methods:
            params = dict(SMOKE, dataset=dataset, attribute=attribute, k=k, max_depth=depth, learning_rate=lr,
                          method=method, **({} if eps is None else {"epsilon": eps}))
            cell = {"method": method, **({} if eps is None else {"epsilon": eps})}
            ctx = TrialContext(TrialKey.of("thesis-fig-test", cell, repetition=1))
            out.append(ldp_figures.run_trial(params, ctx).records)
        return out

    fast = records(fit_predict)
    slow = records(reference_fit_predict)
    assert fast == slow
    assert all(np.isfinite(r[0]["accuracy"]) for r in fast)


def test_distinct_rows_of_a_zero_one_matrix() -> None:
    from repro.studies.thesis.ldp_figures import _distinct_rows

    x, _ = _one_hot_data(500, 5)
    first, inverse = _distinct_rows(x)
    assert first.size == np.unique(x, axis=0).shape[0] < 500
    assert np.array_equal(x[first][inverse], x)
    assert _distinct_rows(np.array([[0.5, 1.0]], dtype=np.float32)) is None  # not 0/1: scored row by row


def test_non_binary_test_rows_are_scored_row_by_row() -> None:
    x, y = _one_hot_data(1500, 6)
    kw = dict(n_estimators=20, max_depth=5, learning_rate=0.1, seed=3)
    booster = fit_lgbm(x[:1200], y[:1200], **kw)
    x_test = x[1200:] * np.float32(0.5)  # still splits the same way; values other than 0/1
    ref = reference_model(x[:1200], y[:1200], **kw)
    assert np.array_equal(predict_labels(booster, x_test), ref.predict(x_test))
