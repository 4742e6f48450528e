"""An example of bringing your own method: ``repro run thesis-table-3.1 --with examples/my_method.py``.

:class:`OutputPerturbationLogisticRegression` is L2-regularised logistic regression made ε-DP by output
perturbation (Chaudhuri, Monteleoni, Sarwate 2011, "Differentially private empirical risk minimization",
Algorithm 1 and Theorem 6): minimise (1/n) Σ log(1 + exp(−y_i θᵀx_i)) + (Λ/2)‖θ‖², then release θ + b where b
has density ∝ exp(−(nΛε/2)‖b‖) (a uniform direction and a Gamma(d, 2/(nΛε)) norm). It is fairness-unaware: it
accepts ``sensitive_features`` and does not use them, so it shows where a private, unfair baseline lands.

Assumptions of the guarantee (stated, not checked by repro):

* each row has ‖x‖₂ ≤ 1: ``fit`` and ``predict`` rescale every row to norm ≤ 1 (a per-record map, so the
  sensitivity bound holds) after appending an intercept column;
* the loss is convex with |ℓ′| ≤ 1 and the regulariser Λ-strongly convex, so the minimiser moves by at most
  2/(nΛ) when one record is replaced (neighbouring: replace one record, n public);
* θ is the exact minimiser; we use L-BFGS to a gradient tolerance of 1e-10, an approximation;
* the study standardises the features with statistics of the training rows, which this guarantee treats as
  public.

The contract of a ``--with`` method (docs/bring-your-own-method.md): ``fit(X, y, sensitive_features=...)``,
``predict(X)``, optional ``predict_proba``, ``random_state`` (an int from the trial's generator) and optional
``epsilon`` / ``delta`` in ``__init__`` (the cell's budget), and a class attribute ``privacy_guarantee``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from repro.privacy.guarantee import Guarantee, Label, Neighbouring


def _rows(X: np.ndarray) -> np.ndarray:
    """[x, 1] with every row scaled to ‖·‖₂ ≤ 1."""
    Z = np.hstack([np.asarray(X, dtype=float), np.ones((len(X), 1))])
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    return Z / np.maximum(norms, 1.0)


class OutputPerturbationLogisticRegression:
    """ε-DP logistic regression by output perturbation (see the module docstring)."""

    #: ε here is a placeholder: the runner passes each cell's ε to ``__init__``; δ = 0 (pure ε-DP)
    privacy_guarantee = Guarantee(
        1.0, 0.0, Label.USER_DECLARED, Neighbouring.REPLACE_ONE,
        protects="every feature and the label (the sensitive attribute is not used)",
        caveat="Chaudhuri et al. 2011 Thm 6 assumes the exact minimiser (ours: L-BFGS, tol 1e-10) and treats "
               "the feature standardisation statistics as public",
        accountant="closed form (output perturbation, sensitivity 2/(n·Λ))")

    def __init__(self, *, epsilon: float = 1.0, regularization: float = 0.01, random_state: int | None = None):
        self.epsilon = epsilon
        self.regularization = regularization
        self.random_state = random_state

    def fit(self, X: np.ndarray, y: np.ndarray, *, sensitive_features: np.ndarray | None = None):
        """Train on (X, y ∈ {0, 1}); ``sensitive_features`` is accepted and not used."""
        if not (self.epsilon > 0 and self.regularization > 0):
            raise ValueError("epsilon and regularization must be > 0")
        Z = _rows(X)
        signs = 2.0 * np.asarray(y, dtype=float) - 1.0
        n, d = Z.shape
        lam = float(self.regularization)

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            m = signs * (Z @ theta)
            loss = np.logaddexp(0.0, -m).mean() + 0.5 * lam * theta @ theta
            grad = -(Z * (signs * np.exp(-np.logaddexp(0.0, m)))[:, None]).mean(axis=0) + lam * theta
            return float(loss), grad

        res = minimize(objective, np.zeros(d), jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "maxiter": 1000})
        rng = np.random.default_rng(self.random_state)
        direction = rng.standard_normal(d)
        direction /= np.linalg.norm(direction)
        norm = rng.gamma(shape=d, scale=2.0 / (n * lam * float(self.epsilon)))
        self.coef_ = res.x + norm * direction
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-np.clip(_rows(X) @ self.coef_, -500, 500)))
        return np.column_stack([1.0 - p, p])

    def predict(self, X: np.ndarray) -> np.ndarray:
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(np.int64)


__all__ = ["OutputPerturbationLogisticRegression"]
