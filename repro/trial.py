"""What a trial receives and returns, and the contract of a *study module*.

A study module is the code behind one or more experiment files. It lives in
``repro/studies/<document>/``, its dotted path is the ``trial`` key of an experiment file (e.g.
``trial = "repro.studies.cummings2019.impossibility"``) and it defines:

``run_trial(params: dict, ctx: TrialContext) -> TrialOutput | dict[str, float]``
    Required. A pure function of ``params`` (the experiment's fixed ``params``, one grid cell and
    ``variant``) and the randomness in ``ctx``. A plain dict is one record of metrics for the
    cell's method.
``VERSION: str``
    Optional. Bump to invalidate cached trials for a reason the code hash cannot see (e.g. a
    changed data file). The study module and every ``repro`` module it imports, transitively,
    are hashed automatically (:func:`repro.cache.code_version`).

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

Library code never creates a generator itself: ``ctx.rng`` is the trial's own stream, and
``ctx.shared_rng(label)`` a stream shared by every cell and method of the same repetition (use it
for data splits and common random numbers across methods).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TrialContext", "TrialOutput", "stable_words", "canonical_json"]


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace; the stable text form of configs and settings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def stable_words(*parts: Any) -> list[int]:
    """Four 32-bit words of sha256 over the canonical JSON of ``parts``.

    Used as SeedSequence entropy, so seeds depend on names and values, never on execution order,
    worker count or Python's randomized ``hash``.
    """
    digest = hashlib.sha256(canonical_json(list(parts)).encode()).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


@dataclass(frozen=True)
class TrialContext:
    """The randomness and identity of one trial (experiment, cell, method, repetition).

    Attributes
    ----------
    experiment_id, setting, method, repetition, base_seed
        Identify the trial; ``setting`` is the stable ``k=v;k=v`` string of the cell.
    """

    experiment_id: str
    setting: str
    method: str
    repetition: int
    base_seed: int = 0
    #: the run's trial-cache root (None with ``--no-cache``/``--force``): where :meth:`shared_value` keeps values
    cache_dir: str | None = field(default=None, compare=False)

    @property
    def seed_sequence(self) -> np.random.SeedSequence:
        """SeedSequence of this trial: base seed + hash(experiment, setting, method, repetition)."""
        words = stable_words(self.experiment_id, self.setting, self.method, self.repetition)
        return np.random.SeedSequence([self.base_seed, *words])

    @property
    def rng(self) -> np.random.Generator:
        """A fresh generator for this trial (each access restarts the same stream)."""
        return np.random.Generator(np.random.PCG64(self.seed_sequence))

    def shared_value(self, namespace: str, key: dict[str, Any], module: str, compute: Any) -> Any:
        """``compute()`` computed once per run and cached across runs (e.g. a hyperparameter search
        shared by every repetition): see :func:`repro.cache.shared_value`. It must not depend on
        the repetition; derive its randomness from ``key``."""
        from repro.cache import shared_value
        return shared_value(self.cache_dir, namespace, key, module, compute)

    def shared_rng(self, *labels: Any) -> np.random.Generator:
        """A generator shared by all cells and methods of this repetition, keyed by ``labels``."""
        words = stable_words(self.experiment_id, "shared", self.repetition, *labels)
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.base_seed, *words])))


@dataclass
class TrialOutput:
    """What a trial returns.

    Parameters
    ----------
    records
        One dict per result row. Keys that are declared metrics of the experiment are metric
        values (floats); ``method`` names the method (defaults to the cell's method); any other
        key extends the row's setting (e.g. ``lambda`` when one trial sweeps a grid internally).
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
