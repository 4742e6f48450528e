"""Algorithm 2 of the thesis (private post-processing to statistical parity) as a meta-estimator.

Spec: seed-003-thesis.md §2.4 (corrected, §10 P1) and §2.7 steps 5–6. ``fit`` takes the
*post-processing set* and an already fitted base classifier (``estimator``, e.g. a fitted
:class:`repro.estimators.DPSGDLogisticClassifier`; it is not refitted, like ``prefit`` in scikit-learn):
it computes the Laplace-noised group rates of the base predictions and the flip rule
(:func:`repro.fairness.private_postprocessing.algorithm2`). ``predict`` applies the rule
(:func:`repro.fairness.private_postprocessing.apply_rule`); ``predict_proba`` is its exact
P(Ŷ = 1 | h(x), a).
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
from sklearn.utils.validation import check_is_fitted

from repro.errors import InvalidParameterError
from repro.estimators._base import FairClassifierBase, as_generator
from repro.fairness.private_postprocessing import algorithm2, apply_rule
from repro.fairness.private_postprocessing import guarantee as postprocessing_guarantee
from repro.privacy.guarantee import NON_PRIVATE, Guarantee, Label, compose

__all__ = ["PrivatePostProcessingClassifier"]


class PrivatePostProcessingClassifier(FairClassifierBase):
    """Algorithm 2 over a fitted base classifier: Laplace-noised group positive rates, then the flip rule.

    Parameters (keyword-only)
    -------------------------
    estimator
        A fitted binary classifier whose ``predict`` gives the base labels. If it was fitted on
        [X, s] (``DPSGDLogisticClassifier`` with ``sensitive_features``) it gets the groups too.
    eps0, eps1
        Laplace budgets of the two group rates (the thesis: 0.05 or 0.1 each).
    random_state
        int, ``numpy.random.Generator`` (its stream continues) or None.

    Groups: exactly two (A = 0, 1 after sorting the values of ``sensitive_features``).

    Fitted attributes: ``rule_`` (:class:`FairRule`), ``rates_`` (:class:`PrivateRates`),
    ``privacy_guarantee_`` (the base's ``privacy_guarantee_`` plus ε₀ + ε₁; public-statistics caveat).
    ``predict`` is randomized; each call draws its uniforms from the generator state saved at the end
    of ``fit``, so repeated calls give the same labels (the first equals the study's draw).
    """

    _predict_needs_groups = True

    def __init__(self, *, estimator=None, eps0: float = 0.1, eps1: float = 0.1,
                 random_state: int | np.random.Generator | None = None) -> None:
        self.estimator = estimator
        self.eps0 = eps0
        self.eps1 = eps1
        self.random_state = random_state

    def _base_predict(self, X: np.ndarray, s: np.ndarray) -> np.ndarray:
        est = self.estimator
        kw = {"sensitive_features": self.groups_[s]} if getattr(est, "uses_sensitive_features_", False) else {}
        h = np.asarray(est.predict(X, **kw))
        classes = getattr(est, "classes_", np.array([0, 1]))
        return (h == classes[1]).astype(np.int64)

    def fit(self, X, y, *, sensitive_features=None) -> PrivatePostProcessingClassifier:
        """Algorithm 2 steps 1–4 on the post-processing set (X, s); ``y`` only fixes ``classes_``."""
        if self.estimator is None:
            raise InvalidParameterError("PrivatePostProcessingClassifier needs estimator=<a fitted classifier>.")
        check_is_fitted(self.estimator)
        X, _, s = self._fit_inputs(X, y, sensitive_features)
        if self.groups_.size != 2:
            raise ValueError(f"Algorithm 2 is for two groups; sensitive_features has {self.groups_.size}.")
        rng = as_generator(self.random_state)
        self.rule_, self.rates_ = algorithm2(self._base_predict(X, s), s, float(self.eps0), float(self.eps1),
                                             rng=rng)
        self._predict_rng_state_ = copy.deepcopy(rng.bit_generator.state)
        self._predict_bit_generator_ = type(rng.bit_generator)
        self.privacy_guarantee_ = self._guarantee()
        return self

    def _guarantee(self) -> Guarantee:
        """The base's guarantee composed (basic composition) with Algorithm 2's own
        (:func:`repro.fairness.private_postprocessing.guarantee`), in the base's relation and scope."""
        base = getattr(self.estimator, "privacy_guarantee_", None)
        step = postprocessing_guarantee(float(self.eps0), float(self.eps1))
        if base is None:
            return dataclasses.replace(
                step, epsilon=math.inf, label=Label.NOMINAL,
                caveat=f"the base estimator declares no privacy_guarantee_; only the post-processing step is private "
                       f"(eps0 + eps1 = {step.epsilon:g}); {step.caveat}")
        if base.label is Label.NON_PRIVATE:  # compose() skips non-private parts; end to end there is no claim
            return NON_PRIVATE
        return compose(base, step, relation=base.relation, protects=base.protects)

    def _rule_inputs(self, X, sensitive_features) -> tuple[np.ndarray, np.ndarray]:
        X, s = self._predict_inputs(X, sensitive_features)
        return self._base_predict(X, s), s

    def predict_proba(self, X, *, sensitive_features=None) -> np.ndarray:
        """Exact P(Ŷ = classes_[1] | h(x), a) of the randomized rule: keep[a] if h = 1, flip[a] otherwise."""
        h, s = self._rule_inputs(X, sensitive_features)
        keep, flip = np.asarray(self.rule_.keep)[s], np.asarray(self.rule_.flip)[s]
        return self._proba_from_positive(np.where(h == 1, keep, flip))

    def predict(self, X, *, sensitive_features=None) -> np.ndarray:
        """One draw of the randomized rule (reproducible: from the generator state saved at fit)."""
        h, s = self._rule_inputs(X, sensitive_features)
        bitgen = self._predict_bit_generator_()
        bitgen.state = copy.deepcopy(self._predict_rng_state_)
        return self.classes_[apply_rule(h, s, self.rule_, rng=np.random.Generator(bitgen)).astype(np.int64)]
