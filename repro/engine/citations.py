"""Spec citations that resolve: ``seed-003-thesis.md §2.7`` or ``seed-003 §2.7`` → ``docs/specs/seed-003-thesis.md``.

Experiment files, notes and paper-value sources cite the implementation specs by file name (``seed-00x-*.md``) or
by number (``seed-00x``). The specs ship in the repository's ``docs/specs/`` (issue #35); :func:`resolve` rewrites a
citation into that path wherever it is shown to a user (``repro show``, ``REPORT.md``).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["SPEC_FILES", "SPECS_DIR", "resolve", "cited_files"]

#: where the specs live, relative to the repository root
SPECS_DIR = "docs/specs"
#: spec number → its file in :data:`SPECS_DIR`
SPEC_FILES = {
    "seed-000-002": "seed-000-002-compat.md",
    "seed-001": "seed-001-bandit.md",
    "seed-003": "seed-003-thesis.md",
    "seed-004": "seed-004-dpfermi.md",
}
_NUMBERS = "|".join(re.escape(n) for n in sorted(SPEC_FILES, key=len, reverse=True))
#: a spec file name not already under a folder, or a bare spec number (not the start of another file's name)
_CITATION = re.compile(rf"(?<![\w/.-])(?:(?P<file>(?:{_NUMBERS})-[a-z]+\.md)|(?P<number>{_NUMBERS})(?![\w.-]))")


def resolve(text: str) -> str:
    """``text`` with every spec citation written as its path under :data:`SPECS_DIR`."""
    def path(match: re.Match[str]) -> str:
        name = match.group("file") or SPEC_FILES[match.group("number")]
        return f"{SPECS_DIR}/{name}"

    return _CITATION.sub(path, text)


def cited_files(text: str) -> set[str]:
    """The spec files ``text`` cites (by name or number), as paths relative to the repository root."""
    return {Path(p).as_posix() for p in re.findall(rf"{re.escape(SPECS_DIR)}/[\w.-]+\.md", resolve(text))}
