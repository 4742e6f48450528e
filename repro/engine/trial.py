"""What a trial receives and returns: its :class:`TrialContext` (identity and random streams) and
:class:`TrialOutput`. The contract of a study module is :class:`repro.engine.study.Study`.

Library code never creates a generator itself: ``ctx.rng()`` is the trial's own stream, and
``ctx.rng(label, ..., scope=...)`` a stream shared by the trials the scope names (see
:meth:`TrialContext.rng`); e.g. ``scope="repetition"`` for data splits and common random numbers
across methods, or a scope the experiment file declares under ``[scopes]`` for a stream shared by a
family of experiments (issue 36).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from repro.engine.identity import BUILTIN_SCOPES, StreamScope, TrialKey, stable_words
from repro.errors import ExperimentFileError

#: the scopes every trial has; an experiment file declares more under ``[scopes]`` (:class:`StreamScope`)
RNG_SCOPES = BUILTIN_SCOPES

__all__ = ["RNG_SCOPES", "StreamSeed", "TrialContext", "TrialKey", "TrialOutput"]


@dataclass(frozen=True)
class StreamSeed:
    """The hashable identity of one random stream (a SeedSequence's entropy): what a per-process cache of
    a study keys on (e.g. an ``lru_cache`` of a data split) instead of a generator; :meth:`rng` restarts it."""

    entropy: tuple[int, ...]

    def rng(self) -> np.random.Generator:
        """A fresh generator at the start of the stream."""
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(self.entropy))))


@dataclass(frozen=True)
class TrialContext:
    """The randomness and identity of one trial: its :class:`~repro.engine.identity.TrialKey`.

    ``experiment_id``, ``setting`` (a readable label of the cell, never parsed), ``method``,
    ``repetition`` and ``base_seed`` read the key. In a test: ``TrialContext(TrialKey.of("id",
    {"method": "a"}, repetition=0))``.
    """

    key: TrialKey
    #: the run's trial-cache root (None with ``--no-cache``): where :meth:`shared_value` keeps values
    cache_dir: str | None = field(default=None, compare=False)
    #: ``--force``: recompute shared values and replace the cached ones
    refresh: bool = field(default=False, compare=False)

    @property
    def experiment_id(self) -> str:
        return self.key.experiment_id

    @property
    def setting(self) -> str:
        return self.key.setting

    @property
    def method(self) -> str:
        return self.key.method

    @property
    def repetition(self) -> int:
        return self.key.repetition

    @property
    def base_seed(self) -> int:
        return self.key.base_seed

    def rng(self, *labels: Any, scope: str = "trial") -> np.random.Generator:
        """A fresh generator (each call restarts the same stream), keyed by ``scope`` and ``labels``.

        ``scope`` says which trials share the stream; ``labels`` (names, values) separate the streams
        a trial draws for different purposes, e.g. ``ctx.rng("split", dataset, scope="repetition")``:

        ``"trial"``
            This trial's own stream (its :class:`TrialKey`: typed params and repetition).
        ``"repetition"``
            Shared by every cell and method of this repetition of this experiment (data splits,
            common random numbers across methods).
        ``"experiment"``
            Shared by every trial of this experiment, whatever its repetition (e.g. a tuning search
            reused by every repetition of a cell: name the cell's keys in ``labels``).
        a name the experiment declares under ``[scopes]``
            Shared by every experiment that declares the same family (:class:`StreamScope`), seeded by
            the base seed or the declared integer parameter; the caller names everything else in
            ``labels`` (e.g. the dataset and the repetition of a split shared by two tables). A name
            the experiment does not declare is refused in one line.
        """
        return self.seed(*labels, scope=scope).rng()

    def seed(self, *labels: Any, scope: str = "trial") -> StreamSeed:
        """The identity of the stream :meth:`rng` starts (hashable: a key for per-process caches)."""
        if scope == "trial":
            return StreamSeed((self.base_seed, *self.key.seed_words(*labels)))
        if scope == "repetition":
            return StreamSeed((self.base_seed, *stable_words(self.experiment_id, "shared", self.repetition, *labels)))
        if scope == "experiment":
            return StreamSeed((self.base_seed, *stable_words(self.experiment_id, "experiment", *labels)))
        declared = self._declared(scope)
        return StreamSeed((self._scope_seed(declared), *stable_words("global", declared.family, *labels)))

    def _declared(self, scope: str) -> StreamScope:
        declared = self.key.scopes
        if scope not in declared:
            raise ExperimentFileError(
                f"{self.experiment_id}: the study asks for random-stream scope {scope!r}, which the experiment file "
                f"does not declare; scopes: {', '.join([*RNG_SCOPES, *declared])} (declare it under [scopes], e.g. "
                f"{scope} = {{ family = \"<name>\" }})")
        return declared[scope]

    def _scope_seed(self, declared: StreamScope) -> int:
        return self.base_seed if declared.seed is None else int(self.key.params[declared.seed])

    def scope_identity(self, scope: str) -> dict[str, Any]:
        """What names the trials that share ``scope`` (see :meth:`rng`): the key of a value shared by them."""
        if scope == "trial":
            return {"trial": self.key.canonical()}
        if scope == "repetition":
            return {"experiment": self.experiment_id, "repetition": self.repetition, "base_seed": self.base_seed}
        if scope == "experiment":
            return {"experiment": self.experiment_id, "base_seed": self.base_seed}
        declared = self._declared(scope)
        return {"family": declared.family, "seed": self._scope_seed(declared)}

    def for_repetition(self, repetition: int) -> TrialContext:
        """This trial's context at another repetition (e.g. a tuning search run on repetition 0's
        split for every repetition); the engine's way, so no study forges a context."""
        return replace(self, key=replace(self.key, repetition=int(repetition)))

    def shared_value(self, name: str, *, scope: str, key: Mapping[str, Any], compute: Any, module: str,
                     validate: Any = None) -> Any:
        """``compute()`` computed once for the trials that share ``scope`` (see :meth:`rng`) and cached across
        runs (e.g. a hyperparameter search shared by every repetition): see
        :func:`repro.engine.cache.shared_value`. The value is keyed by ``name``, the scope's identity
        (:meth:`scope_identity`), ``key`` (canonical typed values: never a ``repr``) and the code version of
        ``module`` (the code that computes it); derive its randomness from the same scope.
        ``validate(value) -> bool`` checks the structure of a cached value (a wrong one is named in a
        warning and recomputed)."""
        from repro.engine.cache import shared_value
        return shared_value(self.cache_dir, name, {"scope": self.scope_identity(scope), **key}, module, compute,
                            validate=validate, refresh=self.refresh)


@dataclass
class TrialOutput:
    """What a trial returns.

    Parameters
    ----------
    records
        One dict per result row. Keys that are declared metrics of the experiment are metric
        values (floats); ``method`` names the method (defaults to the cell's method); any other
        key must be one of the trial's params or declared by the study (:class:`repro.engine.study.Study`):
        ``index`` (keys that identify a row, e.g. ``lambda`` when one trial sweeps a grid internally) or
        ``values`` (value columns: an ε label, a tuned hyperparameter, a computed σ). An
        undeclared key is an error naming it (:func:`repro.engine.runner.declared_outputs`).
    tables
        Named extra tables (lists of row dicts), concatenated over trials into ``<name>.csv``
        with the trial's identifying columns prepended. Values must be JSON/CSV friendly.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def coerce(cls, value: TrialOutput | Mapping[str, Any]) -> TrialOutput:
        """Accept a plain metrics dict as a single record."""
        if isinstance(value, TrialOutput):
            return value
        if isinstance(value, Mapping):
            return cls(records=[dict(value)])
        raise TypeError(f"a trial must return TrialOutput or a dict of metrics; got {type(value).__name__}")
