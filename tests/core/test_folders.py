"""A folder written whole or not at all (repro/engine/folders.py): the published results and the site use it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from repro.engine.folders import replaced_folder


def test_the_folder_replaces_the_old_one_with_the_modes_asked(tmp_path: Path) -> None:
    final = tmp_path / "site"
    (final / "old").mkdir(parents=True)
    with replaced_folder(final, file_mode=0o644) as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "a.txt").write_text("a")
    assert sorted(p.relative_to(final).as_posix() for p in final.rglob("*")) == ["sub", "sub/a.txt"]
    assert stat.S_IMODE((final / "sub" / "a.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((final / "sub").stat().st_mode) == 0o755
    assert not list(tmp_path.glob(".*partial"))


def test_an_error_leaves_the_old_folder_and_no_partial(tmp_path: Path) -> None:
    final = tmp_path / "site"
    final.mkdir()
    (final / "kept.txt").write_text("kept")
    with pytest.raises(RuntimeError), replaced_folder(final) as tmp:
        (tmp / "new.txt").write_text("new")
        raise RuntimeError("interrupted")
    assert [p.name for p in final.iterdir()] == ["kept.txt"]
    assert not list(tmp_path.glob(".*partial"))
