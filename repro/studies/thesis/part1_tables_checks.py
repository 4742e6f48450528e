"""Checks of a thesis Part I run before any trial runs (:func:`repro.engine.runner.check_plan`, issue #35).

Not imported by :mod:`repro.studies.thesis.part1_tables`, so editing a check does not recompute its trials.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from repro.errors import InvalidParameterError

__all__ = ["MIN_SUBSAMPLE", "check_plan"]

#: the fewest rows ``subsample`` may keep: the 75/25 split, then 2/3–1/3 of the training part, each needs
#: both classes and both groups and a non-constant numeric column to standardise (0 keeps every row)
MIN_SUBSAMPLE = 500


def check_plan(params: Mapping[str, Any], cells: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Refuse ``only_method`` naming no method of the run's cells and a ``subsample`` too small to split."""
    only = str(params.get("only_method", ""))
    methods = list(dict.fromkeys(str(c.get("method", "")) for c in cells))
    if only and only not in methods:
        raise InvalidParameterError(f"--set only_method={only}: no cell of this run has that method; this run's "
                                    f"methods: {', '.join(methods)}")
    subsample = int(params.get("subsample", 0))
    if 0 < subsample < MIN_SUBSAMPLE:
        raise InvalidParameterError(f"--set subsample={subsample}: the splits need at least {MIN_SUBSAMPLE} rows "
                                    "(75/25, then 2/3-1/3 of the training part, each with both classes and groups); "
                                    f"give subsample >= {MIN_SUBSAMPLE}, or 0 for every row")
    return {}
