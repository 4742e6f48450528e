"""Logistic regression in numpy: the model, closed-form gradients, plain minibatch SGD.

Spec: seed-003-thesis.md §2.7 step 3 (``Linear(d, 1)`` + sigmoid, BCE loss, SGD, threshold 0.5),
§3.3 (the same model for DP-FERMI, without the sensitive attribute as input).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from repro.errors import InvalidParameterError
from repro.privacy.sampling import shuffled_batches

__all__ = ["sigmoid", "LogisticModel", "SoftmaxModel", "torch_linear_init", "per_sample_gradients",
           "batch_gradient", "shuffled_batches", "train_minibatch_logistic"]


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function (``scipy.special.expit``)."""
    return expit(np.asarray(z, dtype=np.float64))


@dataclass(frozen=True)
class LogisticModel:
    """Weights ``w`` (d,) and bias ``b``; P(Y=1|x) = σ(w·x + b)."""

    w: np.ndarray
    b: float

    def decision(self, X: np.ndarray) -> np.ndarray:
        return X @ self.w + self.b

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return sigmoid(self.decision(X))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Hard labels 1[σ(w·x + b) > 0.5] (= 1[w·x + b > 0]) as int8."""
        return (self.decision(X) > 0).astype(np.int8)


@dataclass(frozen=True)
class SoftmaxModel:
    """Multinomial logistic regression: weights ``w`` (d, l) and biases ``b`` (l,);
    P(Y=c|x) = softmax(wᵀx + b)_c. Spec: seed-004 §3 "Multi-class" (F = softmax(logits))."""

    w: np.ndarray
    b: np.ndarray

    def decision(self, X: np.ndarray) -> np.ndarray:
        return X @ self.w + self.b

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        from scipy.special import softmax
        return softmax(self.decision(X), axis=1)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Hard labels argmax_c P(Y=c|x) (spec §7.3: "for UTKFace ŷ is the argmax")."""
        return np.argmax(self.decision(X), axis=1)


def torch_linear_init(d: int, *, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """PyTorch's default ``nn.Linear(d, 1)`` initialization: w, b ~ U(−1/√d, 1/√d)."""
    if d < 1:
        raise InvalidParameterError(f"number of features must be >= 1; got {d}.")
    bound = 1.0 / np.sqrt(d)
    w = rng.uniform(-bound, bound, size=d)
    b = float(rng.uniform(-bound, bound))
    return w, b


def per_sample_gradients(X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    """Per-sample gradients of the BCE loss in (w, b): row i is (σ(w·x_i + b) − y_i)·[x_i, 1].

    Returns an (n, d + 1) array (last column: the bias). Closed form; see tests for the
    finite-difference check.
    """
    r = sigmoid(X @ w + b) - y
    return np.hstack([X * r[:, None], r[:, None]])


def batch_gradient(X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float) -> tuple[np.ndarray, float]:
    """Gradient of the mean BCE loss over the rows of ``X`` in (w, b)."""
    r = sigmoid(X @ w + b) - y
    m = max(len(r), 1)
    return X.T @ r / m, float(r.sum() / m)


def train_minibatch_logistic(X: np.ndarray, y: np.ndarray, *, lr: float, batch_size: int, epochs: int,
                             rng: np.random.Generator, w0: np.ndarray | None = None,
                             b0: float | None = None) -> LogisticModel:
    """Plain (non-private) minibatch SGD on the mean BCE loss, shuffled epochs.

    Initialization: ``w0, b0`` if given, else :func:`torch_linear_init` from ``rng``; then one
    permutation per epoch from ``rng``.
    """
    if w0 is None or b0 is None:
        w0, b0 = torch_linear_init(X.shape[1], rng=rng)
    w, b = np.array(w0, dtype=np.float64), float(b0)
    for _ in range(epochs):
        for idx in shuffled_batches(len(y), batch_size, rng=rng):
            gw, gb = batch_gradient(X[idx], y[idx], w, b)
            w -= lr * gw
            b -= lr * gb
    return LogisticModel(w, b)
