"""A folder written whole or not at all: the published results (:mod:`repro.engine.publish`) and the results site
(:mod:`repro.engine.site`) are filled in a temporary folder beside their destination, which then replaces it."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["replaced_folder"]


@contextlib.contextmanager
def replaced_folder(final: Path, *, file_mode: int | None = None) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``final``; when the block ends without an error, give its files
    ``file_mode`` (its folders the same mode with the execute bits; ``None``: what the umask gives new files) and
    rename it to ``final``, replacing what was there. On an error it is removed and ``final`` is left as it was."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.", suffix=".partial"))
    try:
        yield tmp
        if file_mode is None:
            mask = os.umask(0)
            os.umask(mask)
            file_mode = 0o666 & ~mask
        folder_mode = file_mode | (file_mode & 0o444) >> 2
        for path in [tmp, *tmp.rglob("*")]:
            path.chmod(folder_mode if path.is_dir() else file_mode)
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
