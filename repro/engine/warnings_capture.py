"""Warnings raised inside trials: caught where they arise, summarized once per run.

Third-party libraries can warn once per call; ``dp_accounting``'s Rényi accountant, for example,
logs "failed to converge ... Excluding this order" through ``absl`` for every fractional order it
drops, hundreds of lines per run (issue #15, item 10). Inside every trial, in any process and
backend, :func:`capture` collects Python warnings (the active filters still apply: an ignored
warning stays ignored) and WARNING records of the loggers in :data:`CAPTURED_LOGGERS`; the runner
adds the counts up and logs one line per kind of message at the end of the run.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping

__all__ = ["CAPTURED_LOGGERS", "capture", "summary_lines", "template"]

#: loggers whose WARNING records are counted instead of printed while a trial runs
CAPTURED_LOGGERS = ("absl",)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def template(message: str) -> str:
    """``message`` with every number replaced by ``#`` (messages that differ only in values group)."""
    return _NUMBER.sub("#", " ".join(message.split()))


class _Counting(logging.Handler):
    def __init__(self, counts: Counter[str]) -> None:
        super().__init__(level=logging.WARNING)
        self.counts = counts

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            self.counts[f"{record.name}: {template(record.getMessage())}"] += 1


@contextlib.contextmanager
def capture() -> Iterator[Counter[str]]:
    """Count warnings and captured log records raised in the block, by ``source: template``."""
    counts: Counter[str] = Counter()
    handler = _Counting(counts)
    loggers = [logging.getLogger(name) for name in CAPTURED_LOGGERS]
    saved = [(lg.propagate, list(lg.handlers)) for lg in loggers]
    for lg in loggers:
        lg.handlers = [handler]
        lg.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield counts
    finally:
        for lg, (propagate, handlers) in zip(loggers, saved, strict=True):
            lg.handlers = handlers
            lg.propagate = propagate
    for w in caught:
        counts[f"{w.category.__name__}: {template(str(w.message))}"] += 1


def summary_lines(counts: Mapping[str, int], trials: Mapping[str, int], experiment_id: str,
                  where: Mapping[str, str] | None = None, *, limit: int = 5) -> list[str]:
    """One line per kind of warning: how many, from which source, in how many trials (first where)."""
    if not counts:
        return []
    total = sum(counts.values())
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    lines = [f"{total} warning(s) raised inside the trials of {experiment_id!r} were caught; "
             "by kind (numbers shown as #):"]
    for text, n in ordered[:limit]:
        first = f"; first in {where[text]}" if where and text in where else ""
        lines.append(f"  {n} x {text} (in {trials.get(text, 0)} trial(s){first})")
    if len(ordered) > limit:
        rest = sum(n for _, n in ordered[limit:])
        lines.append(f"  {rest} more of {len(ordered) - limit} other kind(s)")
    return lines
