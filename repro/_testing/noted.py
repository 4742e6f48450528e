"""A study whose experiment notes print a derived number (tests/core/test_note_numbers.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from repro.engine.study import NoteNumbers, Study
from repro.engine.trial import TrialContext

#: the derived numbers of its notes
NOTE_NUMBERS = ("double", "formula")


def run_trial(params: dict[str, Any], ctx: TrialContext) -> dict[str, float]:
    return {"value": 2.0 * float(params["x"])}


def note_numbers(params: Mapping[str, Any]) -> dict[str, Any]:
    """``double`` = 2·x (what the trial computes) and a count it cannot give without data."""
    return {"double": 2.0 * float(params["x"]), "formula": "2 · rows (needs the data)"}


STUDY = Study(run_trial=run_trial, version="1", note_numbers=NoteNumbers(NOTE_NUMBERS, note_numbers))
