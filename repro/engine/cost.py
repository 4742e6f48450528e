"""What a run will cost, estimated and bounded before it starts.

The model, per experiment file:

* **Time.** A profile's ``est_seconds`` is the measured wall time of its default run at ``--jobs 2`` (what
  ``repro run all`` bases its ETA on), so one of its trials costs ``est_seconds × min(2, trials) / trials``
  core-seconds. The file's ``[cost] scale`` names the parameters a trial's work grows with and how
  (``{ epochs = 1, resolution = 2 }``: linear in epochs, quadratic in the image side); a trial whose values
  differ from the profile's own is scaled by ``(value / profile's value) ** power`` per key (a list counts its
  elements). The run's cost is the sum over its cells × seeds, computed per cell and multiplied by the seeds:
  the trials are never built to be counted.
* **Memory.** ``[cost] memory_mib`` is one trial's peak at the ``full`` profile, scaled by ``memory_scale``
  the same way; ``min(workers, trials)`` trials run at once.
* **Bookkeeping.** Planning a trial (its key, seed, context and cache lookup) takes about
  :data:`PLAN_TRIAL_SECONDS` and :data:`PLAN_TRIAL_BYTES` before the first trial runs.

A run whose estimate exceeds a bound (:data:`MAX_CORE_SECONDS` of one core, half of this machine's memory, or
:data:`MAX_PLAN_SECONDS` of planning) is refused in one line naming the key that drives the cost, unless
``--allow-large``. ``benchmarks/trial_costs.csv`` holds the measured full-profile trial seconds the
``est_seconds`` are checked against (``tests/core/test_cost.py``: within 3× for every result).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import ExperimentFileError, InvalidParameterError

__all__ = ["MAX_CORE_SECONDS", "MAX_PLAN_SECONDS", "Estimate", "check", "estimate", "format_duration",
           "profile_estimate"]

#: the default bound on a run's work: one day of one core
MAX_CORE_SECONDS = 24 * 3600.0
#: the longest the planner may work before the first trial starts (the plan is built in full before it runs)
MAX_PLAN_SECONDS = 30.0
#: planning one trial: its TrialKey, seed words, context and cache key, then the cache lookup (about 100 µs
#: measured on compat-impossibility, 30,000 trials, 2026-12-07), and the memory a planned trial holds
PLAN_TRIAL_SECONDS = 1.0e-4
PLAN_TRIAL_BYTES = 1024
#: the workers ``est_seconds`` were measured with (``repro run all --jobs 2``)
MEASURED_JOBS = 2
#: a trial's peak memory when the file declares none
DEFAULT_MEMORY_MIB = 256.0
#: a trial's seconds when its profile declares no ``est_seconds``
DEFAULT_TRIAL_SECONDS = 1.0
_COST_KEYS = {"scale": dict, "memory_mib": (int, float), "memory_scale": dict}


@dataclass(frozen=True)
class Estimate:
    """A run's estimated cost (see the module docstring)."""

    trials: int
    cells: int
    seeds: int
    core_seconds: float
    trial_mib: float
    workers: int
    plan_seconds: float
    #: what drives the time, the memory and the trial count, in words (``n_distributions=1e9, 10^6 x ...``)
    time_driver: str = ""
    memory_driver: str = ""

    @property
    def parallel(self) -> int:
        return max(1, min(self.workers, self.trials))

    @property
    def wall_seconds(self) -> float:
        return self.core_seconds / self.parallel

    @property
    def memory_mib(self) -> float:
        return self.trial_mib * self.parallel

    def line(self) -> str:
        """One line: work, wall time at the run's workers, memory."""
        return (f"estimated cost: {format_duration(self.core_seconds)} of one core for {self.trials:,} trials "
                f"(about {format_duration(self.wall_seconds)} with {self.parallel} worker"
                f"{'s' if self.parallel > 1 else ''}), {_mib(self.trial_mib)} a trial")


def format_duration(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``2.1 h``, ``3.4 days``, ``12 years``."""
    if not math.isfinite(seconds):
        return "forever"
    for unit, size in (("years", 365 * 86400.0), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size if unit in ("years", "days") else seconds >= size:
            return f"{seconds / size:,.3g} {unit}"
    return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"


def _mib(mib: float) -> str:
    return f"{mib / 1024:,.3g} GiB" if mib >= 1024 else f"{mib:,.3g} MiB"


@functools.lru_cache(maxsize=256)
def _declared(path: str, mtime: float) -> dict[str, Any]:
    from repro.engine.extends import merged_raw

    table = merged_raw(path).get("cost", {})
    if not isinstance(table, dict):
        raise ExperimentFileError(f"{path}: [cost] must be a table")
    for key, value in table.items():
        kind = _COST_KEYS.get(key)
        if kind is None or not isinstance(value, kind) or isinstance(value, bool):
            raise ExperimentFileError(f"{path}: key cost.{key}: expected one of {', '.join(_COST_KEYS)} "
                                      "(scale and memory_scale: tables of key = power; memory_mib: a number)")
    for name in ("scale", "memory_scale"):
        for key, power in table.get(name, {}).items():
            if isinstance(power, bool) or not isinstance(power, (int, float)) or not 0 <= power <= 4:
                raise ExperimentFileError(f"{path}: key cost.{name}.{key}: a power between 0 and 4; got {power!r}")
    return table


def declared(spec: Any) -> dict[str, Any]:
    """The file's ``[cost]`` table (merged through ``extends``), or ``{}``."""
    if spec.path is None:
        return {}
    path = Path(spec.path)
    return _declared(str(path), path.stat().st_mtime if path.exists() else 0.0)


def _size(value: Any) -> float | None:
    """What a parameter counts: a number, or a list's length; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return float(len(value))
    return None


def _reference(spec: Any, profile: str, key: str) -> float | None:
    """``key``'s value in ``profile``'s own run (a grid key: its largest value)."""
    fixed = spec.fixed_params(profile)
    if key in fixed:
        return _size(fixed[key])
    sizes = [s for c in spec.expand_cells(profile) if key in c and (s := _size(c[key])) is not None]
    return max(sizes) if sizes else None


def _factor(params: Mapping[str, Any], scale: Mapping[str, float], refs: Mapping[str, float | None]
            ) -> tuple[float, str, float]:
    """The trial's cost relative to the reference, and its largest single factor (key=value, factor)."""
    total, top, top_factor = 1.0, "", 1.0
    for key, power in scale.items():
        ref, value = refs.get(key), _size(params.get(key))
        if not ref or not value or ref <= 0 or value <= 0:   # 0: "all rows" and the like; absent: no effect
            continue
        factor = (value / ref) ** power
        total *= factor
        if factor > top_factor:
            top, top_factor = f"{key}={_shown(params[key])}", factor
    return total, top, top_factor


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return f"[{len(value)} values]"
    if isinstance(value, float) and (abs(value) >= 1e6 or 0 < abs(value) < 1e-3):
        return f"{value:.3g}"
    return str(value)


def _anchor_seconds(spec: Any, profile: str, scale: Mapping[str, float], refs: Mapping[str, float | None]) -> float:
    """Core-seconds of one unit of work (a trial whose factor is 1), from ``profile``'s ``est_seconds``: its
    default run's core-seconds over its default run's summed factors (the file's own cells, without ``--with``
    cells or overrides)."""
    prof = spec.profile(profile)
    if spec.path is not None:
        cells, seeds, work = _default_work(str(spec.path), profile)
    else:
        cells, seeds, work = _work(spec, profile, scale, refs)
    if prof.est_seconds is None:
        return DEFAULT_TRIAL_SECONDS * cells / max(work, 1e-300)
    trials = max(1, cells * seeds)
    return float(prof.est_seconds) * min(MEASURED_JOBS, trials) / (max(work, 1e-300) * seeds)


def _work(spec: Any, profile: str, scale: Mapping[str, float], refs: Mapping[str, float | None]
          ) -> tuple[int, int, float]:
    fixed = spec.fixed_params(profile)
    cells = spec.expand_cells(profile)
    return len(cells), spec.profile(profile).seeds, sum(_factor({**fixed, **c}, scale, refs)[0] for c in cells)


@functools.lru_cache(maxsize=256)
def _default_work(path: str, profile: str) -> tuple[int, int, float]:
    from repro.engine.spec import load_experiment

    spec = load_experiment(path)
    scale = {k: float(v) for k, v in declared(spec).get("scale", {}).items()}
    return _work(spec, profile, scale, {k: _reference(spec, profile, k) for k in scale})


def estimate(spec: Any, config: Any, *, cells: Sequence[Mapping[str, Any]] | None = None,
             fixed: Mapping[str, Any] | None = None) -> Estimate:
    """The cost of running ``spec`` under ``config`` (a :class:`repro.engine.runner.RunConfig` whose overrides are
    typed); ``cells`` and ``fixed`` (the fixed parameters) when the caller worked them out already."""
    from repro.engine.backends import worker_count

    profile = config.profile
    overrides = config.overrides or {}
    fixed = spec.fixed_params(profile, overrides) if fixed is None else fixed
    cells = spec.expand_cells(profile, overrides) if cells is None else cells
    n_seeds = config.seeds or spec.profile(profile).seeds
    table = declared(spec)
    scale = {k: float(v) for k, v in table.get("scale", {}).items()}
    memory_scale = {k: float(v) for k, v in table.get("memory_scale", {}).items()}
    refs = {k: _reference(spec, profile, k) for k in scale}
    memory_refs = {k: _reference(spec, "full", k) for k in memory_scale}
    anchor = _anchor_seconds(spec, profile, scale, refs)
    memory = float(table.get("memory_mib", DEFAULT_MEMORY_MIB))
    work, peak = 0.0, memory
    top, top_factor, mem_top, mem_factor = "", 1.0, "", 1.0
    for cell in cells:
        params = {**fixed, **cell}
        factor, key, single = _factor(params, scale, refs)
        work += factor
        if single > top_factor:
            top, top_factor = key, single
        mfactor, mkey, msingle = _factor(params, memory_scale, memory_refs)
        peak = max(peak, memory * mfactor)
        if msingle > mem_factor:
            mem_top, mem_factor = mkey, msingle
    trials = len(cells) * n_seeds
    time_driver = _driver(spec, profile, config, len(cells), n_seeds, top, top_factor)
    memory_driver = f"{mem_top} ({_times(mem_factor)} the full profile's)" if mem_top else "the study's declared peak"
    return Estimate(trials=trials, cells=len(cells), seeds=n_seeds, core_seconds=work * n_seeds * anchor,
                    trial_mib=peak, workers=worker_count(config.jobs), plan_seconds=trials * PLAN_TRIAL_SECONDS,
                    time_driver=time_driver, memory_driver=memory_driver)


def _times(factor: float) -> str:
    return f"{factor:,.3g}x" if factor < 1e6 else f"{factor:.1e}x"


def _driver(spec: Any, profile: str, config: Any, n_cells: int, n_seeds: int, top: str, top_factor: float) -> str:
    """The biggest of: a parameter's factor, the seeds against the profile's, the cells against the profile's."""
    prof_seeds = spec.profile(profile).seeds
    default_cells = len(spec.expand_cells(profile))
    candidates = [(top_factor, f"{top} ({_times(top_factor)} the {profile} profile's work per trial)")] if top else []
    candidates.append((n_seeds / max(1, prof_seeds), f"--seeds {n_seeds:,} ({n_seeds * n_cells:,} trials)"))
    if config.overrides:
        key = max(config.overrides, key=lambda k: len(config.overrides[k]))
        candidates.append((n_cells / max(1, default_cells),
                           f"--set {key} ({len(config.overrides[key]):,} values: {n_cells:,} cells)"))
    factor, words = max(candidates, key=lambda c: c[0])
    return words if factor > 1 else f"the {profile} profile itself"


def machine_memory_mib() -> float | None:
    """This machine's physical memory (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    except (ValueError, OSError, AttributeError):
        return None


def check(spec: Any, config: Any, *, cells: Sequence[Mapping[str, Any]] | None = None,
          fixed: Mapping[str, Any] | None = None) -> Estimate:
    """:func:`estimate`, refused in one line when it exceeds a bound (unless ``config.allow_large``).

    Raises
    ------
    InvalidParameterError
        Naming the estimate, the bound, the key that drives it and ``--allow-large``.
    """
    est = estimate(spec, config, cells=cells, fixed=fixed)
    if config.allow_large:
        return est
    lift = "or pass --allow-large to run it anyway"
    # a profile's own run is what its file declares it costs (DP-FERMI Figure 5's full profile is ~30 h of one
    # core): the bound refuses what --set, --seeds or --with add beyond that, never the declared run itself
    own = profile_estimate(spec, config.profile).core_seconds if config.profile in spec.profiles else 0.0
    if est.core_seconds > max(MAX_CORE_SECONDS, own * (1 + 1e-9)):
        raise InvalidParameterError(
            f"{spec.id}: the run is estimated at {format_duration(est.core_seconds)} of one core "
            f"({est.trials:,} trials), above the bound of {format_duration(MAX_CORE_SECONDS)}; driven by "
            f"{est.time_driver}; lower it, {lift}")
    total = machine_memory_mib()
    if total is not None and est.memory_mib > total / 2:
        raise InvalidParameterError(
            f"{spec.id}: the run is estimated to need {_mib(est.memory_mib)} of memory ({_mib(est.trial_mib)} a "
            f"trial x {est.parallel} at once), above half of this machine's {_mib(total)}; driven by "
            f"{est.memory_driver}; lower it or use fewer --jobs, {lift}")
    if est.plan_seconds > MAX_PLAN_SECONDS:
        raise InvalidParameterError(
            f"{spec.id}: planning {est.trials:,} trials takes about {format_duration(est.plan_seconds)} and "
            f"{_mib(est.trials * PLAN_TRIAL_BYTES / 2**20)} before the first trial starts (bound: "
            f"{MAX_PLAN_SECONDS:.0f} s); driven by {est.time_driver if 'seeds' in est.time_driver or '--set' in est.time_driver else f'--seeds {est.seeds:,}'}; "
            f"give fewer --seeds or --set values, {lift}")
    return est


def profile_estimate(spec: Any, profile: str) -> Estimate:
    """The estimate of ``profile``'s own run (``repro show``), at the measured workers."""
    return estimate(spec, _Run(profile=profile))


@dataclass(frozen=True)
class _Run:
    """The part of a ``RunConfig`` an estimate reads: a profile's own run at the measured workers."""

    profile: str
    seeds: int | None = None
    jobs: int = MEASURED_JOBS
    overrides: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    allow_large: bool = False
