"""Cache, mirror and download of raw data files (spec: ../shared/data/MANIFEST.md)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
from pathlib import Path

import pytest

from repro.datasets import store
from repro.datasets.sources import SOURCES
from repro.errors import ChecksumMismatchError, DataUnavailableError, InvalidParameterError

pytestmark = pytest.mark.usefixtures("isolated_data_env")

CONTENT = b"a,b\n1,2\n3,4\n"
BIG = bytes(range(256)) * (3 * 4096 + 7)  # ~3 MiB: several download chunks


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith((".part", ".tmp"))] if folder.exists() else []


def _mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, bytes]) -> Path:
    mirror = tmp_path / "mirror"
    for name, content in files.items():
        (mirror / name).parent.mkdir(parents=True, exist_ok=True)
        (mirror / name).write_bytes(content)
    mirror.mkdir(exist_ok=True)
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(mirror))
    return mirror


# --- locations -----------------------------------------------------------------------------


def test_data_dir_defaults_to_data_under_cwd(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("REPRO_DATA_DIR")
    monkeypatch.chdir(tmp_path)
    assert store.data_dir() == tmp_path / "data"


def test_data_dir_and_mirror_follow_env_at_call_time(tmp_path, monkeypatch, isolated_data_env) -> None:
    assert store.data_dir() == isolated_data_env
    assert store.mirror_dir() is None
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPRO_DATA_MIRROR", "mirror")
    assert store.mirror_dir() == tmp_path / "mirror"


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("true", True), ("0", False), ("", False)])
def test_offline_flag(monkeypatch, value, expected) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", value)
    assert store.offline() is expected


def test_offline_flag_rejects_garbage(monkeypatch) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", "maybe")
    with pytest.raises(InvalidParameterError, match="REPRO_OFFLINE"):
        store.offline()


def test_cached_path_does_no_io(isolated_data_env) -> None:
    path = store.cached_path("db-lsac")
    assert path == isolated_data_env / "derived" / "db_LSAC.csv"
    assert not isolated_data_env.exists()


def test_sha256_file_matches_hashlib(tmp_path) -> None:
    f = tmp_path / "big.bin"
    f.write_bytes(BIG)
    assert store.sha256_file(f) == hashlib.sha256(BIG).hexdigest()


def test_dataset_checksums_of_files_not_in_the_cache_are_none() -> None:
    got = store.dataset_checksums(["adult-data", "db-lsac"])
    assert got == {"adult-data": None, "db-lsac": None}


# --- download ------------------------------------------------------------------------------


def test_download_by_file_url_with_progress(monkeypatch, make_raw_source, isolated_data_env) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", "0")
    src = make_raw_source(BIG)
    calls: list[tuple[int, int | None]] = []
    path = store.fetch(src, progress=lambda done, total: calls.append((done, total)))
    assert path == isolated_data_env / "tmp.csv"
    assert path.read_bytes() == BIG
    assert calls[0] == (0, len(BIG)) and calls[-1] == (len(BIG), len(BIG))
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and len(calls) > 2
    assert _leftovers(isolated_data_env) == []


def test_fetch_accepts_a_registered_name(monkeypatch, make_raw_source) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", "0")
    src = make_raw_source(CONTENT)
    monkeypatch.setitem(SOURCES, src.name, src)
    assert store.fetch(src.name).read_bytes() == CONTENT


def test_corrupt_download_raises_and_leaves_nothing(monkeypatch, make_raw_source, isolated_data_env) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", "0")
    src = make_raw_source(CONTENT, sha256="0" * 64)
    with pytest.raises(ChecksumMismatchError) as info:
        store.fetch(src)
    msg = str(info.value)
    assert "0" * 64 in msg and hashlib.sha256(CONTENT).hexdigest() in msg and src.url in msg
    assert "REPRO_DATA_MIRROR" in msg
    assert not store.cached_path(src).exists()
    assert _leftovers(isolated_data_env) == []


def test_failure_mid_download_leaves_no_partial_file(monkeypatch, make_raw_source, isolated_data_env) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", "0")
    src = make_raw_source(BIG)

    def boom(done: int, total: int | None) -> None:
        if done > 0:  # after the first chunk has been written to the temp file
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        store.fetch(src, progress=boom)
    assert not store.cached_path(src).exists()
    assert _leftovers(isolated_data_env) == []
    # and a later fetch works
    assert store.fetch(src).read_bytes() == BIG


def test_network_error_maps_to_data_unavailable(monkeypatch, make_raw_source) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", "0")
    src = make_raw_source(CONTENT)
    Path(src.url.removeprefix("file://")).unlink()  # the URL now points nowhere
    with pytest.raises(DataUnavailableError) as info:
        store.fetch(src)
    msg = str(info.value)
    assert "download failed" in msg and src.url in msg and "No such file" in msg


def test_offline_without_mirror_says_how_to_provide_the_file() -> None:
    src = SOURCES["adult-data"]
    with pytest.raises(DataUnavailableError) as info:
        store.fetch("adult-data")
    msg = str(info.value)
    for part in (src.filename, src.url, "REPRO_DATA_MIRROR", str(store.cached_path(src)), "REPRO_OFFLINE"):
        assert part in msg


def test_derived_file_without_mirror_says_it_has_no_url(monkeypatch) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", "0")  # even online there is nothing to download
    with pytest.raises(DataUnavailableError) as info:
        store.fetch("db-lsac")
    msg = str(info.value)
    assert store.NO_URL_TEXT in msg and "derived/db_LSAC.csv" in msg and "REPRO_DATA_MIRROR" in msg


def test_missing_from_mirror_names_the_mirror(tmp_path, monkeypatch) -> None:
    mirror = _mirror(tmp_path, monkeypatch, {})
    with pytest.raises(DataUnavailableError, match=re.escape(str(mirror))):
        store.fetch("adult-names")


# --- mirror --------------------------------------------------------------------------------


def test_mirror_hit_is_copied_and_verified(tmp_path, monkeypatch, make_raw_source, isolated_data_env) -> None:
    src = make_raw_source(CONTENT, filename="derived/x.csv", url=None)
    mirror = _mirror(tmp_path, monkeypatch, {"derived/x.csv": CONTENT})
    path = store.fetch(src)
    assert path == isolated_data_env / "derived" / "x.csv"
    assert path.read_bytes() == CONTENT and (mirror / "derived/x.csv").read_bytes() == CONTENT
    assert (path.stat().st_mode & 0o777) == 0o644
    assert _leftovers(isolated_data_env) == []


def test_corrupt_mirror_file_raises_and_caches_nothing(tmp_path, monkeypatch, make_raw_source,
                                                       isolated_data_env) -> None:
    src = make_raw_source(CONTENT, url=None)
    mirror = _mirror(tmp_path, monkeypatch, {"tmp.csv": b"corrupt"})
    with pytest.raises(ChecksumMismatchError) as info:
        store.fetch(src)
    msg = str(info.value)
    assert str(mirror / "tmp.csv") in msg and src.sha256 in msg
    assert hashlib.sha256(b"corrupt").hexdigest() in msg and "Replace it" in msg
    assert not store.cached_path(src).exists()
    assert _leftovers(isolated_data_env) == []


# --- cache ---------------------------------------------------------------------------------


def test_cached_file_is_used_offline_without_mirror(make_raw_source, isolated_data_env) -> None:
    src = make_raw_source(CONTENT, url=None)
    (isolated_data_env / "tmp.csv").parent.mkdir(parents=True)
    (isolated_data_env / "tmp.csv").write_bytes(CONTENT)
    assert store.fetch(src) == isolated_data_env / "tmp.csv"


def test_corrupted_cache_is_logged_deleted_and_refetched(tmp_path, monkeypatch, make_raw_source,
                                                         caplog) -> None:
    src = make_raw_source(CONTENT, url=None)
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    path = store.fetch(src)
    path.write_bytes(b"x" * len(CONTENT))  # same size, new content
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # make sure mtime moved
    with caplog.at_level(logging.WARNING, logger="repro.datasets.store"):
        assert store.fetch(src).read_bytes() == CONTENT
    assert "deleting it" in caplog.text


def _flip_first_byte_keep_mtime(path: Path) -> None:
    """Corrupt ``path`` the way bit rot or ``cp -p`` would: same size, same mtime."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_corruption_behind_unchanged_size_and_mtime_is_caught_and_replaced(
        tmp_path, monkeypatch, make_raw_source, caplog) -> None:
    # issue #15 item 2: a size+mtime stamp used to vouch for the flipped bytes
    src = make_raw_source(CONTENT, url=None)
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    path = store.fetch(src)
    _flip_first_byte_keep_mtime(path)
    store.clear_verdicts()  # a new process (a new `repro run` or `repro data fetch`)
    with caplog.at_level(logging.WARNING, logger="repro.datasets.store"):
        fetched = store.fetch(src)
    assert fetched.read_bytes() == CONTENT
    assert "deleting it" in caplog.text


def test_corrupted_cache_without_mirror_is_never_returned(tmp_path, monkeypatch, make_raw_source) -> None:
    src = make_raw_source(CONTENT, url=None)
    mirror = _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    path = store.fetch(src)
    _flip_first_byte_keep_mtime(path)
    (mirror / "tmp.csv").unlink()
    store.clear_verdicts()
    with pytest.raises(DataUnavailableError):
        store.fetch(src)
    assert not path.exists()


def test_no_stamp_file_vouches_for_bytes(tmp_path, monkeypatch, make_raw_source) -> None:
    src = make_raw_source(CONTENT, url=None)
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    path = store.fetch(src)
    assert not path.with_name("tmp.csv.sha256ok").exists()


def test_cached_file_is_hashed_once_per_process(tmp_path, monkeypatch, make_raw_source) -> None:
    src = make_raw_source(CONTENT, url=None)
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    path = store.fetch(src)
    store.clear_verdicts()
    calls = []
    real = store.sha256_file
    monkeypatch.setattr(store, "sha256_file", lambda p: calls.append(p) or real(p))
    for _ in range(3):
        assert store.fetch(src) == path
    assert len(calls) == 1
    # a changed file (new mtime) is hashed again
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert store.fetch(src) == path
    assert len(calls) == 2


def test_dataset_checksums_record_the_bytes_in_the_cache(monkeypatch, make_raw_source, tmp_path) -> None:
    src = make_raw_source(CONTENT, name="tmp-source", url=None)
    monkeypatch.setitem(SOURCES, src.name, src)
    assert store.dataset_checksums([src.name]) == {src.name: None}  # not read: not cached
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    path = store.fetch(src)
    assert store.dataset_checksums([src.name]) == {src.name: src.sha256}
    _flip_first_byte_keep_mtime(path)
    store.clear_verdicts()
    got = store.dataset_checksums([src.name])[src.name]
    assert got == hashlib.sha256(path.read_bytes()).hexdigest() != src.sha256


def test_missing_mirror_folder_is_named(tmp_path, monkeypatch, make_raw_source) -> None:
    src = make_raw_source(CONTENT, url=None)
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(tmp_path / "no-such-mirror"))
    with pytest.raises(DataUnavailableError, match="mirror folder .*no-such-mirror.* does not exist"):
        store.fetch(src)


def test_data_dir_that_is_a_file_is_a_clean_error(tmp_path, monkeypatch) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    monkeypatch.setenv("REPRO_DATA_DIR", str(f))
    with pytest.raises(InvalidParameterError, match="must name a folder"):
        store.check_data_dir()
    monkeypatch.setenv("REPRO_DATA_DIR", str(f / "sub"))
    with pytest.raises(InvalidParameterError, match="cannot hold files"):
        store.check_data_dir()
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "new" / "data"))
    assert store.check_data_dir().is_dir()


# --- verify --------------------------------------------------------------------------------


def test_verify_reports_cache_mirror_and_missing(tmp_path, monkeypatch, make_raw_source,
                                                 isolated_data_env) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", "0")
    good = make_raw_source(CONTENT, name="good", filename="good.csv")
    bad = make_raw_source(CONTENT, name="bad", filename="bad.csv")
    cached = make_raw_source(CONTENT, name="cached", filename="cached.csv")
    missing = make_raw_source(CONTENT, name="missing", filename="missing.csv")
    _mirror(tmp_path, monkeypatch, {"good.csv": CONTENT, "bad.csv": b"nope"})
    (isolated_data_env).mkdir()
    (isolated_data_env / "cached.csv").write_bytes(CONTENT)

    rows = {r.name: r for r in store.verify([good, bad, cached, missing])}
    assert (rows["good"].where, rows["good"].ok) == ("mirror", True)
    assert (rows["bad"].where, rows["bad"].ok) == ("mirror", False)
    assert rows["bad"].actual == hashlib.sha256(b"nope").hexdigest()
    assert (rows["cached"].where, rows["cached"].ok) == ("cache", True)
    assert (rows["missing"].where, rows["missing"].ok, rows["missing"].actual) == ("missing", False, None)
    assert not store.cached_path(missing).exists()  # verify never downloads
    assert not store.cached_path(good).exists()  # nor copies


def test_verify_defaults_to_every_registered_source() -> None:
    rows = store.verify()
    assert [r.name for r in rows] == list(SOURCES)
    assert all(r.where == "missing" for r in rows)


# --- the real mirror -----------------------------------------------------------------------


@pytest.mark.data
@pytest.mark.parametrize("name", ["adult-names", "db-lsac"])
def test_fetch_from_real_mirror(data_mirror, monkeypatch, name) -> None:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    path = store.fetch(name)
    assert store.sha256_file(path) == SOURCES[name].sha256
    assert path.stat().st_size == SOURCES[name].size



def test_fetch_into_a_data_dir_that_is_a_file_is_a_clean_error(tmp_path, monkeypatch, make_raw_source) -> None:
    src = make_raw_source(CONTENT, url=None)
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("REPRO_DATA_DIR", str(afile))
    with pytest.raises(InvalidParameterError, match="must name a folder"):
        store.fetch(src)
