"""scikit-learn / fairlearn-style estimators of every private and/or fair learner the studies use
(issue 20, item 7).

Each has keyword-only hyperparameters, ``fit(X, y, sensitive_features=...)``, ``predict`` and
``predict_proba``, ``random_state`` (int | ``numpy.random.Generator`` | None) and the fitted
``privacy_guarantee_`` (:class:`repro.privacy.guarantee.Guarantee`) computed from the actual fit.
Given the same generator, each gives the numbers of the learner call its study makes.
"""

from repro.estimators.baselines import Jagielski2019Classifier, PFLDClassifier, Tran2021aClassifier
from repro.estimators.dp_fermi import DPFermiClassifier
from repro.estimators.dp_sgd import DPSGDLogisticClassifier
from repro.estimators.fair_projection import FairProjectionClassifier
from repro.estimators.ldp_lightgbm import LDPLightGBMClassifier
from repro.estimators.postprocessing import PrivatePostProcessingClassifier

__all__ = [
    "DPSGDLogisticClassifier",
    "PrivatePostProcessingClassifier",
    "DPFermiClassifier",
    "Tran2021aClassifier",
    "PFLDClassifier",
    "Jagielski2019Classifier",
    "FairProjectionClassifier",
    "LDPLightGBMClassifier",
]
