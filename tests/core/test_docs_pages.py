"""The pages of docs/ are for users: each opens with one paragraph saying who it is for, none carries the
project's bookkeeping (issue numbers, dated notes, sessions), and docs/reproducibility.md stays short. Release
notes live in CHANGELOG.md, measurement histories in benchmarks/README.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
#: generated from the experiment files by `python -m repro.engine.fidelity` (its header is the generator's)
GENERATED = {"fidelity.md"}
#: pages whose bookkeeping is being rewritten with their subject; remove a name once its page is clean
BOOKKEEPING_PENDING: set[str] = set()
PAGES = sorted(p for p in (ROOT / "docs").glob("*.md"))


def _opening(text: str) -> str:
    """The first paragraph after the page's title."""
    body = text.split("\n", 1)[1].strip()
    return body.split("\n\n", 1)[0]


@pytest.mark.parametrize("page", [p for p in PAGES if p.name not in GENERATED], ids=lambda p: p.name)
def test_each_page_opens_with_who_it_is_for(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# "), f"{page.name}: a page opens with its title"
    assert _opening(text).startswith("For "), f"{page.name}: open with one paragraph saying who the page is for"


@pytest.mark.parametrize("page", [p for p in PAGES if p.name not in BOOKKEEPING_PENDING], ids=lambda p: p.name)
def test_no_page_carries_bookkeeping(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"\bissues? #?\d+|\bissue-\d+", text, flags=re.I), f"{page.name}: an issue number"
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), f"{page.name}: a dated note (CHANGELOG.md or benchmarks/)"
    assert not re.search(r"\b(?:\w+th|this|that|next|previous) session\b", text, flags=re.I), page.name


def test_reproducibility_page_is_short_and_release_notes_are_in_the_changelog() -> None:
    text = (ROOT / "docs" / "reproducibility.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert "release notes" not in text.lower() and "Fixed on" not in text
    assert (ROOT / "CHANGELOG.md").is_file()
