"""Local cache of raw data files: locate, copy from a mirror or download, and verify sha256.

Spec: ../shared/data/MANIFEST.md (the offline mirror layout: canonical files at the top level with
their canonical names and bytes, substitutes under ``derived/``) and the registry in
:mod:`repro.datasets.sources`.

Where files live (read from the environment at call time, so tests can change it):

``REPRO_DATA_DIR``
    The cache folder; default ``./data`` (relative to the current directory).
``REPRO_DATA_MIRROR``
    Optional folder laid out like the cache (for example ``../shared/data``); relative paths are
    resolved against the current directory.
``REPRO_OFFLINE``
    ``1`` forbids network access.

:func:`fetch` returns a verified file in the cache, trying in order: the cache itself, the mirror,
then the canonical URL. Nothing unverified ever sits under a final file name: every copy or
download goes to a temporary file in the destination folder, is checked against the registered
sha256 and only then renamed into place with :func:`os.replace`.

A cached file is re-hashed once per process: the verdict is remembered only in memory, keyed by
(path, size, mtime, inode), so a file whose bytes changed while its size and mtime did not (bit
rot, ``cp -p``, ``rsync -t``) is caught by the next process that reads it (issue #15, item 2).
Nothing on disk vouches for a file's bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import logging
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from repro.datasets.sources import SOURCES, RawSource, get_source
from repro.errors import ChecksumMismatchError, DataUnavailableError, InvalidParameterError

__all__ = [
    "ENV_DATA_DIR",
    "ENV_MIRROR",
    "ENV_OFFLINE",
    "ProgressCallback",
    "VerifyRow",
    "cached_path",
    "check_data_dir",
    "data_dir",
    "dataset_checksums",
    "fetch",
    "file_sha256",
    "is_obtainable",
    "mirror_dir",
    "mirror_path",
    "offline",
    "sha256_file",
    "verify",
]

logger = logging.getLogger(__name__)

ENV_DATA_DIR = "REPRO_DATA_DIR"
ENV_MIRROR = "REPRO_DATA_MIRROR"
ENV_OFFLINE = "REPRO_OFFLINE"
DEFAULT_DATA_DIR = "data"
DOWNLOAD_TIMEOUT = 60  # seconds, per blocking socket operation
_CHUNK = 1 << 20
_STAMP_SUFFIX = ".sha256ok"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}

NO_URL_TEXT = "no public URL: this derived file only comes from the project mirror"
MIRROR_EXAMPLE = f"{ENV_MIRROR}=/absolute/path/to/shared/data"

ProgressCallback = Callable[[int, int | None], None]
"""``progress(bytes_done, total_bytes_or_None)``, called as a download advances."""

Where = Literal["cache", "mirror", "missing"]


# --------------------------------------------------------------------------------------------
# locations


def data_dir() -> Path:
    """The cache folder: ``$REPRO_DATA_DIR``, default ``./data`` (absolute path)."""
    raw = os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR
    return Path(raw).expanduser().absolute()


def mirror_dir() -> Path | None:
    """The mirror folder ``$REPRO_DATA_MIRROR`` (absolute path), or None if unset or empty."""
    raw = os.environ.get(ENV_MIRROR)
    if not raw:
        return None
    return Path(raw).expanduser().absolute()


def offline() -> bool:
    """True if ``$REPRO_OFFLINE`` forbids network access.

    Raises
    ------
    InvalidParameterError
        If the variable holds something other than 0/1 (or false/true, no/yes, off/on).
    """
    raw = os.environ.get(ENV_OFFLINE, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise InvalidParameterError(
        f"`{ENV_OFFLINE}` must be 0 or 1; got {os.environ.get(ENV_OFFLINE)!r}. "
        f"Set {ENV_OFFLINE}=1 to forbid downloads, or unset it."
    )


def _resolve(source: str | RawSource) -> RawSource:
    return source if isinstance(source, RawSource) else get_source(source)


def cached_path(source: str | RawSource) -> Path:
    """Where the file of ``source`` lives in the cache (no I/O; it may not exist)."""
    return data_dir() / _resolve(source).filename


def mirror_path(source: str | RawSource) -> Path | None:
    """Where the file of ``source`` would be in the mirror, or None if no mirror is set."""
    mirror = mirror_dir()
    return None if mirror is None else mirror / _resolve(source).filename


def is_obtainable(source: str | RawSource) -> bool:
    """True if :func:`fetch` can work without error in principle: cached, in the mirror, or
    downloadable (a URL and not offline). Does not hash anything."""
    src = _resolve(source)
    mirror = mirror_path(src)
    return (
        cached_path(src).is_file()
        or (mirror is not None and mirror.is_file())
        or (src.url is not None and not offline())
    )


# --------------------------------------------------------------------------------------------
# hashing


def sha256_file(path: str | os.PathLike[str]) -> str:
    """sha256 hex digest of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


#: sha256 verdicts of this process, keyed by (path, size, mtime_ns, inode); never written to disk.
_VERDICTS: dict[tuple[str, int, int, int], str] = {}


def _verdict_key(path: Path) -> tuple[str, int, int, int]:
    st = path.stat()
    return (str(path.absolute()), st.st_size, st.st_mtime_ns, st.st_ino)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of ``path``, hashed at most once per process while its (size, mtime, inode) hold.

    The verdict lives in this process's memory only, so every new process hashes the bytes it
    reads once (a byte flipped behind an unchanged size and mtime is never trusted across runs).
    """
    path = Path(path)
    key = _verdict_key(path)
    digest = _VERDICTS.get(key)
    if digest is None:
        digest = sha256_file(path)
        if _verdict_key(path) == key:  # unchanged while it was read
            _VERDICTS[key] = digest
    return digest


def clear_verdicts() -> None:
    """Forget this process's hash verdicts (what a new process starts with; used by tests)."""
    _VERDICTS.clear()


def _stamp_path(path: Path) -> Path:
    # Older versions wrote ``<file>.sha256ok`` stamps trusted by size and mtime; they are no
    # longer read, only removed together with their file.
    return path.with_name(path.name + _STAMP_SUFFIX)


def _drop(path: Path) -> None:
    path.unlink(missing_ok=True)
    _stamp_path(path).unlink(missing_ok=True)
    for key in [k for k in _VERDICTS if k[0] == str(path.absolute())]:
        del _VERDICTS[key]


# --------------------------------------------------------------------------------------------
# fetch


def fetch(source: str | RawSource, *, progress: ProgressCallback | None = None) -> Path:
    """Path of the verified file of ``source`` in the cache, getting it first if needed.

    Tries, in order: (a) the cached file, if its sha256 matches (hashed once per process; a
    mismatching cached file is logged and deleted, then replaced by (b) or (c)); (b) the mirror
    ``$REPRO_DATA_MIRROR``, verified then copied; (c) the canonical URL, unless ``$REPRO_OFFLINE``
    is set or the file has none.

    Parameters
    ----------
    source : str or RawSource
        A registered name (``"adult-data"``) or a :class:`RawSource` object.
    progress : callable, optional
        Called as ``progress(bytes_done, total_or_None)`` while downloading.

    Returns
    -------
    Path
        The cached file, whose sha256 equals ``source.sha256``.

    Raises
    ------
    UnknownNameError
        If the name is not registered.
    ChecksumMismatchError
        If the mirror copy or the downloaded bytes do not match the registered sha256.
    DataUnavailableError
        If the file is not cached, not in the mirror and cannot be downloaded (offline, no URL, or
        a network error).
    """
    src = _resolve(source)
    dest = cached_path(src)

    # (a) cache: hashed once per process (see the module docstring), never trusted by a stamp
    if dest.is_file():
        actual = file_sha256(dest)
        if actual == src.sha256:
            return dest
        logger.warning(
            "cached %s has sha256 %s, expected %s; deleting it and fetching it again",
            dest, actual, src.sha256,
        )
        _drop(dest)

    check_data_dir()  # about to write into the cache: a clean error if it cannot hold files

    # (b) mirror
    mirror = mirror_path(src)
    if mirror is not None and mirror.is_file():
        logger.info("copying %s from the mirror %s", src.filename, mirror)
        _copy_from_mirror(src, mirror, dest)
        return dest

    # (c) download
    if src.url is not None and not offline():
        logger.info("downloading %s from %s", src.filename, src.url)
        _download(src, src.url, dest, progress)
        return dest

    raise DataUnavailableError(_unavailable_message(src, dest, mirror))


def _unavailable_message(src: RawSource, dest: Path, mirror: Path | None, cause: str = "") -> str:
    if mirror is None:
        mirror_state = f"{ENV_MIRROR} is not set"
    elif not (mirror_dir() or mirror.parent).is_dir():
        mirror_state = f"the mirror folder {mirror_dir()} ({ENV_MIRROR}) does not exist"
    else:
        mirror_state = f"not in the mirror ({mirror})"
    if src.url is None:
        state = f"not in the cache and {mirror_state}; {NO_URL_TEXT}"
    else:
        why = f"the download failed ({cause})" if cause else f"downloads are off ({ENV_OFFLINE}=1)"
        state = f"not in the cache, {mirror_state}, and {why}; canonical URL: {src.url}"
    return (
        f"data file {src.filename!r} (source {src.name!r}) is unavailable: {state}. To provide "
        f"it, put the file at {dest}, or set {ENV_MIRROR} to a folder holding {src.filename!r} "
        f"(e.g. `{MIRROR_EXAMPLE}`)."
    )


@contextlib.contextmanager
def _temp_beside(dest: Path) -> Iterator[tuple[BinaryIO, Path]]:
    """A binary temp file in ``dest``'s folder; removed unless the caller renamed it away."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.NamedTemporaryFile(  # closed below; kept on disk for os.replace
        dir=dest.parent, prefix=f".{dest.name}.", suffix=".part", delete=False
    )
    tmp_path = Path(tmp.name)
    try:
        yield tmp, tmp_path
    finally:
        tmp.close()
        tmp_path.unlink(missing_ok=True)  # no-op after a successful os.replace


def _stream(reader: BinaryIO, writer: BinaryIO, total: int | None,
            progress: ProgressCallback | None) -> str:
    """Copy ``reader`` into ``writer`` in chunks; return the sha256 of the bytes copied."""
    h = hashlib.sha256()
    done = 0
    if progress is not None:
        progress(0, total)
    while chunk := reader.read(_CHUNK):
        writer.write(chunk)
        h.update(chunk)
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    return h.hexdigest()


def _finish(tmp: BinaryIO, tmp_path: Path, dest: Path, sha256: str) -> None:
    tmp.flush()
    os.fsync(tmp.fileno())
    tmp.close()
    os.chmod(tmp_path, 0o644)  # NamedTemporaryFile creates 0600 files
    os.replace(tmp_path, dest)
    _stamp_path(dest).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        _VERDICTS[_verdict_key(dest)] = sha256  # these bytes were hashed while being written


def _copy_from_mirror(src: RawSource, mirror: Path, dest: Path) -> None:
    # Verify before anything reaches the cache: hash the mirror file while copying it into a
    # temporary file, so the bytes checked are exactly the bytes that get renamed into place.
    with _temp_beside(dest) as (tmp, tmp_path):
        with open(mirror, "rb") as fh:
            actual = _stream(fh, tmp, None, None)
        if actual != src.sha256:
            raise ChecksumMismatchError(
                f"mirror file {mirror} (source {src.name!r}) has sha256 {actual}, expected "
                f"{src.sha256}. Replace it with an intact copy (check the mirror with "
                f"`sha256sum -c checksums.sha256`), or unset {ENV_MIRROR} to use the cache or "
                f"the canonical URL."
            )
        _finish(tmp, tmp_path, dest, actual)


def _download(src: RawSource, url: str, dest: Path, progress: ProgressCallback | None) -> None:
    with _temp_beside(dest) as (tmp, tmp_path):
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as resp:
                length = resp.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else src.size
                actual = _stream(resp, tmp, total, progress)
        except (urllib.error.URLError, TimeoutError, ConnectionError,
                http.client.HTTPException) as err:
            cause = err if isinstance(err, urllib.error.HTTPError) else getattr(err, "reason", err)
            raise DataUnavailableError(
                _unavailable_message(src, dest, mirror_path(src), cause=f"{url}: {cause}")
            ) from err
        if actual != src.sha256:
            note = f" Note: {src.notes}" if src.notes else ""
            raise ChecksumMismatchError(
                f"download of {src.filename!r} from {url} has sha256 {actual}, expected "
                f"{src.sha256}; the file was not saved. The server may serve different bytes "
                f"now. Put a verified copy at {dest}, or set {ENV_MIRROR} to a folder holding "
                f"one (e.g. `{MIRROR_EXAMPLE}`).{note}"
            )
        _finish(tmp, tmp_path, dest, actual)


# --------------------------------------------------------------------------------------------
# verify and metadata


@dataclass(frozen=True)
class VerifyRow:
    """Result of checking one registered file.

    ``where`` is ``"cache"`` or ``"mirror"`` (where the checked copy was found) or
    ``"missing"``; ``actual`` is None when missing.
    """

    name: str
    filename: str
    where: Where
    path: Path | None
    expected: str
    actual: str | None
    ok: bool


def verify(names: Iterable[str | RawSource] | None = None) -> list[VerifyRow]:
    """Hash each file found in the cache, else in the mirror; never downloads.

    Parameters
    ----------
    names : iterable of str or RawSource, optional
        Sources to check; default every registered source.

    Returns
    -------
    list of VerifyRow
        One row per source, in the order given (registry order by default).
    """
    sources = [_resolve(n) for n in (SOURCES if names is None else names)]
    rows: list[VerifyRow] = []
    for src in sources:
        where: Where = "missing"
        path: Path | None = None
        cached = cached_path(src)
        mirror = mirror_path(src)
        if cached.is_file():
            where, path = "cache", cached
        elif mirror is not None and mirror.is_file():
            where, path = "mirror", mirror
        actual = sha256_file(path) if path is not None else None
        rows.append(VerifyRow(src.name, src.filename, where, path, src.sha256, actual,
                              ok=actual == src.sha256))
    return rows


def dataset_checksums(names: Iterable[str]) -> dict[str, str | None]:
    """sha256 of the bytes of each named source in the cache now (what a run read), for run.json.

    Hashes the cached file (at most once per process, see :func:`file_sha256`) instead of
    quoting the registry, so a run records the hash of the file it actually read; None for a
    source that is not in the cache (not read by this run).

    Raises
    ------
    UnknownNameError
        If a name is not registered.
    """
    out: dict[str, str | None] = {}
    for name in names:
        path = cached_path(get_source(name))
        out[name] = file_sha256(path) if path.is_file() else None
    return out


def check_data_dir() -> Path:
    """The data cache folder, created if needed; a clean error if it cannot hold files.

    Raises
    ------
    InvalidParameterError
        If ``$REPRO_DATA_DIR`` names a file, or a folder that cannot be created or written.
    """
    folder = data_dir()
    if folder.exists() and not folder.is_dir():
        raise InvalidParameterError(
            f"`{ENV_DATA_DIR}` must name a folder; {folder} is a file. Point {ENV_DATA_DIR} at a folder "
            f"(e.g. {ENV_DATA_DIR}=/absolute/path/to/data) or unset it to use ./{DEFAULT_DATA_DIR}."
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise InvalidParameterError(
            f"`{ENV_DATA_DIR}` folder {folder} cannot hold files ({err.strerror or err}); point "
            f"{ENV_DATA_DIR} at a writable folder or unset it to use ./{DEFAULT_DATA_DIR}."
        ) from err
    return folder
