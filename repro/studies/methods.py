"""Method registries of the studies: one file per method in a study's ``methods/`` folder, found by scanning it.

A method file defines ``METHOD = Method(...)``: the name the experiment files use (grid/cell ``method``), its
declared privacy guarantee (a :class:`repro.privacy.guarantee.Guarantee`, or one per study variant), the
record names it writes (Algorithm 2 also writes its base model's row), its position and style in tables
and figures, and ``run``: how it trains and scores on a prepared split (the signature is the study's; see
the study's module docstring). Adding a method is adding one file; the study's report draws every method
it finds, and a researcher's own method (``repro run --with``) is drawn beside them, labelled as theirs.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from repro.errors import InvalidParameterError, UnknownNameError
from repro.privacy.guarantee import Guarantee
from repro.privacy.guarantee import is_user_declared as is_user_label

__all__ = ["KnobFit", "Method", "discover", "find", "is_user_label", "USER_SUFFIX"]

#: how figures and reports mark a researcher's method (``repro run --with``)
USER_SUFFIX = "(yours)"


@dataclass(frozen=True)
class KnobFit:
    """One trial's knob grid made ready for its learner unit's batched fit (issue 34, item 1).

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
    style: Mapping[str, Any] = field(default_factory=dict)
    variant_independent: bool = False
    #: the batched hook (optional): ``prepare`` takes ``run``'s arguments and returns a :class:`KnobFit`;
    #: ``fit_many(X, y, s, configs, generators)`` is the learner unit's batched fit
    prepare: Callable[..., KnobFit] | None = None
    fit_many: Callable[..., list] | None = None

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
