"""The ``{placeholders}`` of an experiment's notes: a param's value or a number its study computes.

A note never types a derived number by hand: ``{epochs}`` is the file's parameter, ``{sigma:.3f}`` a number the
study computes by its own code (:class:`repro.engine.study.NoteNumbers`); the loader checks every name
(:func:`_check_placeholders`), and :meth:`repro.engine.cells.ExperimentSpec.rendered_notes` fills them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from repro.engine.schema import _err

__all__ = ["placeholder_names", "render_notes"]


#: a ``{name}`` or ``{name:spec}`` in notes (an ASCII identifier, then a Python format spec such as ``.3f``
#: or ``,``); ``{{name}}`` is the literal text ``{name}``, and braces around anything else (``{0, 1}``,
#: ``{−ε}``) are plain text
_PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}|\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}\s]+))?\}")


def placeholder_names(text: str) -> list[str]:
    """The names of the ``{name}`` placeholders of ``text``, in order."""
    return [m.group(2) for m in _PLACEHOLDER.finditer(text) if m.group(2) is not None]


def render_notes(text: str, values: Mapping[str, Any]) -> str:
    """``text`` with each ``{name}`` replaced by ``values[name]`` written as ``repro show`` writes values
    (``3.0``, ``[0.0, 0.5]``, ``adult``), and each ``{name:spec}`` by ``format(value, spec)`` (a string value,
    e.g. a formula marked "(needs the data)", is written as it is); ``{{name}}`` gives the literal ``{name}``.

    Raises
    ------
    KeyError
        For a placeholder that ``values`` lacks (the loader refuses such a file, :func:`load_experiment`).
    """
    def fill(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return "{" + match.group(1) + "}"
        value, spec = values[match.group(2)], match.group(3)
        if spec is None or isinstance(value, str):
            return _show_value(value)
        return format(value, spec)
    return _PLACEHOLDER.sub(fill, text)


def _show_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show_value(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)


def _check_placeholders(path: Path, spec: Any, study_numbers: Callable[[], tuple[str, ...]]) -> None:
    """Every ``{name}`` of the notes of ``spec`` (an :class:`repro.engine.cells.ExperimentSpec`) names a ``[params]`` key, a ``[grid]`` axis or a number the study computes
    (``study_numbers()``: the names of its :class:`repro.engine.study.NoteNumbers`, asked for only when a
    placeholder is neither), and every ``{name:spec}`` is a valid format spec (one line otherwise)."""
    values = spec.placeholder_values()
    derived: tuple[str, ...] | None = None
    for match in _PLACEHOLDER.finditer(spec.notes):
        name, fmt = match.group(2), match.group(3)
        if name is None:
            continue
        if name not in values:
            derived = study_numbers() if derived is None else derived
            if name not in derived:
                raise _err(path, "notes", f"placeholder {{{name}}} names no [params] key, [grid] axis or number "
                           f"of the study; known: {', '.join(sorted({*values, *derived})) or 'none'} (write "
                           f"{{{{{name}}}}} for the literal text)")
        if fmt is not None:
            try:
                format(1.5, fmt)
            except ValueError as exc:
                raise _err(path, "notes", f"placeholder {{{name}:{fmt}}}: not a number format ({exc}); write e.g. "
                           f"{{{name}:.3f}} or {{{name}:,}}") from exc
