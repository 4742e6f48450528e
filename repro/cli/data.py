"""`repro data`: list, fetch, verify and locate the raw data files.

Spec: ../shared/data/MANIFEST.md. A thin layer over :mod:`repro.datasets`; errors are
:class:`repro.errors.ReproError` subclasses, which the main group turns into one line and exit
code 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from repro.datasets import store
from repro.datasets.sources import SOURCES, RawSource, get_source
from repro.errors import ChecksumMismatchError, DataUnavailableError, ReproError

__all__ = ["data"]

_NAME_METAVAR = "NAME"


def _fmt_int(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in [header, *rows]]
    return "\n".join(lines)


class _ProgressBar:
    """A :func:`store.fetch` progress callback drawing a click progress bar on stderr."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._stack = ExitStack()
        self._bar: Any = None
        self._done = 0

    def __call__(self, done: int, total: int | None) -> None:
        if self._bar is None:
            if not total:
                return  # unknown size: no bar
            self._bar = self._stack.enter_context(
                click.progressbar(length=total, label=self.label, file=sys.stderr)
            )
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        self._stack.close()


def _fetch_with_bar(src: RawSource) -> Path:
    bar = _ProgressBar(f"downloading {src.name}")
    try:
        return store.fetch(src, progress=bar)
    finally:
        bar.close()


@click.group(name="data")
def data() -> None:
    """List, fetch and verify the raw data files.

    Files are cached in $REPRO_DATA_DIR (default ./data). They are copied from the mirror folder
    $REPRO_DATA_MIRROR if set, else downloaded from their canonical URL unless $REPRO_OFFLINE=1.
    """


@data.command(name="list")
def list_cmd() -> None:
    """Show every registered data file and where it is available."""
    mirror = store.mirror_dir()
    rows = []
    for src in SOURCES.values():
        in_mirror = "-" if mirror is None else ("yes" if (mirror / src.filename).is_file() else "no")
        rows.append([
            src.name,
            src.filename,
            "yes" if src.canonical else "no (derived)",
            _fmt_int(src.rows),
            _fmt_int(src.size),
            "yes" if store.cached_path(src).is_file() else "no",
            in_mirror,
        ])
    header = ["name", "file", "canonical", "rows", "bytes", "cached", "in mirror"]
    click.echo(_table(header, rows))
    click.echo(f"\ncache: {store.data_dir()}")
    if mirror is None:
        click.echo(f"mirror: (unset; set {store.ENV_MIRROR}, e.g. {store.MIRROR_EXAMPLE})")
    elif not mirror.is_dir():
        click.echo(f"mirror: {mirror} (MISSING: no such folder; fix {store.ENV_MIRROR})")
    else:
        click.echo(f"mirror: {mirror}")


def _run_each(names: Sequence[str], action: Callable[[RawSource], None]) -> None:
    """Run ``action`` on every source; report failures and raise one error at the end."""
    failures: list[tuple[str, ReproError]] = []
    for name in names:
        try:
            action(get_source(name))
        except (DataUnavailableError, ChecksumMismatchError) as err:
            failures.append((name, err))
            if len(names) > 1:
                click.echo(f"FAILED {name}: {err}", err=True)
    if len(failures) == 1:
        raise failures[0][1]
    if failures:
        failed = ", ".join(n for n, _ in failures)
        raise DataUnavailableError(
            f"{len(failures)} of {len(names)} data files could not be fetched ({failed}); "
            "see the messages above."
        )


@data.command(name="fetch")
@click.argument("names", nargs=-1, metavar=f"[{_NAME_METAVAR}]...")
def fetch_cmd(names: tuple[str, ...]) -> None:
    """Fetch NAMEs into the cache and print each path.

    Without NAMEs, fetch every file that is obtainable (cached, in the mirror, or downloadable);
    the others are listed as skipped.
    """
    if names:
        selected = [get_source(n).name for n in names]  # unknown names fail before any work
    else:
        selected = []
        for src in SOURCES.values():
            if store.is_obtainable(src):
                selected.append(src.name)
            else:
                reason = "no public URL" if src.url is None else f"{store.ENV_OFFLINE}=1"
                click.echo(f"skipped {src.name}: not cached, not in the mirror, {reason}", err=True)

    def action(src: RawSource) -> None:
        click.echo(str(_fetch_with_bar(src)))

    _run_each(selected, action)


@data.command(name="verify")
@click.argument("names", nargs=-1, metavar=f"[{_NAME_METAVAR}]...")
def verify_cmd(names: tuple[str, ...]) -> None:
    """Check the sha256 of NAMEs (default: all) in the cache, else in the mirror.

    Prints OK, MISMATCH or MISSING per file and exits 1 if any file found mismatches. Files found
    nowhere only fail when named explicitly. Never downloads.
    """
    rows = store.verify(list(names) if names else None)
    width = max((len(r.name) for r in rows), default=0)
    mismatched, missing = [], []
    for row in rows:
        name = row.name.ljust(width)
        if row.where == "missing":
            missing.append(row.name)
            click.echo(f"MISSING   {name}  {row.filename} (not cached, not in the mirror)")
        elif row.ok:
            click.echo(f"OK        {name}  {row.path} ({row.where})")
        else:
            mismatched.append(row.name)
            click.echo(f"MISMATCH  {name}  {row.path} ({row.where}): "
                       f"expected sha256 {row.expected}, got {row.actual}")
    if mismatched:
        raise ChecksumMismatchError(
            f"{len(mismatched)} data file(s) do not match their registered sha256: "
            f"{', '.join(mismatched)}. Run `repro data fetch NAME` to replace a bad cached copy "
            "(it is deleted and fetched again), or replace a bad mirror file."
        )
    if names and missing:
        raise DataUnavailableError(
            f"{len(missing)} named data file(s) are neither cached nor in the mirror: "
            f"{', '.join(missing)}. Run `repro data fetch NAME`, or set {store.ENV_MIRROR} to a "
            f"folder holding them (e.g. `{store.MIRROR_EXAMPLE}`)."
        )


@data.command(name="path")
@click.argument("name", metavar=_NAME_METAVAR)
def path_cmd(name: str) -> None:
    """Fetch NAME if needed and print its path in the cache."""
    click.echo(str(_fetch_with_bar(get_source(name))))
