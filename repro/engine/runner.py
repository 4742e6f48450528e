"""Expand an experiment into trials, run them in parallel with caching, and aggregate.

A trial is one (cell, repetition) of an experiment's grid under one profile and variant; its
result depends only on its params and its seed, which is derived from names (never from order),
so results are bit-identical with 1 or N workers. Completed trials are cached as soon as they
arrive; failures are reported and never cached; a killed run resumes from the cache.
"""

from __future__ import annotations

import importlib
import logging
import math
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repro.engine.backends import BACKENDS, run_tasks, single_threaded
from repro.engine.cache import TrialCache, code_version, trial_key
from repro.engine.spec import ExperimentSpec, Reference, format_setting, validate_param
from repro.engine.trial import TrialContext, TrialOutput
from repro.engine.warnings_capture import capture as capture_warnings
from repro.engine.warnings_capture import summary_lines
from repro.errors import InvalidParameterError, ReproError, TrialFailedError

__all__ = ["BACKENDS", "RunConfig", "RunOutcome", "TrialTask", "plan_trials", "run_experiment",
           "summarize", "SUMMARY_COLUMNS"]

log = logging.getLogger(__name__)

SUMMARY_COLUMNS = ["result_id", "method", "setting", "metric", "n", "mean", "std", "paper", "diff",
                   "tolerance", "within"]
ProgressFn = Callable[[int, int], None]
#: unit of a timing metric (wall or CPU seconds): kept in trials.csv, left out of summary.csv
TIMING_UNIT = "s"


@dataclass(frozen=True)
class RunConfig:
    """Everything the command line decides about a run (one frozen object, handed to the library)."""

    profile: str = "smoke"
    seeds: int | None = None
    jobs: int = 1
    backend: str = "loky"
    variant: str | None = None
    out: Path = Path("results")
    force: bool = False
    use_cache: bool = True
    base_seed: int | None = None
    overrides: Mapping[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InvalidParameterError(f"backend must be one of {', '.join(BACKENDS)}; got {self.backend!r}")
        if self.seeds is not None and self.seeds < 1:
            raise InvalidParameterError(f"--seeds must be >= 1; got {self.seeds}")
        if self.jobs == 0 or self.jobs < -1:
            raise InvalidParameterError(f"--jobs must be >= 1 (or -1 for all cores); got {self.jobs}")
        for key, values in self.overrides.items():
            validate_param(key, list(values), where="--set")

    @property
    def cache_root(self) -> Path:
        return Path(self.out) / ".cache"


@dataclass(frozen=True)
class TrialTask:
    """One trial to run: its params, identity (for the seed) and cache key."""

    index: int
    module: str
    params: dict[str, Any]
    cell: dict[str, Any]
    context: TrialContext
    key: str


@dataclass
class RunOutcome:
    """Aggregated results of one experiment run (before they are written to disk)."""

    spec: ExperimentSpec
    config: RunConfig
    variant: str
    n_seeds: int
    trials: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    summary: pd.DataFrame
    wall_seconds: float
    n_trials: int
    n_cached: int
    warnings: dict[str, int] = field(default_factory=dict)


def plan_trials(spec: ExperimentSpec, config: RunConfig) -> list[TrialTask]:
    """Expand grid × seeds into tasks (deterministic order: cells, then repetitions)."""
    variant = spec.check_variant(config.variant)
    settable = spec.settable_keys(config.profile)
    for key in config.overrides:
        if key not in settable:
            raise InvalidParameterError(
                f"--set {key}: {spec.id!r} has no parameter {key!r}; settable: {', '.join(sorted(settable))}"
            )
    fixed = spec.fixed_params(config.profile, config.overrides)
    cells = spec.expand_cells(config.profile, config.overrides)
    n_seeds = config.seeds or spec.profile(config.profile).seeds
    base_seed = spec.base_seed if config.base_seed is None else config.base_seed
    code = code_version(spec.trial)
    shared_methods = set(getattr(importlib.import_module(spec.trial), "VARIANT_INDEPENDENT_METHODS", ()))
    tasks = []
    for cell in cells:
        params = {**fixed, **cell, "variant": variant}
        setting = format_setting(cell)
        method = str(cell.get("method", ""))
        # a method the study declares variant-independent has one cache entry for all variants
        key_params = {k: v for k, v in params.items() if k != "variant"} if method in shared_methods else params
        for rep in range(n_seeds):
            ctx = TrialContext(spec.id, setting, method, rep, base_seed,
                               cache_dir=str(config.cache_root) if config.use_cache and not config.force else None)
            key = trial_key(experiment_id=spec.id, params=key_params, repetition=rep,
                            base_seed=base_seed, code=code)
            tasks.append(TrialTask(len(tasks), spec.trial, params, cell, ctx, key))
    return tasks


def _execute(task: TrialTask) -> tuple[int, bool, Any, float, dict[str, int]]:
    """Run one trial; never raises (failures are returned so other trials go on).

    Returns ``(index, ok, value, seconds, warnings)``. A failure's value is ``(traceback text,
    user error or None)``: a :class:`ReproError` raised inside a trial (missing data, a bad
    parameter) is a user error, shown without a traceback. ``warnings`` counts the warnings the
    trial raised, by kind (see :mod:`repro.engine.warnings_capture`).
    """
    start = time.perf_counter()
    with capture_warnings() as caught:
        try:
            module = importlib.import_module(task.module)
            with single_threaded():  # same BLAS summation order in every process and backend
                out = TrialOutput.coerce(module.run_trial(dict(task.params), task.context))
            ok, value = True, out
        except ReproError as exc:
            ok, value = False, (traceback.format_exc(), exc)
        except Exception:  # noqa: BLE001 - reported to the user with its traceback
            ok, value = False, (traceback.format_exc(), None)
    return task.index, ok, value, time.perf_counter() - start, dict(caught)


def _run_pending(pending: list[TrialTask], config: RunConfig
                 ) -> Iterator[tuple[int, bool, Any, float, dict[str, int]]]:
    return run_tasks(_execute, pending, backend=config.backend, jobs=config.jobs)


def _valid_entry(value: Any) -> bool:
    """Structure of a trial-cache entry: ``{"output": TrialOutput, "seconds": float}``."""
    return (isinstance(value, dict) and isinstance(value.get("output"), TrialOutput)
            and isinstance(value.get("seconds"), (int, float)))


def run_experiment(spec: ExperimentSpec, config: RunConfig, *,
                   progress: ProgressFn | None = None) -> RunOutcome:
    """Run (or load from cache) every trial of ``spec`` under ``config`` and aggregate them.

    Raises
    ------
    TrialFailedError
        If any trial raised. Completed trials stay cached, so a rerun only redoes the failures.
    """
    start = time.perf_counter()
    tasks = plan_trials(spec, config)
    variant = spec.check_variant(config.variant)
    cache = TrialCache(config.cache_root, spec.id, validate=_valid_entry)
    results: dict[int, tuple[TrialOutput, float, bool]] = {}
    pending = []
    for task in tasks:
        hit = cache.get(task.key) if (config.use_cache and not config.force) else None
        if hit is not None:
            results[task.index] = (hit["output"], hit["seconds"], True)
        else:
            pending.append(task)
    n_cached = len(results)
    total = len(tasks)
    if cache.n_corrupt:
        log.warning("%d trial-cache entr%s of %r failed the checksum or structure check (or predate it) "
                    "and will be recomputed", cache.n_corrupt, "y" if cache.n_corrupt == 1 else "ies", spec.id)
    if progress:
        progress(n_cached, total)
    failures: list[tuple[TrialTask, str]] = []
    by_index = {t.index: t for t in pending}
    warning_counts: Counter[str] = Counter()
    warning_trials: Counter[str] = Counter()
    warning_where: dict[str, str] = {}
    for index, ok, value, seconds, caught in _run_pending(pending, config):
        task = by_index[index]
        warning_counts.update(caught)
        warning_trials.update(caught.keys())
        for kind in caught:
            warning_where.setdefault(kind, f"method {task.context.method!r}, setting {task.context.setting!r}")
        if ok:
            results[index] = (value, seconds, False)
            if config.use_cache:
                cache.put(task.key, {"output": value, "seconds": seconds})
        else:
            failures.append((task, value))
            log.debug("trial %s rep %d failed:\n%s", task.context.setting, task.context.repetition, value[0])
        if progress:
            progress(len(results) + len(failures), total)
    for line in summary_lines(warning_counts, warning_trials, spec.id, warning_where):
        log.warning(line)
    if failures:
        user_errors = [err for _, (_, err) in failures if err is not None]
        if len(user_errors) == len(failures):
            # Every failure is a user error (e.g. missing data): report the first one as it is.
            user_errors[0].tracebacks = [tb for _, (tb, _) in failures]  # type: ignore[attr-defined]
            raise user_errors[0]
        first_task, (tb, _) = failures[0]
        last_line = tb.strip().splitlines()[-1]
        err = TrialFailedError(
            f"{len(failures)} of {total} trials of {spec.id!r} failed (first: setting "
            f"'{first_task.context.setting}', repetition {first_task.context.repetition}: {last_line}); "
            "completed trials are cached, so fix the cause and rerun (--debug shows the traceback)"
        )
        err.tracebacks = [tb for _, (tb, _) in failures]  # type: ignore[attr-defined]
        raise err
    trials, tables = _collect(spec, tasks, results)
    summary = summarize(spec, trials)
    n_seeds = config.seeds or spec.profile(config.profile).seeds
    return RunOutcome(spec, config, variant, n_seeds, trials, tables, summary,
                      time.perf_counter() - start, total, n_cached, dict(warning_counts))


def _collect(spec: ExperimentSpec, tasks: list[TrialTask],
             results: Mapping[int, tuple[TrialOutput, float, bool]]) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    metric_names = set(spec.metric_names)
    rows: list[dict[str, Any]] = []
    table_rows: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        output, seconds, cached = results[task.index]
        cell_method = str(task.cell.get("method", ""))
        for rec in output.records:
            rec = dict(rec)
            method = str(rec.pop("method", cell_method))
            metrics = {k: v for k, v in rec.items() if k in metric_names}
            extras = {k: v for k, v in rec.items() if k not in metric_names}
            if not metrics:
                raise TypeError(
                    f"study {spec.trial!r} returned a record with no declared metric of {spec.id!r} "
                    f"(keys: {sorted(rec)}; declared: {sorted(metric_names)})"
                )
            setting_params = {k: v for k, v in task.cell.items() if k != "method"} | extras
            row = {"result_id": spec.id, "method": method, "setting": format_setting(setting_params),
                   "repetition": task.context.repetition, **setting_params}
            row.update({k: _to_float(v) for k, v in metrics.items()})
            row["seconds"] = seconds
            row["cached"] = cached
            rows.append(row)
        for name, trows in output.tables.items():
            lead = {"result_id": spec.id, "method": cell_method, "setting": task.context.setting,
                    "repetition": task.context.repetition}
            table_rows.setdefault(name, []).extend({**lead, **r} for r in trows)
    trials = pd.DataFrame(rows)
    tables = {name: pd.DataFrame(r) for name, r in table_rows.items()}
    return trials, tables


def _to_float(v: Any) -> float:
    if v is None:
        return math.nan
    return float(v)


def _find_reference(spec: ExperimentSpec, method: str, metric: str, params: Mapping[str, Any]) -> Reference | None:
    for ref in spec.references:
        if ref.metric == metric and ref.matches(method, params):
            return ref
    return None


def summarize(spec: ExperimentSpec, trials: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, setting, metric): n, mean, std (ddof=1; 0 when n=1) and the paper's value.

    Timing metrics (unit ``"s"``) are left out: they differ from run to run, and the summary must
    be byte-identical for any ``--jobs`` and backend; they stay in ``trials.csv``.

    ``diff`` = mean − paper; ``within`` is |diff| ≤ tolerance (the reference's own tolerance, else
    the metric's). ``paper``, ``diff``, ``tolerance`` and ``within`` are empty where the paper gives
    no number. Extra column ``paper_source`` holds the reference's provenance.
    """
    out: list[dict[str, Any]] = []
    if trials.empty:
        return pd.DataFrame(columns=[*SUMMARY_COLUMNS, "paper_source"])
    setting_cols = [c for c in trials.columns if c not in
                    {"result_id", "method", "setting", "repetition", "seconds", "cached", *spec.metric_names}]
    for (method, setting), group in trials.groupby(["method", "setting"], sort=False):
        params = {c: group[c].iloc[0] for c in setting_cols if c in group and pd.notna(group[c].iloc[0])}
        for metric in spec.metric_names:
            if metric not in group or spec.metric(metric).unit == TIMING_UNIT:
                continue
            values = group[metric].to_numpy(dtype=float)
            values = values[~np.isnan(values)]
            if values.size == 0:
                continue
            mean = float(values.mean())
            std = float(values.std(ddof=1)) if values.size > 1 else 0.0
            ref = _find_reference(spec, str(method), metric, params)
            row: dict[str, Any] = {"result_id": spec.id, "method": method, "setting": setting, "metric": metric,
                                   "n": int(values.size), "mean": mean, "std": std, "paper": None,
                                   "diff": None, "tolerance": None, "within": None, "paper_source": None}
            if ref is not None:
                tol = ref.tolerance if ref.tolerance is not None else spec.metric(metric).tolerance
                diff = mean - ref.value
                row.update(paper=ref.value, diff=diff, tolerance=tol, paper_source=ref.source,
                           within=None if tol is None else bool(abs(diff) <= tol + 1e-12))
            out.append(row)
    return pd.DataFrame(out, columns=[*SUMMARY_COLUMNS, "paper_source"])
