"""Progress of a multi-result run (``repro run all``): results done / left and an honest ETA.

The ETA starts from the experiment files' ``est_seconds`` (scaled by ``--seeds`` over the profile's
seeds) and is corrected as results finish: the declared seconds still to run are multiplied by
``measured / declared`` over the results computed so far (results served wholly from the trial cache
are left out of that ratio: they say nothing about compute speed). Inside a result, once some of its
trials have been computed, its remaining time is extrapolated from their rate instead. At the end
the ETAs shown (at the start, and once the first result had finished) are printed beside the real
wall time, so the estimates can be judged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

#: declared seconds assumed for a result whose profile declares no ``est_seconds``
DEFAULT_EST_SECONDS = 60.0


@dataclass
class ResultTiming:
    """One result of the run: its declared seconds, and (once finished) what it took."""

    id: str
    declared: float
    measured: float | None = None
    cached_only: bool = False


def declared_seconds(est_seconds: float | None, seeds: int | None, profile_seeds: int) -> float:
    """The experiment file's ``est_seconds`` for ``seeds`` repetitions (``None``: the profile's)."""
    base = DEFAULT_EST_SECONDS if est_seconds is None else float(est_seconds)
    if seeds is None or profile_seeds <= 0:
        return base
    return base * seeds / profile_seeds


@dataclass
class RunProgress:
    """ETA arithmetic of a run of several results, in run order (no clock inside: times are passed in)."""

    results: list[ResultTiming]
    #: (seconds since the run started, ETA shown then, results done then), one per result boundary
    predictions: list[tuple[float, float, int]] = field(default_factory=list)
    _current: int = field(default=0, repr=False)

    @property
    def n_done(self) -> int:
        return sum(r.measured is not None for r in self.results)

    @property
    def n_left(self) -> int:
        return len(self.results) - self.n_done

    def correction(self) -> float:
        """measured / declared seconds over the finished results that computed something (1 if none)."""
        timed = [r for r in self.results if r.measured is not None and not r.cached_only]
        declared = sum(r.declared for r in timed)
        if not timed or declared <= 0:
            return 1.0
        return sum(r.measured for r in timed) / declared  # type: ignore[misc]

    def eta(self, *, elapsed_current: float = 0.0, trials_done: int = 0, trials_cached: int = 0,
            trials_total: int = 0) -> float:
        """Seconds left: the current result (``elapsed_current`` seconds in, ``trials_done`` of
        ``trials_total`` trials done, ``trials_cached`` of them from the cache) plus the ones after it."""
        factor = self.correction()
        later = sum(r.declared for r in self.results[self._current + 1:] if r.measured is None) * factor
        if self._current >= len(self.results) or self.results[self._current].measured is not None:
            return later
        computed = trials_done - trials_cached
        if computed > 0 and trials_total > 0:
            current = elapsed_current * (trials_total - trials_done) / computed
        else:
            current = max(0.0, self.results[self._current].declared * factor - elapsed_current)
        return current + later

    def start(self, index: int, run_elapsed: float) -> float:
        """Result ``index`` (run order) starts ``run_elapsed`` seconds into the run: the ETA shown then."""
        self._current = index
        eta = self.eta()
        self.predictions.append((run_elapsed, eta, self.n_done))
        return eta

    def finish(self, index: int, seconds: float, *, cached_only: bool = False) -> None:
        """Result ``index`` took ``seconds`` (``cached_only``: every trial came from the cache)."""
        self.results[index].measured = float(seconds)
        self.results[index].cached_only = cached_only
        self._current = index + 1


def format_duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    s = int(round(max(0.0, seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def status_line(progress: RunProgress, eta: float) -> str:
    """``12/35 results done, 23 left, ETA 14 min 02 s (est_seconds x 1.30 as measured)``."""
    return (f"{progress.n_done}/{len(progress.results)} results done, {progress.n_left} left, "
            f"ETA {format_duration(eta)} (est_seconds x {progress.correction():.2f} as measured)")


def closing_line(progress: RunProgress, total_seconds: float) -> str:
    """The predicted total at the start and after the first result, against the real wall time."""
    def said(k: int) -> str:
        elapsed, eta, _ = progress.predictions[k]
        predicted = elapsed + eta
        off = (predicted - total_seconds) / total_seconds * 100 if total_seconds > 0 else 0.0
        return f"{format_duration(predicted)} ({off:+.0f}%)"

    parts = [f"{len(progress.results)} results in {format_duration(total_seconds)}"]
    if progress.predictions:
        parts.append(f"predicted at the start (the files' est_seconds): {said(0)}")
    after_first = [k for k, p in enumerate(progress.predictions) if p[2] >= 1]
    if after_first:
        parts.append(f"after the first result: {said(after_first[0])}")
    return "; ".join(parts)


class Clock:
    """Wall-clock seconds since construction (kept apart so the arithmetic above stays testable)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0
