"""Checks of a thesis Part I run before any trial runs (:func:`repro.engine.runner.check_plan`, issue #35).

Not imported by :mod:`repro.studies.thesis.part1_tables`, so editing a check does not recompute its trials.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from repro.errors import InvalidParameterError

__all__ = ["check_plan"]


def check_plan(params: Mapping[str, Any], cells: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Refuse ``only_method`` naming no method of the run's cells (its domain, the file's method names, may name
    a method another profile lists); ``subsample``'s floor is its domain (experiments/_base/thesis-part1.toml).
    ``thesis_sigma`` has no effect outside the ``thesis-sigma`` variant's Algorithm 2, ``strict_clip_norm`` without
    a ``DP-FERMI (strict)`` cell."""
    only = str(params.get("only_method", ""))
    methods = list(dict.fromkeys(str(c.get("method", "")) for c in cells))
    if only and only not in methods:
        raise InvalidParameterError(f"--set only_method={only}: no cell of this run has that method; this run's "
                                    f"methods: {', '.join(methods)}")
    run = [only] if only else methods
    inert = {}
    if params.get("variant") != "thesis-sigma" or "Algorithm 2" not in run:
        inert["thesis_sigma"] = "only the thesis-sigma variant's Algorithm 2 reads it"
    if "DP-FERMI (strict)" not in run:
        inert["strict_clip_norm"] = "only DP-FERMI (strict) reads it, and this run has no such cell"
    return inert
