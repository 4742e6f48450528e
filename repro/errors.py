"""Exception hierarchy of repro.

Every error a user can cause derives from :class:`ReproError`. The command line turns a
``ReproError`` into one line naming the cause and the fix, and a non-zero exit code; any other
exception is a bug and keeps its traceback. Messages follow one format: the rule, the value found,
and what to do about it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ChecksumMismatchError",
    "DataUnavailableError",
    "ExperimentFileError",
    "InvalidParameterError",
    "MissingExtraError",
    "NoResultsError",
    "ReproError",
    "TrialFailedError",
    "UnknownExperimentError",
    "UnknownNameError",
    "UnknownVariantError",
    "suggest",
]


class ReproError(Exception):
    """Base class of every error caused by input, data or environment (not by a bug)."""


class UnknownNameError(ReproError, KeyError):
    """A name (experiment, dataset, variant, method...) is not registered."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not want that.
        return str(self.args[0]) if self.args else ""


class UnknownExperimentError(UnknownNameError):
    """An experiment id is not registered."""


class UnknownVariantError(UnknownNameError):
    """A ``--variant`` is not declared by the experiment."""


class ExperimentFileError(ReproError):
    """An experiment file does not follow the schema; the message names the file and the key."""


class InvalidParameterError(ReproError, ValueError):
    """A parameter value breaks its rule (e.g. epsilon <= 0, delta outside (0, 1))."""


class DataUnavailableError(ReproError):
    """A data file is neither cached, nor in the mirror, nor downloadable."""


class ChecksumMismatchError(ReproError):
    """A file's sha256 differs from the registered one."""


class MissingExtraError(ReproError):
    """An optional dependency (an extra such as ``dask`` or ``ray``) is not installed."""


class NoResultsError(ReproError):
    """Saved results were asked for (plot, report) but none exist."""


class TrialFailedError(ReproError):
    """One or more trials raised; the completed ones are cached, the failed ones are not."""


def suggest(name: str, valid: Iterable[str], *, what: str, listed: int | None = None) -> str:
    """Message for an unknown ``name``: close matches if any, else the valid names.

    ``listed`` is how many entries the listing command shows (e.g. experiments without their
    aliases), so the "see all N" hint matches what the user will count.
    """
    valid = sorted(valid)
    folded = [v for v in valid if v.casefold() == name.casefold()]   # THESIS-TABLE-3.1: the same id, other case
    close = folded or difflib.get_close_matches(name, valid, n=3, cutoff=0.5)
    if close:
        hint = "did you mean " + " or ".join(repr(c) for c in close) + "?"
    elif len(valid) <= 12:
        hint = "valid: " + ", ".join(valid) if valid else f"no {what} is registered"
    else:
        hint = f"run `repro list` to see all {len(valid) if listed is None else listed}"
    return f"unknown {what} {name!r}; {hint}"
