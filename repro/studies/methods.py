"""Method registries of the studies: one file per method in a study's ``methods/`` folder, found by scanning it.

A method file defines ``METHOD``: the name the experiment files use (grid/cell ``method``), its declared
privacy guarantee (a :class:`repro.privacy.guarantee.Guarantee`, or one per study variant), the record names
it writes (Algorithm 2 also writes its base model's row), its position and style in tables and figures, and
``run(trial)``: how it trains and scores one :class:`Trial` (its parameters, context, dataset and the study's
prepared arrays; the same signature in every study, the return the study's: see its module docstring).
Adding a method is adding one file; the study's report draws every method it finds, and a researcher's own
method (``repro run --with``) is drawn beside them, labelled as theirs.

Most methods are declarations over an estimator class of :mod:`repro.estimators` (:meth:`Method.declare` with a
:class:`Learner`): the estimator, the knob it sweeps in one trial (:class:`Knob`, its path parameter) and the
experiment parameters it reads (:class:`Param`); the study's one generic ``runner`` builds the estimator with
the cell's budget and the trial's generator, fits the knob's path, scores every knob point with the study's
metrics and writes the privacy row. A researcher's ``--with`` class is trained by the same :class:`Learner`
(:func:`fit_user_method`). A method that trains the knob grids of several trials in one batched pass declares
that hook (:meth:`Method.batched`: ``prepare`` + the learner unit's ``fit_many``, the unit its estimator's
``fit`` is); one that needs logic of its own (Algorithm 2's two estimators and base-model row) keeps a
hand-written ``run``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from repro.engine.user_method import UserMethod, checked_predictions, guarantee_at, resolve
from repro.errors import InvalidParameterError, UnknownNameError
from repro.privacy.guarantee import Guarantee
from repro.privacy.guarantee import is_user_declared as is_user_label

__all__ = ["BatchedRun", "Declared", "Knob", "KnobFit", "Learner", "Method", "Param", "Style", "Trial", "discover",
           "find", "fit_user_method", "is_user_label", "USER_SUFFIX"]

#: how figures and reports mark a researcher's method (``repro run --with``)
USER_SUFFIX = "(yours)"


@dataclass(frozen=True)
class Trial:
    """One trial as every method's ``run(trial)`` reads it, in both studies: its parameters, its context
    (``ctx.rng()``: the trial's generator, drawn once by the method), the data mode, the dataset and the
    study's prepared arrays ``parts`` (the DP-FERMI figures: (X, y, s) of the training and the test rows;
    the thesis tables: (split, standardised X))."""

    params: Mapping[str, Any]
    ctx: Any
    data: str
    ds: Any
    parts: tuple


@dataclass(frozen=True, eq=False)
class Style(Mapping):
    """How tables and figures draw one record name of a method: matplotlib's ``color``, ``label``, ``marker``,
    ``markersize`` and ``alpha``. A read-only mapping of the fields that are set (``dict(style)`` gives the
    keyword arguments of a plot call; it compares equal to the same mapping); an unknown field is a one-line error
    at declaration."""

    color: str | None = None
    label: str | None = None
    marker: str | None = None
    markersize: float | None = None
    alpha: float | None = None

    @classmethod
    def of(cls, value: Style | Mapping[str, Any] | None) -> Style:
        """``value`` as a :class:`Style` (a mapping's keys must be its fields)."""
        if isinstance(value, Style):
            return value
        value = dict(value or {})
        unknown = sorted(set(value) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise InvalidParameterError(f"a method style takes color, label, marker, markersize and alpha; got "
                                        f"{', '.join(unknown)}.")
        return cls(**value)

    def _set(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}

    def __getitem__(self, key: str) -> Any:
        return self._set()[key]

    def __iter__(self):
        return iter(self._set())

    def __len__(self) -> int:
        return len(self._set())


@dataclass(frozen=True)
class KnobFit:
    """One trial's knob grid made ready for its learner unit's batched fit.

    ``configs`` are the models the trial trains together (its knob points, sharing batches and noise draws),
    on (``X``, ``y``, ``s``) with the trial's own generator ``rng``; ``finish(results)`` turns the unit's
    results for these configs into what the method's ``run`` returns. A study that batches trials
    collects the KnobFits of several trials and calls the method's ``fit_many`` once for all of them; each
    trial's results are those it gets alone (the units' contract).
    """

    X: Any
    y: Any
    s: Any
    configs: list
    rng: Any
    finish: Callable[[list], Any]


@dataclass(frozen=True)
class Param:
    """A learner argument read from a trial's parameters: ``kind(params[name])``."""

    name: str
    kind: Callable[[Any], Any] = float

    def read(self, params: Mapping[str, Any]) -> Any:
        """The argument's value in the trial with parameters ``params``."""
        return self.kind(params[self.name])


@dataclass(frozen=True)
class Knob:
    """The grid a method sweeps inside one trial (λ, γ, the bound B, ...): the estimator's path parameter
    ``arg`` (:meth:`repro.estimators._base.FairClassifierBase.fit_path`) takes ``[kind(v) for v in
    params[param]]``, all points trained in one run; the records' ``knob`` column shows these values."""

    arg: str
    param: str
    kind: Callable[[Any], Any] = float

    def read(self, params: Mapping[str, Any]) -> list:
        """The knob points of the trial with parameters ``params``."""
        return [self.kind(v) for v in params[self.param]]


#: how a fitted estimator predicts the test rows: its 0/1 labels, or the expected prediction of a randomized
#: classifier (``predict_proba``'s positive column: Jagielski et al.'s mixture of iterates)
_PREDICTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "label": lambda est, X: est.predict(X),
    "expected": lambda est, X: np.asarray(est.predict_proba(X))[:, 1],
}


@dataclass(frozen=True)
class Learner:
    """How a declared method trains (:meth:`Method.declare`): an estimator class of :mod:`repro.estimators` (the
    same object a researcher's ``--with`` method is), built with the study's budget and the trial's generator.

    The study's runner calls :meth:`fit`: ``estimator(epsilon=, delta=, random_state=rng, **kwargs(params))``
    fitted on the training rows (``sensitive_features`` unless ``groups`` is False: a fairness-unaware method),
    over the knob's points by the estimator's ``fit_path`` (one run; ``path_shares_draws`` says which draws the
    points share) when there is a knob;
    ``predict`` says how each fitted estimator predicts (``label`` / ``expected``, :data:`_PREDICTIONS`) and
    ``reports`` what the privacy row copies (column → fact; a tuple of names names each column as its fact):
    facts of the estimator's ``configured_`` (the learner unit's :class:`~repro.learners.unit.Configured`, by
    :func:`repro.learners.unit.privacy_row`) where it has one, else its fitted attributes ``<fact>_``.
    """

    estimator: type
    knob: Knob | None = None
    params: Mapping[str, Param] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)
    predict: str = "label"
    reports: Mapping[str, str] = field(default_factory=dict)
    groups: bool = True
    #: ``generator``: the trial's generator is the estimator's ``random_state`` (its stream continues: the
    #: project's estimators); ``int``: an int drawn from it (a researcher's scikit-learn class, ``--with``)
    seed: str = "generator"
    #: the name a broken prediction is reported under (:func:`repro.engine.user_method.checked_predictions`: a
    #: researcher's method); None: the project's estimators, whose predictions are not re-checked
    checked: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.reports, Mapping):     # names: each column named as its fact
            object.__setattr__(self, "reports", {name: name for name in self.reports})
        if self.predict not in _PREDICTIONS:
            raise InvalidParameterError(f"predict must be one of {', '.join(_PREDICTIONS)}; got {self.predict!r}.")
        if self.seed not in ("generator", "int"):
            raise InvalidParameterError(f"seed must be 'generator' or 'int'; got {self.seed!r}.")
        path = getattr(self.estimator, "path_param", None)
        if self.knob is not None and self.knob.arg != path:
            raise InvalidParameterError(f"{self.estimator.__name__} fits a path over {path!r}, not the knob "
                                        f"{self.knob.arg!r}; declare the knob on its path parameter.")

    def kwargs(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The estimator's hyperparameters besides the budget and the knob, for a trial with ``params``."""
        return {**{arg: p.read(params) for arg, p in self.params.items()}, **self.fixed}

    def fit(self, X: Any, y: Any, s: Any, params: Mapping[str, Any], *, epsilon: float, delta: float,
            rng: np.random.Generator) -> list[tuple[Any, Any]]:
        """(knob point, fitted estimator) per knob point of the trial (``[(None, estimator)]`` without a knob)."""
        takes = inspect.signature(self.estimator).parameters
        budget = {name: v for name, v in (("epsilon", epsilon), ("delta", delta)) if name in takes}
        seed = int(rng.integers(2**31 - 1)) if self.seed == "int" else rng
        est = self.estimator(**budget, random_state=seed, **self.kwargs(params))
        groups = {"sensitive_features": s} if self.groups else {}
        if self.knob is None:
            est.fit(X, y, **groups)        # the estimator itself (a researcher's fit need not return self)
            return [(None, est)]
        points = self.knob.read(params)
        return list(zip(points, est.fit_path(X, y, points, **groups), strict=True))

    def predictions(self, est: Any, X: Any) -> Any:
        """The fitted estimator's (possibly expected) 0/1 predictions on ``X`` (checked where :attr:`checked`)."""
        pred = _PREDICTIONS[self.predict](est, X)
        return pred if self.checked is None else checked_predictions(self.checked, pred, len(X))


@dataclass(frozen=True)
class Declared:
    """The ``run`` of a declared method: the study's generic ``runner(self, trial)``, which reads ``name``,
    ``learner`` and ``guarantee`` from this declaration (:meth:`Method.declare`)."""

    name: str
    learner: Any
    guarantee: Guarantee | Mapping[str, Guarantee]
    runner: Callable[..., Any]

    def __call__(self, trial: Trial) -> Any:
        return self.runner(self, trial)


@dataclass(frozen=True)
class BatchedRun:
    """The ``run`` of a batched method for one trial alone: ``prepare``, then the learner unit's
    ``fit_many`` on that one :class:`KnobFit` (:meth:`Method.batched`)."""

    prepare: Callable[[Trial], KnobFit]
    fit_many: Callable[..., list]

    def __call__(self, trial: Trial) -> Any:
        fit = self.prepare(trial)
        return fit.finish(self.fit_many(fit.X, fit.y, fit.s, [fit.configs], [fit.rng])[0])


@dataclass(frozen=True)
class Method:
    """One method of a study (see the module docstring).

    ``guarantee`` is one :class:`Guarantee` or a mapping ``variant -> Guarantee`` (e.g. DP-FERMI's
    reference / strict engines); its ε is the declaration's, the trial records the ε actually spent.
    """

    name: str
    run: Callable[..., Any]
    guarantee: Guarantee | Mapping[str, Guarantee]
    records: tuple[str, ...] = ()
    order: int = 100
    style: Mapping[str, Style] = field(default_factory=dict)
    variant_independent: bool = False
    #: the batched capability (optional): ``prepare(trial)`` returns a :class:`KnobFit`;
    #: ``fit_many(X, y, s, configs, generators)`` is the learner unit's batched fit
    prepare: Callable[..., KnobFit] | None = None
    fit_many: Callable[..., list] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "style", {record: Style.of(st) for record, st in dict(self.style).items()})

    @classmethod
    def declare(cls, *, name: str, learner: Any, guarantee: Guarantee | Mapping[str, Guarantee],
                runner: Callable[..., Any], style: Mapping[str, Any] | None = None, **rest: Any) -> Method:
        """A method that is a declaration: ``runner`` (the study's generic run, written once) trains
        ``learner`` (a :class:`Learner`, or what that runner reads) and scores it. ``style`` is the
        style of its one record name; ``rest`` are the other fields (``order``, ``variant_independent``)."""
        return cls(name=name, run=Declared(name, learner, guarantee, runner), guarantee=guarantee,
                   style={name: dict(style or {})}, **rest)

    @classmethod
    def batched(cls, *, name: str, prepare: Callable[..., KnobFit], fit_many: Callable[..., list],
                guarantee: Guarantee | Mapping[str, Guarantee], style: Mapping[str, Any] | None = None,
                **rest: Any) -> Method:
        """A method whose one hook fits a trial's knob grid batched: ``prepare(trial)`` returns a
        :class:`KnobFit`; ``fit_many`` is the learner unit's batched fit. Its
        ``run`` (one trial alone) is :class:`BatchedRun`; a study that batches trials calls the two itself."""
        return cls(name=name, run=BatchedRun(prepare, fit_many), prepare=prepare, fit_many=fit_many,
                   guarantee=guarantee, style={name: dict(style or {})}, **rest)

    @property
    def record_names(self) -> tuple[str, ...]:
        """The ``method`` values of the rows this method writes (default: its own name)."""
        return self.records or (self.name,)

    def guarantee_for(self, variant: str | None = None) -> Guarantee:
        """The declared guarantee (of ``variant`` when it depends on it)."""
        if isinstance(self.guarantee, Guarantee):
            return self.guarantee
        if variant not in self.guarantee:
            raise InvalidParameterError(f"method {self.name!r} declares no guarantee for variant {variant!r}; "
                                        f"declared: {', '.join(self.guarantee)}.")
        return self.guarantee[variant]

    def label(self, variant: str | None = None) -> str:
        """The ε label written into the trial records (``accounted`` / ``nominal`` / ...)."""
        return self.guarantee_for(variant).label.value


@functools.cache
def discover(package: str) -> dict[str, Method]:
    """Every ``METHOD`` of the modules of ``package``, by name, in (order, name) order."""
    pkg = importlib.import_module(package)
    found: dict[str, Method] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package}.{info.name}")
        method = getattr(module, "METHOD", None)
        if not isinstance(method, Method):
            continue
        if method.name in found:
            raise RuntimeError(f"method {method.name!r} is defined twice in {package}")
        found[method.name] = method
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


def find(package: str, name: str) -> Method:
    """The method ``name`` of ``package``; an unknown name is a one-line error naming the choices."""
    methods = discover(package)
    if name not in methods:
        raise UnknownNameError(f"unknown method {name!r}; choices: {', '.join(methods)} "
                               "(or bring your own with `repro run ID --with FILE.py`).")
    return methods[name]


def fit_user_method(key: str, X: Any, y: Any, s: Any, X_test: Any, *, rng: np.random.Generator, epsilon: float,
                    delta: float) -> tuple[UserMethod, np.ndarray, Guarantee]:
    """A researcher's method (``repro run --with``, identity ``key``) trained as the project's declared methods are:
    its class is a :class:`Learner`'s estimator (the budget where its ``__init__`` takes it, an int
    ``random_state`` drawn from the trial's generator ``rng``, its predictions checked), fitted on (X, y, s) and
    predicting ``X_test``. Returns the method, its 0/1 predictions and its guarantee at the cell's budget,
    labelled *declared by the user* (:func:`repro.engine.user_method.guarantee_at`)."""
    method = resolve(key)
    learner = Learner(method.cls, seed="int", checked=method.name)
    [(_, est)] = learner.fit(X, y, s, {}, epsilon=epsilon, delta=delta, rng=rng)
    return method, learner.predictions(est, X_test), guarantee_at(method, epsilon, delta)
