"""Experiment families hold no copied text (issue #36, "experiment families").

A family is the set of experiment files whose ``extends`` chains end in the same base file, together with
the base files of those chains. No two files of a family may share a run of six or more identical lines:
what members share belongs in the base (``[append]``, ``{placeholders}``, array cells; see
``repro/engine/spec.py``). Lines are compared with their white space folded; blank lines and
comment-only lines are ignored (a file's comments may repeat the house's conventions).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from pathlib import Path

from repro.engine.extends import extends_chain

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "experiments"
#: the longest run of identical lines two files of one family may share
MAX_SHARED = 5


def _lines(path: Path) -> list[tuple[str, int]]:
    """(folded text, line number) of the lines that count: not blank, not a comment."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = " ".join(line.split())
        if text and not text.startswith("#"):
            out.append((text, number))
    return out


def longest_shared_run(a: list[tuple[str, int]], b: list[tuple[str, int]]) -> tuple[int, int, int]:
    """(length, line in a, line in b) of the longest run of identical lines of ``a`` and ``b``."""
    where: dict[str, list[int]] = defaultdict(list)
    for j, (text, _) in enumerate(b):
        where[text].append(j)
    best = (0, 0, 0)
    previous: dict[int, int] = {}
    for i, (text, _) in enumerate(a):
        current = {j: previous.get(j - 1, 0) + 1 for j in where.get(text, ())}
        for j, n in current.items():
            if n > best[0]:
                best = (n, a[i - n + 1][1], b[j - n + 1][1])
        previous = current
    return best


def families(directory: Path = EXPERIMENTS) -> dict[Path, list[Path]]:
    """Root base file -> the files of its family (the bases of the chains first, then the members)."""
    out: dict[Path, set[Path]] = defaultdict(set)
    for path in sorted(directory.glob("*.toml")):
        chain = extends_chain(path)
        if chain:
            out[chain[-1]].update([path.resolve(), *chain])
    return {root: sorted(files) for root, files in out.items()}


def test_the_shipped_families_are_found() -> None:
    found = {root.stem: len(files) for root, files in families().items()}
    assert found["dpfermi-tabular"] >= 10   # the base, its two notion bases and the eight figures
    assert found["thesis-part1"] == 5


def test_no_run_of_six_identical_lines_within_a_family() -> None:
    problems = []
    for files in families().values():
        lines = {f: _lines(f) for f in files}
        for a, b in combinations(files, 2):
            n, line_a, line_b = longest_shared_run(lines[a], lines[b])
            if n > MAX_SHARED:
                problems.append(f"{a.relative_to(EXPERIMENTS)}:{line_a} ~ {b.relative_to(EXPERIMENTS)}:{line_b} "
                                f"({n} lines)")
    assert not problems, "copied text within a family (move it to the base): " + "; ".join(problems)


def test_longest_shared_run_counts_identical_lines_only(tmp_path: Path) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text("x = 1\n# comment\ny = 2\n\nz = 3\nw = 4\n")
    b.write_text("q = 0\nx = 1\ny   =  2\n# other comment\nz = 3\nw = 5\n")
    assert longest_shared_run(_lines(a), _lines(b)) == (3, 1, 2)
