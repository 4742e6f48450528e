"""Expand an experiment into trials, run them in parallel with caching, and aggregate.

A trial is one (cell, repetition) of an experiment's grid under one profile and variant; its
result depends only on its params and its seed, which is derived from names (never from order),
so results are bit-identical with 1 or N workers. Completed trials are cached as soon as they
arrive; failures are reported and never cached; a killed run resumes from the cache.

The runner reads a study only through its declared :class:`repro.engine.study.Study` (``study_of`` when
planning, :func:`repro.engine.study.load_study` in a worker). Batched trials (issue #23): a study may
declare ``batch=Batching(key=..., run=...)``; pending trials whose key is equal (and not ``None``)
are handed to one ``run`` call in the plan's order (:func:`group_tasks`).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import math
import os
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repro.engine import cost
from repro.engine.backends import (
    BACKENDS,
    TrialTimeoutError,
    WorkerLostError,
    run_tasks,
    sigint_seen,
    single_threaded,
    time_limit,
    watch_sigint,
)
from repro.engine.cache import TrialCache, code_version
from repro.engine.domains import check_rules
from repro.engine.identity import TrialKey, canonical_json
from repro.engine.references import FULL, RunFacts, find_reference, mismatch
from repro.engine.spec import ExperimentSpec, format_setting, study_of, validate_param
from repro.engine.study import load_study
from repro.engine.trial import TrialContext, TrialOutput
from repro.engine.warnings_capture import capture as capture_warnings
from repro.engine.warnings_capture import summary_lines
from repro.errors import InvalidParameterError, ReproError, TrialFailedError

__all__ = ["BACKENDS", "MAX_TRIALS", "Plan", "RunConfig", "RunOutcome", "TrialTask", "build_plan", "check_plan",
           "drop_inert_overrides", "plan_estimate", "plan_size", "plan_trials", "run_experiment", "run_facts",
           "summarize", "SUMMARY_COLUMNS", "typed_config"]

log = logging.getLogger(__name__)

SUMMARY_COLUMNS = ["result_id", "method", "setting", "metric", "n", "mean", "std", "paper", "diff",
                   "tolerance", "within", "comparable"]
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
    #: seconds a trial may run before it is stopped and reported as failed (None: no limit)
    timeout: float | None = None
    #: run a plan whose estimated cost exceeds the bounds of :mod:`repro.engine.cost`
    allow_large: bool = False

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InvalidParameterError(f"backend must be one of {', '.join(BACKENDS)}; got {self.backend!r}")
        if self.seeds is not None and self.seeds < 1:
            raise InvalidParameterError(f"--seeds must be >= 1; got {self.seeds}")
        if self.jobs == 0 or self.jobs < -1:
            raise InvalidParameterError(f"--jobs must be >= 1 (or -1 for all cores); got {self.jobs}")
        if self.timeout is not None and not (math.isfinite(self.timeout) and self.timeout > 0):
            raise InvalidParameterError(f"--timeout must be a positive number of seconds; got {self.timeout}")
        if self.timeout is not None and self.backend != "loky":
            raise InvalidParameterError(f"--timeout needs --backend loky (the trials of {self.backend} run in "
                                        "worker threads, which cannot be stopped); leave --timeout out")
        for key, values in self.overrides.items():  # privacy names checked by name, before any spec is read
            validate_param(key, [_number_or_text(v) for v in values], where="--set")

    @property
    def cache_root(self) -> Path:
        return Path(self.out) / ".cache"


def _number_or_text(value: Any) -> Any:
    """A ``--set`` text as a float when it reads as one (for the by-name privacy checks only; the
    experiment file types every value, :meth:`ExperimentSpec.coerce_overrides`)."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value  # inf/nan: the typing names it
    return value


@dataclass(frozen=True)
class TrialTask:
    """One trial to run: its params, identity (for the seed) and cache key."""

    index: int
    module: str
    params: dict[str, Any]
    cell: dict[str, Any]
    context: TrialContext
    key: str
    #: seconds the trial may run (``--timeout``; None: no limit)
    timeout: float | None = None


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
    #: summed seconds of the trials (each trial once, however many rows it returned; cached ones
    #: count the seconds they took when computed)
    trial_seconds: float = 0.0


#: the most trials one run may plan: a planned trial holds its params, key and context (about 1 kB, 75 µs to
#: build: benchmarked on compat-impossibility), and a finished one its records; beyond it the run is refused
#: before anything is built (issue #35)
MAX_TRIALS = 1_000_000
#: memory one planned trial takes, for the refusal's estimate
TRIAL_BYTES = 1024


def typed_config(spec: ExperimentSpec, config: RunConfig) -> RunConfig:
    """``config`` with its ``--set`` values typed for ``spec`` (:meth:`ExperimentSpec.coerce_overrides`), after a
    key the experiment does not have is refused (its values have no type to check). Typed values pass through."""
    settable = spec.settable_keys(config.profile)
    for key in config.overrides:
        if key not in settable:
            raise InvalidParameterError(
                f"--set {key}: {spec.id!r} has no parameter {key!r}; settable: {', '.join(sorted(settable))}"
            )
    return replace(config, overrides=spec.coerce_overrides(config.overrides))


def plan_size(spec: ExperimentSpec, config: RunConfig) -> tuple[int, int, int]:
    """(trials, cells, seeds) of the run, counted before anything is built (:func:`plan_estimate`).

    Raises
    ------
    InvalidParameterError
        For a ``--set`` key the experiment does not have, when the count exceeds :data:`MAX_TRIALS`, or the
        estimated cost a bound of :mod:`repro.engine.cost` (unless ``config.allow_large``): one line naming the
        key that drives it.
    """
    est = plan_estimate(spec, config)
    return est.trials, est.cells, est.seeds


def plan_estimate(spec: ExperimentSpec, config: RunConfig) -> cost.Estimate:
    """The run's counts and estimated cost (:mod:`repro.engine.cost`), checked against the bounds and the
    file's ``[domains]`` rules; nothing is planned: the cells are expanded once and the seeds multiply them."""
    overrides = typed_config(spec, config).overrides   # unknown keys refused first; typed once
    cells = spec.expand_cells(config.profile, overrides)
    n_cells = len(cells)
    n_seeds = config.seeds or spec.profile(config.profile).seeds
    total = n_cells * n_seeds
    if total > MAX_TRIALS:
        raise InvalidParameterError(
            f"{spec.id}: the plan has {total:,} trials ({n_cells:,} cells x {n_seeds:,} seeds, about "
            f"{total * TRIAL_BYTES / 2**30:,.0f} GiB to plan), above the limit of {MAX_TRIALS:,} trials per run; "
            f"give fewer --seeds (at most "
            f"{max(1, MAX_TRIALS // n_cells):,} here) or fewer --set values")
    fixed = spec.fixed_params(config.profile, overrides)
    check_rules(spec, fixed, cells, given=list(overrides))
    return cost.check(spec, replace(config, overrides=overrides), cells=cells, fixed=fixed)


def check_plan(spec: ExperimentSpec, config: RunConfig) -> dict[str, str]:
    """The study's own check of the run's parameters, before any trial runs (issue #35).

    A study may have a companion module ``<study>_checks`` (beside it, like its ``_report``; never imported by
    the study, so it is not part of the trial code's hash) defining ``check_plan(params, cells)``: ``params``
    are the run's fixed parameters and its ``variant``, ``cells`` its grid cells. It raises
    :class:`InvalidParameterError` for values the study cannot run (one line naming the key) and returns the
    keys that have no effect under this profile, variant or environment, with the reason."""
    name = f"{spec.trial}_checks"
    try:
        found = importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        return {}
    hook = importlib.import_module(name).check_plan
    overrides = spec.coerce_overrides(config.overrides)
    params = {**spec.fixed_params(config.profile, overrides), "variant": spec.check_variant(config.variant)}
    return dict(hook(params, spec.expand_cells(config.profile, overrides)) or {})


def drop_inert_overrides(spec: ExperimentSpec, config: RunConfig) -> RunConfig:
    """``config`` without the ``--set`` keys that have no effect (:func:`check_plan`), each named in a warning, so
    they make no results folder of their own; its overrides typed (:meth:`ExperimentSpec.coerce_overrides`)."""
    config = replace(config, overrides=spec.coerce_overrides(config.overrides))
    inert = {k: why for k, why in check_plan(spec, config).items() if k in config.overrides}
    for key, why in inert.items():
        log.warning("--set %s has no effect on %s (%s); ignored: the results go to the folder of the run "
                    "without it", key, spec.id, why)
    if not inert:
        return config
    return replace(config, overrides=config.overrides.without(inert))   # type: ignore[attr-defined]


@dataclass(frozen=True)
class Plan:
    """A run planned once per command (:func:`build_plan`) and passed down: its config (``--set`` values typed,
    the keys without effect dropped), size and tasks."""

    spec: ExperimentSpec
    config: RunConfig
    variant: str
    n_cells: int
    n_seeds: int
    tasks: list[TrialTask]

    @property
    def total(self) -> int:
        return len(self.tasks)


def build_plan(spec: ExperimentSpec, config: RunConfig, *, size: tuple[int, int, int] | None = None) -> Plan:
    """Validate and plan a run of ``spec`` under ``config``: unknown keys, typed values and the trial count
    (:func:`plan_size`; ``size``: its result, when the caller counted first), the study's check
    (:func:`drop_inert_overrides`), then the tasks. Each step runs once; ``repro run`` builds the plan while it
    validates every result, then runs it."""
    variant = spec.check_variant(config.variant)
    config = typed_config(spec, config)   # unknown keys, typed values (once: they pass through after)
    if size is None:
        size = plan_size(spec, config)   # the trial count
    _, n_cells, n_seeds = size
    config = drop_inert_overrides(spec, config)
    return Plan(spec, config, variant, n_cells, n_seeds, _tasks(spec, config, variant))


def plan_trials(spec: ExperimentSpec, config: RunConfig) -> list[TrialTask]:
    """Expand grid × seeds into tasks (deterministic order: cells, then repetitions): :func:`build_plan`'s tasks.

    Each task's :class:`TrialKey` is the single source of its seed, its cache key and its summary group.
    """
    return build_plan(spec, config).tasks


def _tasks(spec: ExperimentSpec, config: RunConfig, variant: str) -> list[TrialTask]:
    """The tasks of a checked ``config`` (typed overrides)."""
    overrides = spec.coerce_overrides(config.overrides)
    fixed = spec.fixed_params(config.profile, overrides)
    cells = spec.expand_cells(config.profile, overrides)
    n_seeds = config.seeds or spec.profile(config.profile).seeds
    base_seed = spec.base_seed if config.base_seed is None else config.base_seed
    study = study_of(spec)
    code = code_version(spec.trial, study.version)
    shared_methods = set(study.variant_independent)
    cache_dir = str(config.cache_root) if config.use_cache else None
    tasks = []
    for cell in cells:
        params = {**fixed, **cell, "variant": variant}
        method = str(cell.get("method", ""))
        # a method the study declares variant-independent has one cache entry for all variants
        key_variant = None if method in shared_methods else variant
        for rep in range(n_seeds):
            tkey = TrialKey.of(spec.id, {**fixed, **cell}, repetition=rep, base_seed=base_seed,
                               variant=key_variant, grid_keys=tuple(cell), scopes=spec.scopes)
            ctx = TrialContext(tkey, cache_dir=cache_dir, refresh=config.force)
            tasks.append(TrialTask(len(tasks), spec.trial, params, cell, ctx, tkey.cache_key(code), config.timeout))
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
            study = load_study(task.module)
            with single_threaded(), time_limit(task.timeout):  # same BLAS summation order everywhere
                out = TrialOutput.coerce(study.run_trial(dict(task.params), task.context))
            ok, value = True, out
        except ReproError as exc:
            ok, value = False, (traceback.format_exc(), exc)
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - the trial's failure, reported
            _reraise_ctrl_c(exc)
            ok, value = False, (_failure_text(exc), None)
    return task.index, ok, value, time.perf_counter() - start, dict(caught)


def _reraise_ctrl_c(exc: BaseException) -> None:
    """A real Ctrl-C stops the run (:func:`repro.engine.backends.sigint_seen`); a ``KeyboardInterrupt`` the trial's
    own code raised, a ``sys.exit`` in it or a timeout is that trial's failure."""
    if isinstance(exc, KeyboardInterrupt) and sigint_seen():
        raise exc


def _failure_text(exc: BaseException) -> str:
    """The traceback of a failed trial, ending in one line that says what happened (its last line is the one
    shown in the run's error)."""
    tb = traceback.format_exc()
    if isinstance(exc, SystemExit):
        return f"{tb}the trial's code called sys.exit({exc.code!r}) (a trial must raise, not exit)"
    if isinstance(exc, KeyboardInterrupt):
        return f"{tb}the trial's code raised KeyboardInterrupt (no Ctrl-C was pressed)"
    if isinstance(exc, TrialTimeoutError):
        return f"{tb}{exc}"
    return tb


ExecResult = tuple[int, bool, Any, float, dict[str, int]]


def dispatch_order(pending: list[TrialTask]) -> list[TrialTask]:
    """The order trials are handed to the workers: the first pending trial of every cell, then the rest,
    each part in the plan's order.

    A cell's first trial may compute a value that all its repetitions share (``ctx.shared_value``: the
    DP-FERMI tuning search, 20–60 s); the cell's other trials wait on its lock. In the plan's order the
    second worker took the same cell's next repetition and waited out the search; now the workers search
    different cells at once. Which worker runs a trial never changes its bytes (its generator comes from
    its key), and the results keep the plan's order."""
    seen: set[tuple[str, str]] = set()
    first: list[TrialTask] = []
    rest: list[TrialTask] = []
    for task in pending:
        cell = (task.module, task.context.key.params_json)  # the trial's identity less its repetition
        (rest if cell in seen else first).append(task)
        seen.add(cell)
    return first + rest


def group_tasks(pending: list[TrialTask]) -> list[list[TrialTask]]:
    """Pending trials in batches: those of a study declaring ``batch`` whose ``batch.key`` is equal and not
    ``None`` share one batch; every other trial is a batch of one. Batches keep the plan's order (of
    their first trial, and within). Each trial still draws from its own ``ctx.rng()``, is cached and
    written on its own, and must come out with the bytes of its one-at-a-time ``run_trial``; a batch
    shares one worker, so a key should group a few trials, not the whole experiment."""
    groups: dict[Any, list[TrialTask]] = {}
    order: list[list[TrialTask]] = []
    for task in pending:
        batch = load_study(task.module).batch
        key = batch.key(dict(task.params), task.context) if batch is not None else None
        if key is None:
            order.append([task])
            continue
        group = groups.get((task.module, key))
        if group is None:
            group = groups[(task.module, key)] = []
            order.append(group)
        group.append(task)
    return order


def _execute_batch(batch: list[TrialTask]) -> list[ExecResult]:
    """Run a batch of trials (see :func:`group_tasks`); never raises.

    One trial runs as :func:`_execute`. Several go to the study's ``batch.run`` in one call under the
    same thread pinning; each gets the batch's seconds divided by its size, and a failure fails every
    trial of the batch (none is cached). The batch's warnings are counted once, on its first trial.
    """
    if len(batch) == 1:
        return [_execute(batch[0])]
    start = time.perf_counter()
    with capture_warnings() as caught:
        try:
            hook = load_study(batch[0].module).batch
            assert hook is not None  # group_tasks batches only the trials of a study that declares one
            limit = batch[0].timeout * len(batch) if batch[0].timeout else None
            with single_threaded(), time_limit(limit):
                outs = list(hook.run([dict(t.params) for t in batch], [t.context for t in batch]))
            if len(outs) != len(batch):
                raise TrialFailedError(f"study {batch[0].module!r}: its batch.run returned {len(outs)} outputs "
                                       f"for {len(batch)} trials")
            values = [(True, TrialOutput.coerce(o)) for o in outs]
        except ReproError as exc:
            values = [(False, (traceback.format_exc(), exc))] * len(batch)
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - reported with its traceback
            _reraise_ctrl_c(exc)
            values = [(False, (_failure_text(exc), None))] * len(batch)
    seconds = (time.perf_counter() - start) / len(batch)
    counts = dict(caught)
    return [(task.index, ok, value, seconds, counts if i == 0 else {})
            for i, (task, (ok, value)) in enumerate(zip(batch, values, strict=True))]


def _run_pending(pending: list[TrialTask], config: RunConfig) -> Iterator[ExecResult]:
    batches = group_tasks(dispatch_order(pending))
    for results in run_tasks(_execute_batch, batches, backend=config.backend, jobs=config.jobs):
        yield from results


def _valid_entry(value: Any) -> bool:
    """Structure of a trial-cache entry: ``{"output": TrialOutput, "seconds": float}``."""
    return (isinstance(value, dict) and isinstance(value.get("output"), TrialOutput)
            and isinstance(value.get("seconds"), (int, float)))


def _keep_compiled_programs(config: RunConfig) -> None:
    """Let every process of this run keep and share JAX's compiled programs in DIR/.cache/xla
    (``$REPRO_XLA_CACHE``, read by :mod:`repro.learners._jax` when a process first imports JAX; workers
    inherit it), or keep none under ``--no-cache``. A value the user set wins; so does the first run's in
    a process that already imported JAX."""
    os.environ.setdefault("REPRO_XLA_CACHE", str((config.cache_root / "xla").absolute()) if config.use_cache else "off")


def run_experiment(spec: ExperimentSpec, config: RunConfig, *, plan: Plan | None = None,
                   progress: ProgressFn | None = None) -> RunOutcome:
    """Run (or load from cache) every trial of ``spec`` under ``config`` and aggregate them; ``plan``: the run's
    :func:`build_plan`, when the caller built it already (it is built here otherwise).

    Raises
    ------
    TrialFailedError
        If any trial raised. Completed trials stay cached, so a rerun only redoes the failures.
    """
    start = time.perf_counter()
    _keep_compiled_programs(config)
    plan = plan if plan is not None else build_plan(spec, config)   # typed once: every spelling names the same trials
    config, tasks, variant = plan.config, plan.tasks, plan.variant
    outputs = declared_outputs(spec)
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
    try:
        with watch_sigint():
            for index, ok, value, seconds, caught in _run_pending(pending, config):
                task = by_index[index]
                warning_counts.update(caught)
                warning_trials.update(caught.keys())
                for kind in caught:
                    warning_where.setdefault(kind, _where(task, config))
                if ok:
                    results[index] = (value, seconds, False)
                    if config.use_cache:
                        cache.put(task.key, {"output": value, "seconds": seconds})
                else:
                    failures.append((task, value))
                    log.debug("trial %s rep %d failed:\n%s", _where(task, config), task.context.repetition, value[0])
                if progress:
                    progress(len(results) + len(failures), total)
    except WorkerLostError as exc:
        raise _lost(spec, config, exc, len(results) - n_cached) from None
    for line in summary_lines(warning_counts, warning_trials, spec.id, warning_where):
        log.warning(line)
    if failures:
        failures.sort(key=lambda failure: failure[0].index)   # the first in the plan, whatever finished first
        user_errors = [err for _, (_, err) in failures if err is not None]
        if len(user_errors) == len(failures):
            # Every failure is a user error (e.g. missing data): report the first one as it is.
            user_errors[0].tracebacks = [tb for _, (tb, _) in failures]  # type: ignore[attr-defined]
            raise user_errors[0]
        first_task, (tb, _) = failures[0]
        last_line = tb.strip().splitlines()[-1]
        err = TrialFailedError(
            f"{len(failures)} of {total} trials of {spec.id!r} failed (first: {_where(first_task, config)}, repetition "
            f"{first_task.context.repetition}: {last_line}); "
            "completed trials are cached, so fix the cause and rerun (--debug shows the traceback)"
        )
        err.tracebacks = [tb for _, (tb, _) in failures]  # type: ignore[attr-defined]
        raise err
    trials, tables, groups = _collect(spec, tasks, results, outputs)
    if trials.empty:
        raise TrialFailedError(f"the {total} trials of {spec.id!r} returned no record; check the --set values "
                               f"(`repro show {spec.id}` lists them)")
    summary = summarize(spec, trials, groups, outputs, run=run_facts(spec, config))
    n_seeds = config.seeds or spec.profile(config.profile).seeds
    outcome = RunOutcome(spec, config, variant, n_seeds, trials, tables, summary,
                         time.perf_counter() - start, total, n_cached, dict(warning_counts))
    outcome.trial_seconds = float(sum(results[t.index][1] for t in tasks))
    return outcome


def _where(task: TrialTask, config: RunConfig | None = None) -> str:
    """The trial's method (when the cell has one) and setting, for one-line messages. A trial of a result with
    no grid has an empty setting: it is named by the ``--set`` values it runs with, else as the profile's own."""
    method = str(task.cell.get("method", ""))
    setting = task.context.setting
    if not setting:
        given = {k: task.params[k] for k in (config.overrides if config else {}) if k in task.params}
        setting = format_setting(given) if given else ""
    shown = f"setting '{setting}'" if setting else f"the profile's parameters ({config.profile if config else 'smoke'})"
    return (f"method {method!r}, " if method else "") + shown


def _lost(spec: ExperimentSpec, config: RunConfig, exc: WorkerLostError, n_done: int) -> ReproError:
    """One line for a worker that died: how, which trials it held, what was kept, what to do."""
    held = [t for batch in exc.items for t in (batch if isinstance(batch, list) else [batch])
            if isinstance(t, TrialTask)]
    first = f"{_where(held[0], config)}, repetition {held[0].context.repetition}" if held else ""
    which = "" if not held else f" while it ran {first}" if len(held) == 1 else \
        f" while it ran a batch of {len(held)} trials (the first: {first})"
    kept = (f"the {n_done} trial(s) completed in this run are cached, so a rerun resumes"
            if config.use_cache else "nothing was cached (--no-cache)")
    return TrialFailedError(f"{spec.id}: a worker process was lost ({exc}){which}; {kept}; if memory ran out, "
                            "rerun with fewer --jobs (--debug shows the details)")


@dataclass(frozen=True)
class DeclaredOutputs:
    """What a study's records may hold besides the experiment's metrics (issue #20, item 3).

    ``index``: keys that extend a row's identity (e.g. ``lambda`` when one trial sweeps a grid
    internally, a fold): they become typed columns that group the summary, like the grid keys.
    ``values``: non-metric value columns (an ε label, a tuned hyperparameter, a computed σ): kept in
    ``trials.csv`` (and in ``summary.csv`` when constant over a group), never part of the identity.
    A study declares them as ``Study(index=(...), values=(...))``; a record may also repeat one of its
    own parameters (an index). Any other key is an error naming it.
    """

    index: tuple[str, ...] = ()
    values: tuple[str, ...] = ()


def declared_outputs(spec: ExperimentSpec) -> DeclaredOutputs:
    """The ``index`` and ``values`` of ``spec``'s study (checked against its metrics by
    :func:`repro.engine.spec.check_study`)."""
    study = study_of(spec)
    return DeclaredOutputs(study.index, study.values)


def _collect(spec: ExperimentSpec, tasks: list[TrialTask], results: Mapping[int, tuple[TrialOutput, float, bool]],
             outputs: DeclaredOutputs | None = None
             ) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], list[tuple[str, str]]]:
    """trials.csv rows (the plan's order), the extra tables and each row's summary group
    (:meth:`TrialKey.group`); raises on an undeclared output key."""
    outputs = outputs or declared_outputs(spec)
    metric_names = set(spec.metric_names)
    value_names = set(outputs.values)
    rows: list[dict[str, Any]] = []
    groups: list[tuple[str, str]] = []
    table_rows: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        output, seconds, cached = results[task.index]
        cell_method = str(task.cell.get("method", ""))
        index_names = (set(outputs.index) | set(task.params)) - value_names - metric_names
        for rec in output.records:
            rec = dict(rec)
            method = str(rec.pop("method", cell_method))
            unknown = sorted(set(rec) - metric_names - value_names - index_names)
            if unknown:
                raise TrialFailedError(
                    f"study {spec.trial!r} returned undeclared output(s) {unknown} in {spec.id!r}; declare each "
                    "as a metric of the experiment file, or in the study's index (identifies a row) or values "
                    "(a value column)"
                )
            metrics = {k: v for k, v in rec.items() if k in metric_names}
            if not metrics:
                raise TrialFailedError(
                    f"study {spec.trial!r} returned a record with no declared metric of {spec.id!r} "
                    f"(keys: {sorted(rec)}; declared: {sorted(metric_names)})"
                )
            index = {k: v for k, v in task.cell.items() if k != "method"}
            own = {k: v for k, v in rec.items() if k in index_names and k not in metric_names}
            index.update(own)
            groups.append(task.context.key.group(method, own))
            row = {"result_id": spec.id, "method": method, "setting": format_setting(index),
                   "repetition": task.context.repetition, **index}
            row.update({k: v for k, v in rec.items() if k in value_names})
            row.update({k: _to_float(v) for k, v in metrics.items()})
            row["seconds"] = seconds
            row["cached"] = cached
            rows.append(row)
        for name, trows in output.tables.items():
            lead = {"result_id": spec.id, "method": cell_method, "setting": task.context.setting,
                    "repetition": task.context.repetition,
                    **{k: v for k, v in task.cell.items() if k != "method"}}  # typed: select by column
            table_rows.setdefault(name, []).extend({**lead, **r} for r in trows)
    trials = pd.DataFrame(rows)
    tables = {name: pd.DataFrame(r) for name, r in table_rows.items()}
    return trials, tables, groups


def _to_float(v: Any) -> float:
    if v is None:
        return math.nan
    return float(v)


def run_facts(spec: ExperimentSpec, config: RunConfig | None = None) -> RunFacts:
    """What the reference conditions read of a run under ``config`` (None: the ``full`` profile as declared)."""
    if config is None:
        return RunFacts(FULL, spec.default_variant, spec.profile(FULL).seeds, spec.fixed_params(FULL))
    return RunFacts(config.profile, spec.check_variant(config.variant),
                    config.seeds or spec.profile(config.profile).seeds,
                    spec.fixed_params(config.profile, config.overrides))


def summarize(spec: ExperimentSpec, trials: pd.DataFrame, groups: Sequence[tuple[str, str]],
              outputs: DeclaredOutputs | None = None, *, run: RunFacts | None = None) -> pd.DataFrame:
    """One row per (method, index values, metric): n, mean, std (ddof=1; 0 when n=1) and the paper's value.

    Rows are grouped by ``groups``, each row's :meth:`TrialKey.group` (the method and the typed cell plus
    the record's index values: the grid keys and the study's ``index``), never by the ``setting``
    label, which is kept for reading. The index columns follow
    the leading :data:`SUMMARY_COLUMNS` and ``paper_source``; declared ``VALUES`` columns constant
    over a group come last (reports select rows by these columns).

    Timing metrics (unit ``"s"``) are left out: they differ from run to run, and the summary must
    be byte-identical for any ``--jobs`` and backend; they stay in ``trials.csv``.

    ``run`` is what the run was (:func:`run_facts`; None: the ``full`` profile as declared). A paper value is
    compared only where the run meets every condition of its reference (:func:`repro.engine.references.mismatch`):
    ``comparable`` is True there, ``diff`` = mean − paper and ``within`` is |diff| ≤ tolerance (the reference's
    own tolerance, else the metric's). Where it does not, ``comparable`` is False, ``paper`` is kept as context,
    ``diff``, ``tolerance`` and ``within`` are empty and ``condition`` names the first condition that differs
    (``dataset: credit-card ≠ adult``). All of them are empty where the paper gives no number. ``dataset`` is the
    row's dataset (its cell's, else the run's; empty for results without one); ``paper_source`` holds the
    reference's provenance.
    """
    outputs = outputs or declared_outputs(spec)
    run = run or run_facts(spec)
    lead = [*SUMMARY_COLUMNS, "paper_source", "condition"]
    if trials.empty:
        return pd.DataFrame(columns=lead)
    value_cols = [c for c in outputs.values if c in trials.columns]
    index_cols = [c for c in trials.columns if c not in
                  {"result_id", "method", "setting", "repetition", "seconds", "cached", *spec.metric_names,
                   *value_cols}]
    if "dataset" not in index_cols:   # the run's one dataset: the first index column (constant, so ordering keeps)
        index_cols.insert(0, "dataset")
    if len(groups) != len(trials):
        raise ValueError(f"summarize: {len(groups)} groups for {len(trials)} trial rows")
    labels = pd.Series([canonical_json(list(g)) for g in groups], index=trials.index)
    out: list[dict[str, Any]] = []
    for _, group in trials.groupby(labels, sort=False):
        method = group["method"].iloc[0]
        first = group.iloc[0]
        params = {c: first[c] for c in index_cols if c in group and _present(first[c])}
        dataset = params.get("dataset", run.fixed.get("dataset"))
        extra = {c: _plain(first[c]) if c in group and _present(first[c]) else None for c in index_cols}
        extra["dataset"] = _plain(dataset) if dataset is not None else None
        for c in value_cols:
            col = group[c]
            same = col.map(lambda v: canonical_json(_plain(v)) if _present(v) else "").nunique() == 1
            extra[c] = _plain(col.iloc[0]) if same and _present(col.iloc[0]) else None
        for metric in spec.metric_names:
            if metric not in group or spec.metric(metric).unit == TIMING_UNIT:
                continue
            values = group[metric].to_numpy(dtype=float)
            values = values[~np.isnan(values)]
            if values.size == 0:
                continue
            mean = float(values.mean())
            std = float(values.std(ddof=1)) if values.size > 1 else 0.0
            ref = find_reference(spec.references, str(method), metric, params)
            row: dict[str, Any] = {"result_id": spec.id, "method": method, "setting": first["setting"],
                                   "metric": metric, "n": int(values.size), "mean": mean, "std": std, "paper": None,
                                   "diff": None, "tolerance": None, "within": None, "comparable": None,
                                   "paper_source": None, "condition": None}
            differs = None if ref is None else mismatch(spec, ref, run, params)
            if ref is not None and differs is not None:   # the paper's value as context, never a verdict
                row.update(paper=ref.value, paper_source=ref.source, comparable=False, condition=differs)
            elif ref is not None:
                tol = ref.tolerance if ref.tolerance is not None else spec.metric(metric).tolerance
                diff = mean - ref.value
                row.update(paper=ref.value, diff=diff, tolerance=tol, paper_source=ref.source, comparable=True,
                           within=None if tol is None else bool(abs(diff) <= tol + 1e-12))
            row.update(extra)
            out.append(row)
    return pd.DataFrame(out, columns=[*lead, *index_cols, *value_cols])


def _present(v: Any) -> bool:
    """False for a missing cell (NaN/None) of a column another row fills."""
    return not (v is None or (isinstance(v, float) and math.isnan(v)))


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v
