"""`repro data`: list, fetch, verify and locate the raw data files and the authors' processed files.

The authors' files (data mode ``authors``: ``adult-authors``, ``retired-adult-authors``,
``parkinsons-authors``, ``credit-card-authors``: every registered dataset entry that declares
``authors``, :mod:`repro.datasets.registry`) are rebuilt from the raw files by
:mod:`repro.datasets.authors_files`; ``verify`` compares the rebuilt bytes with the authors' git
blob (Credit Card's file is not public: an inferred reconstruction, reported, never a failure).

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

from repro.cli._common import check_mirror
from repro.datasets import store
from repro.datasets.sources import SOURCES, RawSource, get_source
from repro.errors import ChecksumMismatchError, DataUnavailableError, ReproError

__all__ = ["data"]

_NAME_METAVAR = "NAME"
AUTHORS_SUFFIX = "-authors"


def _authors_files() -> dict[str, Any]:
    """``{dataset: its AuthorsFile}`` of the registered entries that declare one."""
    from repro.datasets.registry import authors_files

    return authors_files()


def authors_name(name: str) -> str | None:
    """``adult`` for ``adult-authors`` (an authors' file), else None."""
    base = name[: -len(AUTHORS_SUFFIX)] if name.endswith(AUTHORS_SUFFIX) else None
    return base if base in _authors_files() else None


def _raw_available(name: str) -> bool:
    """A raw file is cached or in the mirror (nothing is downloaded to find out)."""
    src = get_source(name)
    mirror = store.mirror_dir()
    return store.cached_path(src).is_file() or (mirror is not None and (mirror / src.filename).is_file())


def _rebuilt_blob(base: str) -> str:
    """Git blob id of the authors' file of ``base`` rebuilt from the raw files."""
    from repro.datasets import registry
    from repro.datasets.authors_files import authors_csv_bytes, git_blob_id

    return git_blob_id(authors_csv_bytes(registry.get_dataset(base)))


AUTHORS_BLOB_KEY = ":git-blob"  # run.json key suffix; read by repro.engine.report


def authors_checksums(raw_names: Sequence[str]) -> dict[str, str]:
    """For run.json: ``{"<name>-authors:git-blob": blob}`` of every authors' file rebuilt from raw files
    that the run lists and that are cached, so a result says whether its rebuilt bytes were the authors'."""
    out = {}
    for base, spec in _authors_files().items():
        if spec.sources and all(n in raw_names and store.cached_path(get_source(n)).is_file() for n in spec.sources):
            try:
                out[f"{base}{AUTHORS_SUFFIX}{AUTHORS_BLOB_KEY}"] = _rebuilt_blob(base)
            except (ReproError, OSError, ValueError):  # a record of the run must not fail a finished run
                continue
    return out


def _authors_rows() -> list[list[str]]:
    rows = []
    for base, spec in _authors_files().items():
        missing = [n for n in spec.sources if not _raw_available(n)]
        rows.append([f"{base}{AUTHORS_SUFFIX}", spec.filename, spec.git_blob[:12],
                     "yes" if spec.canonical else "no (INFERRED)",
                     f"{spec.n_rows:,} x {spec.n_features}", ", ".join(spec.sources),
                     "yes" if not missing else "no"])
    return rows


def _dataset_rows() -> list[list[str]]:
    from repro.datasets import registry

    return [[e.name, e.kind, ", ".join(e.data_modes), ", ".join(e.sources), e.module.rpartition(".")[2] + ".py"]
            for e in registry.entries()]


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
@click.pass_context
def data(ctx: click.Context) -> None:
    """List, fetch, verify, locate and export the data files (raw and the authors' rebuilt files).

    Files are cached in $REPRO_DATA_DIR (default ./data). They are copied from the mirror folder
    $REPRO_DATA_MIRROR if set, else downloaded from their canonical URL unless $REPRO_OFFLINE=1.
    """
    if ctx.invoked_subcommand != "list":   # `data list` shows the mirror's state instead
        check_mirror()


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
    click.echo("\nThe datasets (one entry each, repro/datasets/<module>.py; `--set dataset=NAME`):\n")
    click.echo(_table(["dataset", "kind", "data modes", "raw files", "module"], _dataset_rows()))
    click.echo("\nThe authors' processed files (data mode `authors`), rebuilt from the raw files on use; "
               "`repro data verify NAME` compares the rebuilt bytes with the authors' git blob:\n")
    click.echo(_table(["name", "file", "authors' git blob", "canonical", "rows x features", "raw files",
                       "raw ready"], _authors_rows()))
    click.echo(f"\ncache: {store.data_dir()}")
    if mirror is None:
        click.echo(f"mirror: (unset; set {store.ENV_MIRROR}, e.g. {store.MIRROR_EXAMPLE})")
    elif mirror.is_file():
        click.echo(f"mirror: {mirror} (a file, not a folder; set {store.ENV_MIRROR} to the folder holding the files)")
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
    nowhere only fail when named explicitly. Never downloads. The authors' files (NAME-authors) whose
    raw files are ready are rebuilt and compared with the authors' git blob (INFERRED: not public).
    """
    authors = [n for n in names if authors_name(n)]
    raw_names = [n for n in names if n not in authors]
    rows = store.verify(raw_names) if raw_names else ([] if names else store.verify(None))
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
    bad_authors, missing_authors = _verify_authors(authors if names else None)
    mismatched += bad_authors
    missing += missing_authors
    if mismatched:
        raise ChecksumMismatchError(
            f"{len(mismatched)} data file(s) do not match their registered sha256 or git blob: "
            f"{', '.join(mismatched)}. Run `repro data fetch NAME` to replace a bad cached copy "
            "(it is deleted and fetched again), or replace a bad mirror file."
        )
    if names and missing:
        raise DataUnavailableError(
            f"{len(missing)} named data file(s) are neither cached nor in the mirror: "
            f"{', '.join(missing)}. Run `repro data fetch NAME`, or set {store.ENV_MIRROR} to a "
            f"folder holding them (e.g. `{store.MIRROR_EXAMPLE}`)."
        )


def _verify_authors(names: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """Rebuild each authors' file (default: those whose raw files are ready) and compare its git blob.

    Returns (mismatched names, named-but-missing names); an inferred file is reported, never failed.
    """
    files = _authors_files()
    selected = names if names is not None else [f"{b}{AUTHORS_SUFFIX}" for b in files]
    mismatched, missing = [], []
    for name in selected:
        base = authors_name(name)
        spec = files[base]
        if not all(_raw_available(n) for n in spec.sources):
            if names is not None:
                missing.append(name)
            click.echo(f"MISSING   {name}  rebuilt from {', '.join(spec.sources)} (not cached, not in the mirror)")
            continue
        blob = _rebuilt_blob(base)
        if not spec.canonical:
            click.echo(f"INFERRED  {name}  {spec.filename} rebuilt (git blob {blob[:12]}); the authors' file is "
                       "not public, so it cannot be verified")
        elif blob == spec.git_blob:
            click.echo(f"OK        {name}  {spec.filename} rebuilt = the authors' git blob {blob[:12]}")
        else:
            mismatched.append(name)
            click.echo(f"MISMATCH  {name}  {spec.filename} rebuilt: expected the authors' git blob "
                       f"{spec.git_blob}, got {blob} (check the raw files and the pandas version)")
    return mismatched, missing


def _materialize_authors(base: str, dest: Path | None = None) -> Path:
    """Write the rebuilt authors' file of ``base`` to ``dest`` (default: ``<cache>/authors/<file>``)."""
    from repro.datasets import registry
    from repro.datasets.authors_files import authors_csv_bytes
    from repro.engine.cache import atomic_write_bytes

    entry = registry.get_dataset(base)
    spec = entry.authors
    for raw in spec.sources:  # fetched (or copied from the mirror) as a run would
        _fetch_with_bar(get_source(raw))
    path = dest if dest is not None else store.data_dir() / "authors" / spec.filename
    atomic_write_bytes(path, authors_csv_bytes(entry))
    return path


@data.command(name="path")
@click.argument("name", metavar=_NAME_METAVAR)
def path_cmd(name: str) -> None:
    """Fetch NAME if needed and print its path in the cache.

    For an authors' file (NAME-authors, e.g. adult-authors) the file is rebuilt from the raw files
    into the cache's authors/ folder first.
    """
    base = authors_name(name)
    click.echo(str(_materialize_authors(base) if base else _fetch_with_bar(get_source(name))))


@data.command(name="export")
@click.argument("name", metavar=_NAME_METAVAR)
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
def export_cmd(name: str, dest: Path) -> None:
    """Write NAME (a raw file, or an authors' file NAME-authors rebuilt from the raw files) to DEST."""
    base = authors_name(name)
    if base:
        path = _materialize_authors(base, dest)
    else:
        from repro.engine.cache import atomic_write_bytes

        path = dest
        atomic_write_bytes(dest, _fetch_with_bar(get_source(name)).read_bytes())
    click.echo(str(path))
