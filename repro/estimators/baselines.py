"""The DP-FERMI figures' private fair baselines as scikit-learn estimators (spec seed-004-dpfermi.md §8).

- :class:`Tran2021aClassifier` — DP-SGD on BCE + γ·(group-mean gap) (:func:`train_tran_2021a`, one γ);
- :class:`PFLDClassifier` — PF-LD, DP-SGD primal + noisy dual ascent (:func:`train_pf_ld`);
- :class:`Jagielski2019Classifier` — the private reductions game for equalized odds
  (:func:`train_jagielski_2019`, one bound B), a uniform mixture of the learner's iterates.

δ = 1/n² unless given, clip 1, lr 0.1, batch 1024 as ``studies/dpfermi/tradeoff_figures``.
Guarantees are the learners' own declarations (``learners.baselines.*.guarantee``, read through
:func:`repro.estimators._base.fitted_guarantee`): Tran and PF-LD are **nominal** (the penalty couples the
samples of a batch, so per-sample clipping does not bound the sensitivity); Jagielski is accounted with
the cell sizes public.
"""

from __future__ import annotations

import math

import numpy as np

from repro.errors import InvalidParameterError
from repro.estimators._base import (
    FairClassifierBase,
    LinearFairClassifierBase,
    as_generator,
    fitted_guarantee,
)
from repro.learners.baselines import (
    dpsgd_unit,
    jagielski_2019,
    pf_ld,
    train_jagielski_2019,
    train_pf_ld,
    train_tran_2021a,
)
from repro.learners.baselines._dpsgd import BatchedModels
from repro.privacy.accounting import epsilon
from repro.privacy.guarantee import NON_PRIVATE

__all__ = ["Tran2021aClassifier", "PFLDClassifier", "Jagielski2019Classifier"]


def _delta(delta: float | None, n: int) -> float:
    return 1.0 / n**2 if delta is None else float(delta)


def _check_eps(eps: float) -> float:
    eps = float(eps)
    if not eps > 0:
        raise InvalidParameterError(f"epsilon must be > 0 (math.inf for none); got {eps}.")
    return eps


class Tran2021aClassifier(LinearFairClassifierBase):
    """Tran, Dinh, Fioretto (2021a) adapted to demographic parity: DP-SGD on BCE + γ·Σ_a |F̄_a − F̄|.

    Keyword-only: ``gamma`` (penalty weight), ``epsilon``, ``delta`` (None = 1/n²), ``fairness``
    (``"dp"``; ``"eo"`` uses the (a, y) cells), ``epochs`` (200), ``batch_size`` (1024), ``lr`` (0.1),
    ``clip_norm`` (1.0), ``random_state``. Fitted: ``model_``, ``coef_``, ``intercept_``,
    ``noise_multiplier_``, ``steps_``, ``privacy_guarantee_`` (nominal).
    """

    #: the learner unit whose ``fit`` this estimator's ``fit`` is (through :func:`train_tran_2021a`)
    _unit = dpsgd_unit
    #: the penalized core's claim (nominal), declared on the class as a ``--with`` method declares its own
    privacy_guarantee = fitted_guarantee(dpsgd_unit.guarantee(math.inf, 0.0, penalized=True))

    def __init__(self, *, gamma: float = 1.0, epsilon: float = 1.0, delta: float | None = None,
                 fairness: str = "dp", epochs: int = 200, batch_size: int = 1024, lr: float = 0.1,
                 clip_norm: float = 1.0, random_state: int | np.random.Generator | None = None) -> None:
        self.gamma = gamma
        self.epsilon = epsilon
        self.delta = delta
        self.fairness = fairness
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.clip_norm = clip_norm
        self.random_state = random_state

    path_param = "gamma"
    #: the γ models share their Poisson batches; each draws its own Gaussian noise (one batched run)
    path_shares_draws = False

    def fit(self, X, y, *, sensitive_features=None) -> Tran2021aClassifier:
        """Train one DP-SGD model with penalty weight ``gamma``."""
        return self._fit_one_of_path(X, y, sensitive_features)

    def _fit_path(self, X, y, sensitive_features, gammas: list) -> list[dict]:
        """One model per γ, all on the same Poisson batches, each with its own noise (:func:`train_tran_2021a`)."""
        eps = _check_eps(self.epsilon)
        X, y, s = self._fit_inputs(X, y, sensitive_features)
        delta = _delta(self.delta, X.shape[0])
        res = train_tran_2021a(X, y, s, gammas=[float(g) for g in gammas], epsilon=eps, delta=delta,
                               epochs=int(self.epochs), batch_size=int(self.batch_size), lr=float(self.lr),
                               clip_norm=float(self.clip_norm), fairness=self.fairness,
                               rng=as_generator(self.random_state))
        shared = {"noise_multiplier_": res.noise_multiplier, "steps_": res.steps, "configured_": res.configured,
                  "privacy_guarantee_": NON_PRIVATE if res.noise_multiplier == 0
                  else fitted_guarantee(res.configured.guarantee)}
        return [{**shared, **self._model_state(model)} for model in res.models]


class PFLDClassifier(LinearFairClassifierBase):
    """PF-LD (Tran, Fioretto, Van Hentenryck 2021b): DP-SGD primal on the Lagrangian, noisy dual ascent per epoch.

    Keyword-only: ``epsilon``, ``delta`` (None = 1/n²), ``fairness`` (``"dp"`` / ``"eo"``), ``epochs``
    (200), ``batch_size`` (1024), ``lr`` (0.1), ``clip_norm`` (1.0), ``dual_lr`` (0.5), ``dual_share``
    (0.2 of ε for the dual releases), ``random_state``. Fitted: ``model_``, ``coef_``, ``intercept_``,
    ``multipliers_``, ``noise_multiplier_``, ``dual_noise_multiplier_``, ``privacy_guarantee_`` (nominal).
    """

    def __init__(self, *, epsilon: float = 1.0, delta: float | None = None, fairness: str = "dp",
                 epochs: int = 200, batch_size: int = 1024, lr: float = 0.1, clip_norm: float = 1.0,
                 dual_lr: float = 0.5, dual_share: float = 0.2,
                 random_state: int | np.random.Generator | None = None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.fairness = fairness
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.clip_norm = clip_norm
        self.dual_lr = dual_lr
        self.dual_share = dual_share
        self.random_state = random_state

    def fit(self, X, y, *, sensitive_features=None) -> PFLDClassifier:
        """Train PF-LD on (X, y) with groups ``sensitive_features``."""
        eps = _check_eps(self.epsilon)
        X, y, s = self._fit_inputs(X, y, sensitive_features)
        delta = _delta(self.delta, X.shape[0])
        res = train_pf_ld(X, y, s, epsilon=eps, delta=delta, fairness=self.fairness, epochs=int(self.epochs),
                          batch_size=int(self.batch_size), lr=float(self.lr), clip_norm=float(self.clip_norm),
                          dual_lr=float(self.dual_lr), dual_share=float(self.dual_share),
                          rng=as_generator(self.random_state))
        self._set_model(res.model)
        self.multipliers_ = res.multipliers
        self.noise_multiplier_, self.dual_noise_multiplier_ = res.noise_multiplier, res.dual_noise_multiplier
        self.steps_ = res.steps
        self.privacy_guarantee_ = NON_PRIVATE if res.event is None else fitted_guarantee(
            pf_ld.guarantee(epsilon(res.event, delta, accountant="rdp"), delta))
        return self


class Jagielski2019Classifier(FairClassifierBase):
    """Jagielski et al. (2019) private reductions for equalized odds, one bound B on ‖λ‖₁.

    Keyword-only: ``bound`` (B; 0 = the unconstrained private learner), ``epsilon``, ``delta``
    (None = 1/n²), ``rounds`` (10), ``learner_epochs`` (5), ``batch_size`` (1024), ``lr`` (0.1),
    ``clip_norm`` (1.0), ``eta`` (2.0), ``slack`` (0.0), ``random_state``.

    The model is the uniform mixture of the ``rounds`` learner iterates: ``predict_proba`` is its exact
    P(Ŷ = 1 | x) = mean_t 1[h_t(x) = 1] (what the study scores); ``predict`` is its majority vote.
    Fitted: ``iterates_``, ``noise_multiplier_``, ``laplace_epsilon_per_round_``, ``privacy_guarantee_``
    (accounted, with the public-statistics caveat: the (a, y) cell sizes are public).
    """

    def __init__(self, *, bound: float = 1.0, epsilon: float = 1.0, delta: float | None = None, rounds: int = 10,
                 learner_epochs: int = 5, batch_size: int = 1024, lr: float = 0.1, clip_norm: float = 1.0,
                 eta: float = 2.0, slack: float = 0.0,
                 random_state: int | np.random.Generator | None = None) -> None:
        self.bound = bound
        self.epsilon = epsilon
        self.delta = delta
        self.rounds = rounds
        self.learner_epochs = learner_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.clip_norm = clip_norm
        self.eta = eta
        self.slack = slack
        self.random_state = random_state

    path_param = "bound"
    #: each bound's game draws its own learner noise and Laplace releases (one batched run, G games)
    path_shares_draws = False

    def fit(self, X, y, *, sensitive_features=None) -> Jagielski2019Classifier:
        """Run the private reductions game on (X, y, s)."""
        return self._fit_one_of_path(X, y, sensitive_features)

    def _fit_path(self, X, y, sensitive_features, bounds: list) -> list[dict]:
        """One game per bound B, batched in one run (:func:`train_jagielski_2019`; each game draws its own noise)."""
        eps = _check_eps(self.epsilon)
        X, y, s = self._fit_inputs(X, y, sensitive_features)
        delta = _delta(self.delta, X.shape[0])
        res = train_jagielski_2019(X, y, s, bounds=[float(b) for b in bounds], epsilon=eps, delta=delta,
                                   rounds=int(self.rounds), learner_epochs=int(self.learner_epochs),
                                   batch_size=int(self.batch_size), lr=float(self.lr),
                                   clip_norm=float(self.clip_norm), eta=float(self.eta), slack=float(self.slack),
                                   rng=as_generator(self.random_state))
        claim = NON_PRIVATE if res.event is None or math.isinf(eps) else fitted_guarantee(
            jagielski_2019.guarantee(epsilon(res.event, delta), delta))
        return [{"result_": res, "path_index_": i,
                 "iterates_": tuple(BatchedModels(m.w[:, i:i + 1], m.b[i:i + 1]) for m in res.iterates),
                 "noise_multiplier_": res.noise_multiplier, "steps_": res.steps,
                 "laplace_epsilon_per_round_": res.laplace_epsilon_per_round, "privacy_guarantee_": claim}
                for i in range(len(bounds))]

    def predict_proba(self, X, *, sensitive_features=None) -> np.ndarray:
        """(n, 2): P(Ŷ = classes_[1] | x) of the uniform mixture of iterates."""
        X, _ = self._predict_inputs(X, sensitive_features)
        return self._proba_from_positive(self.result_.predict_proba(X)[:, self.path_index_])
