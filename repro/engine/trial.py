"""What a trial receives and returns, and the contract of a *study module*.

A study module is the code behind one or more experiment files. It lives in
``repro/studies/<document>/``, its dotted path is the ``trial`` key of an experiment file (e.g.
``trial = "repro.studies.cummings2019.impossibility"``) and it defines:

``run_trial(params: dict, ctx: TrialContext) -> TrialOutput | dict[str, float]``
    Required. A pure function of ``params`` (the experiment's fixed ``params``, one grid cell and
    ``variant``, each typed as the experiment file declares it; read declared keys as
    ``params[key]``: the file is the one source of defaults) and the randomness in ``ctx``. A
    plain dict is one record of metrics for the cell's method.
``INDEX: tuple[str, ...]`` and ``VALUES: tuple[str, ...]``
    Optional. The non-metric keys its records may hold (issue #20, item 3): ``INDEX`` keys identify
    a row besides the grid keys (``lambda``/``knob`` when one trial sweeps internally, a fold) and
    group the summary; ``VALUES`` are value columns (an ε label, a tuned hyperparameter, a computed
    σ), kept in ``trials.csv`` and never part of a row's identity. A record may also repeat one of
    its own parameters. Any other key fails the run, naming it, before results are written.
``VERSION: str``
    Optional. Bump to invalidate cached trials for a reason the code hash cannot see (e.g. a
    changed data file). The study module and every ``repro`` module it imports, transitively,
    are hashed automatically (:func:`repro.engine.cache.code_version`).

Its companion *report module* ``<study>_report`` (same folder) imports the study, never the
reverse, and may define:

``plot(bundle: ResultBundle, outdir: Path) -> list[Path]``
    Draws figures from saved results only (never recomputes); save each with
    :func:`repro.plotting.save_figure`, which writes PNG and PDF.
``report_markdown(bundle: ResultBundle) -> str``
    Plain-English verdicts computed from saved results, put in the report.

Report modules are not part of the trial cache key: editing a figure never recomputes trials.
``VARIANT_INDEPENDENT_METHODS: tuple[str, ...]``
    Optional. Methods (grid values of ``method``) whose trials do not depend on ``variant``; their
    cache entries are shared by all variants, so ``--variant X`` reuses them (seeds never depend on
    the variant, so the numbers are the same either way).

Library code never creates a generator itself: ``ctx.rng()`` is the trial's own stream, and
``ctx.rng(label, ..., scope=...)`` a stream shared by the trials the scope names (see
:meth:`TrialContext.rng`); e.g. ``scope="repetition"`` for data splits and common random numbers
across methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from repro.engine.identity import TrialKey, canonical_json, stable_words

RNG_SCOPES = ("trial", "repetition", "experiment", "global")

__all__ = ["RNG_SCOPES", "TrialContext", "TrialKey", "TrialOutput", "global_rng", "stable_words", "canonical_json"]


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

    @property
    def seed_sequence(self) -> np.random.SeedSequence:
        """SeedSequence of this trial: base seed + hash of its key (experiment, typed params, repetition)."""
        return np.random.SeedSequence([self.base_seed, *self.key.seed_words()])

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
        ``"global"``
            Shared by every experiment run with the same base seed; the caller names everything
            else in ``labels`` (e.g. one split reused by two tables of the same dataset: name the
            dataset and the repetition).
        """
        if scope == "trial":
            words = self.key.seed_words(*labels)
        elif scope == "repetition":
            words = stable_words(self.experiment_id, "shared", self.repetition, *labels)
        elif scope == "experiment":
            words = stable_words(self.experiment_id, "experiment", *labels)
        elif scope == "global":
            return global_rng(self.base_seed, *labels)
        else:
            raise ValueError(f"scope must be one of {', '.join(RNG_SCOPES)}; got {scope!r}")
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.base_seed, *words])))

    def for_repetition(self, repetition: int) -> TrialContext:
        """This trial's context at another repetition (e.g. a tuning search run on repetition 0's
        split for every repetition); the engine's way, so no study forges a context."""
        return replace(self, key=replace(self.key, repetition=int(repetition)))

    def shared_value(self, namespace: str, key: dict[str, Any], module: str, compute: Any,
                     validate: Any = None) -> Any:
        """``compute()`` computed once per run and cached across runs (e.g. a hyperparameter search
        shared by every repetition): see :func:`repro.engine.cache.shared_value`. It must not depend on
        the repetition; derive its randomness from ``key``. ``validate(value) -> bool`` checks the
        structure of a cached value (a wrong one is named in a warning and recomputed)."""
        from repro.engine.cache import shared_value
        return shared_value(self.cache_dir, namespace, key, module, compute, validate=validate,
                            refresh=self.refresh)


def global_rng(base_seed: int, *labels: Any) -> np.random.Generator:
    """The ``scope="global"`` stream of :meth:`TrialContext.rng` named by ``labels`` (the caller names
    everything: study, purpose, dataset, repetition), for code cached per process by its inputs
    (e.g. a split shared by two tables) that has the base seed but no trial context."""
    words = stable_words("global", *labels)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(base_seed), *words])))


@dataclass
class TrialOutput:
    """What a trial returns.

    Parameters
    ----------
    records
        One dict per result row. Keys that are declared metrics of the experiment are metric
        values (floats); ``method`` names the method (defaults to the cell's method); any other
        key must be one of the trial's params or declared by the study module: ``INDEX = (...)``
        (keys that identify a row, e.g. ``lambda`` when one trial sweeps a grid internally) or
        ``VALUES = (...)`` (value columns: an ε label, a tuned hyperparameter, a computed σ). An
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
