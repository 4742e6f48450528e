"""What every estimator of :mod:`repro.estimators` shares: input validation, label and group coding,
``random_state`` normalisation and the scikit-learn tags (issue 20, item 7).

The learners take 0/1 labels, integer groups 0..k−1 and an explicit ``numpy.random.Generator``;
this module turns scikit-learn inputs into exactly that, once per ``fit``.
"""

from __future__ import annotations

import copy
import dataclasses
import numbers

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from repro.errors import InvalidParameterError
from repro.privacy.guarantee import STANDARDISED_FEATURES, Guarantee, Label

__all__ = ["EPSILON_MAX", "FairClassifierBase", "as_generator", "fitted_guarantee"]

#: the largest finite privacy budget the estimators take: beyond it the accountants' noise calibration finds no
#: bracket or overflows (DP-SGD's search took minutes at 1e3; DP-FERMI's overflowed at 1e308), and such a budget
#: protects nothing; ``math.inf`` asks for no noise where an estimator documents it
EPSILON_MAX = 100.0


def fitted_guarantee(declared: Guarantee, **changes) -> Guarantee:
    """The guarantee a learner declares (``learners.*.guarantee``) as an estimator's fit earns it.

    The one way the estimators differ from the studies: they use ``X`` as given and standardise nothing, so
    the learner's feature-standardisation caveat (:data:`STANDARDISED_FEATURES`, a property of the studies'
    data pipeline) is dropped; whatever preprocessing the caller did is the caller's. A public-statistics
    label with no caveat left is *accounted*. ``changes`` go to :func:`dataclasses.replace`, only where an
    estimator really differs from its learner (said at the call)."""
    parts = [c for c in (p.strip() for p in declared.caveat.split(";")) if c and c != STANDARDISED_FEATURES]
    caveat = "; ".join(parts)
    label = Label.ACCOUNTED if declared.label is Label.PUBLIC_STATISTICS and not caveat else declared.label
    return dataclasses.replace(declared, **{"caveat": caveat, "label": label, **changes})


def as_generator(random_state: int | np.random.Generator | None) -> np.random.Generator:
    """``random_state`` as a ``numpy.random.Generator``: an int seeds ``default_rng`` (PCG64 from a
    ``SeedSequence``, as the runner's generators), a Generator is used as it is (its stream continues:
    the way to reproduce a study's call with the trial's generator), None draws fresh OS entropy.
    Never the global RNG."""
    if random_state is None or isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state is not None and random_state < 0:
            raise InvalidParameterError(f"random_state must be >= 0; got {random_state}.")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    raise InvalidParameterError(
        f"random_state must be an int, a numpy.random.Generator or None; got {type(random_state).__name__}.")


class FairClassifierBase(ClassifierMixin, BaseEstimator):
    """Binary classifier taking ``sensitive_features`` in ``fit`` (and ``predict`` where the model uses them).

    Fitted attributes set here: ``classes_`` (the two labels), ``groups_`` (the sorted group values),
    ``n_features_in_``.
    """

    #: whether ``predict`` / ``predict_proba`` need ``sensitive_features`` too
    _predict_needs_groups = False
    #: the hyperparameter :meth:`fit_path` sweeps in one run (None: the estimator fits one value at a time)
    path_param: str | None = None
    #: whether the path's models share every random draw (then each is the model ``fit`` gives at its value from
    #: the same generator state); False where each value draws noise of its own inside the one run
    path_shares_draws: bool = True

    def fit_path(self, X, y, values, *, sensitive_features=None) -> list:
        """One fitted copy of this estimator per value of its :attr:`path_param` (e.g. Tran et al.'s γ, DP-FERMI's λ,
        Jagielski et al.'s bound B), all trained in one run, as the studies train their knob grids. Where the path
        shares its draws (:attr:`path_shares_draws`) the i-th equals ``clone(self).set_params(**{path_param:
        values[i]}).fit(X, y, sensitive_features=...)`` started from the same generator state; either way each
        model is one run with the estimator's guarantee, and ``fit`` is the path of its one value."""
        if self.path_param is None:
            raise InvalidParameterError(f"{type(self).__name__} has no path parameter; call fit for one model.")
        values = list(values)
        if not values:
            raise InvalidParameterError(f"fit_path needs at least one value of {self.path_param}; got none.")
        states = self._fit_path(X, y, sensitive_features, values)
        fitted = []
        for value, state in zip(values, states, strict=True):
            est = copy.copy(self)
            est.set_params(**{self.path_param: value})
            est.__dict__.update(state)
            fitted.append(est)
        return fitted

    def _fit_path(self, X, y, sensitive_features, values: list) -> list[dict]:
        """The fitted attributes of each value of :attr:`path_param`, trained in one run (estimators with a path)."""
        raise NotImplementedError

    def _fit_one_of_path(self, X, y, sensitive_features):
        """``fit`` of an estimator with a path: the path of its one value."""
        self.__dict__.update(self._fit_path(X, y, sensitive_features, [getattr(self, self.path_param)])[0])
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True  # private models are noisy by design
        tags.input_tags.sparse = False
        return tags

    # ------------------------------------------------------------------------------------------ fit side
    def _fit_inputs(self, X, y, sensitive_features, *, required: bool = True
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(X float64, y coded 0/1, groups coded 0..k−1 or None) with one-line errors on bad input."""
        self._check_epsilon()
        X, y = validate_data(self, X, y, dtype=np.float64, reset=True)
        check_classification_targets(y)
        self.classes_, y01 = np.unique(y, return_inverse=True)
        if self.classes_.size != 2:
            raise ValueError(f"Only binary classification is supported. {type(self).__name__} needs y with exactly "
                             f"2 classes; got {self.classes_.size} class{'es' if self.classes_.size != 1 else ''}. "
                             "Recode the labels to two values.")
        s = self._groups_fit(sensitive_features, X.shape[0], required)
        return X, y01.astype(np.int64), s

    def _check_epsilon(self) -> None:
        """``epsilon`` (where the estimator has one) is a real number in (0, :data:`EPSILON_MAX`], or ``math.inf``
        (no noise, where the estimator documents it): a string, NaN or a value its accountant cannot calibrate
        (``1e308``) is refused with scikit-learn's message naming the parameter."""
        if "epsilon" not in self.get_params(deep=False):
            return
        eps = self.epsilon
        if eps is None:   # an estimator taking another knob instead (DP-SGD's noise_multiplier) checks it itself
            return
        real = isinstance(eps, numbers.Real) and not isinstance(eps, bool)
        if not real or not (0 < eps <= EPSILON_MAX or eps == np.inf):
            shown = f"{eps!r}" if not real else f"{float(eps)!r}"
            raise InvalidParameterError(
                f"The 'epsilon' parameter of {type(self).__name__} must be a float in the range (0, {EPSILON_MAX:g}] "
                f"or math.inf (no noise). Got {shown} instead.")

    def _groups_fit(self, sensitive_features, n: int, required: bool) -> np.ndarray | None:
        if sensitive_features is None:
            if required:
                raise ValueError(f"{type(self).__name__}.fit needs sensitive_features: pass "
                                 "sensitive_features=s, one group label per row of X.")
            self.groups_ = None
            return None
        s = column_or_1d(np.asarray(sensitive_features), warn=True)
        if s.shape[0] != n:
            raise ValueError(f"sensitive_features has {s.shape[0]} rows but X has {n}; pass one group per row.")
        missing = int(pd.isna(s).sum()) if s.dtype.kind in "fcOU" else 0
        if missing:
            raise ValueError(f"Input sensitive_features contains NaN ({missing} of {n} rows); give every row a "
                             "group label (drop or impute the rows without one).")
        self.groups_, codes = np.unique(s, return_inverse=True)
        if self.groups_.size < 2:
            raise ValueError("sensitive_features must contain at least 2 groups; got 1. "
                             "Fairness needs a comparison between groups.")
        return codes.astype(np.int64)

    # ------------------------------------------------------------------------------------------ predict side
    def _predict_inputs(self, X, sensitive_features) -> tuple[np.ndarray, np.ndarray | None]:
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if not self._predict_needs_groups:
            return X, None
        if sensitive_features is None:
            raise ValueError(f"{type(self).__name__}.predict needs sensitive_features (the model uses the group); "
                             "pass sensitive_features=s, one group per row of X.")
        s = column_or_1d(np.asarray(sensitive_features), warn=True)
        if s.shape[0] != X.shape[0]:
            raise ValueError(f"sensitive_features has {s.shape[0]} rows but X has {X.shape[0]}.")
        codes = np.searchsorted(self.groups_, s)
        codes = np.clip(codes, 0, self.groups_.size - 1)
        if not np.array_equal(self.groups_[codes], s):
            unseen = sorted(set(np.asarray(s).tolist()) - set(self.groups_.tolist()))
            raise ValueError(f"sensitive_features has groups not seen in fit: {unseen[:5]}; "
                             f"fit saw {self.groups_.tolist()}.")
        return X, codes.astype(np.int64)

    def _proba_from_positive(self, p1: np.ndarray) -> np.ndarray:
        p1 = np.asarray(p1, dtype=np.float64)
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X, *, sensitive_features=None) -> np.ndarray:
        """Labels (from ``classes_``): the more probable class of :meth:`predict_proba`."""
        proba = self.predict_proba(X, sensitive_features=sensitive_features)
        return self.classes_[(proba[:, 1] > 0.5).astype(np.int64)]


class LinearFairClassifierBase(FairClassifierBase):
    """A fitted logistic model ``model_`` (:class:`repro.learners.logistic.LogisticModel`) exposed as
    ``coef_`` (1, d) / ``intercept_`` (1,); predictions are the learner's own (1[w·x + b > 0])."""

    def _set_model(self, model) -> None:
        self.__dict__.update(self._model_state(model))

    @staticmethod
    def _model_state(model) -> dict:
        """The fitted attributes of a logistic ``model``: ``model_``, ``coef_`` (1, d), ``intercept_`` (1,)."""
        return {"model_": model, "coef_": np.asarray(model.w, dtype=np.float64).reshape(1, -1),
                "intercept_": np.array([float(model.b)])}

    def _design(self, X, sensitive_features) -> np.ndarray:
        X, _ = self._predict_inputs(X, sensitive_features)
        return X

    def decision_function(self, X, *, sensitive_features=None) -> np.ndarray:
        """w·x + b (the log-odds of ``classes_[1]``)."""
        X = self._design(X, sensitive_features)
        return self.model_.decision(X)

    def predict_proba(self, X, *, sensitive_features=None) -> np.ndarray:
        """(n, 2) probabilities of ``classes_``: σ(w·x + b) for ``classes_[1]``."""
        X = self._design(X, sensitive_features)
        return self._proba_from_positive(self.model_.predict_proba(X))

    def predict(self, X, *, sensitive_features=None) -> np.ndarray:
        """Labels from ``classes_``: the learner's 1[w·x + b > 0]."""
        X = self._design(X, sensitive_features)
        return self.classes_[self.model_.predict(X).astype(np.int64)]
