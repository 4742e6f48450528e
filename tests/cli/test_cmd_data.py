"""`repro data ...` commands, invoked on the `data` group directly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli.data import data
from repro.datasets import store
from repro.datasets.sources import SOURCES
from repro.errors import ChecksumMismatchError, DataUnavailableError, UnknownNameError

pytestmark = pytest.mark.usefixtures("isolated_data_env")

CONTENT = b"x,y\n1,0\n"


def _run(*args: str):
    return CliRunner().invoke(data, list(args))


def _register(monkeypatch, src):
    monkeypatch.setitem(SOURCES, src.name, src)
    return src


def _mirror(tmp_path: Path, monkeypatch, files: dict[str, bytes]) -> Path:
    mirror = tmp_path / "mirror"
    mirror.mkdir(exist_ok=True)
    for name, content in files.items():
        (mirror / name).parent.mkdir(parents=True, exist_ok=True)
        (mirror / name).write_bytes(content)
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(mirror))
    return mirror


def test_help_lists_subcommands() -> None:
    result = _run("--help")
    assert result.exit_code == 0
    for cmd in ("list", "fetch", "verify", "path"):
        assert cmd in result.output


def test_list_shows_every_source(tmp_path, monkeypatch, make_raw_source) -> None:
    src = _register(monkeypatch, make_raw_source(CONTENT, url=None))
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    result = _run("list")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:3] == ["name", "file", "canonical"]
    for name in SOURCES:
        assert any(line.startswith(name + " ") for line in lines), name
    row = next(line for line in lines if line.startswith(src.name + " "))
    assert row.split()[-2:] == ["no", "yes"]  # not cached, in mirror
    assert "3,974,305" in result.output  # adult.data size


def test_fetch_named_from_mirror_prints_path(tmp_path, monkeypatch, make_raw_source,
                                             isolated_data_env) -> None:
    src = _register(monkeypatch, make_raw_source(CONTENT, url=None))
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    result = _run("fetch", src.name)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(isolated_data_env / "tmp.csv")
    assert (isolated_data_env / "tmp.csv").read_bytes() == CONTENT


def test_fetch_downloads_with_progress_bar(monkeypatch, make_raw_source, isolated_data_env) -> None:
    monkeypatch.setenv("REPRO_OFFLINE", "0")
    src = _register(monkeypatch, make_raw_source(CONTENT))
    result = _run("fetch", src.name)
    assert result.exit_code == 0, result.output
    assert f"downloading {src.name}" in result.stderr
    assert result.stdout.strip() == str(isolated_data_env / "tmp.csv")


def test_fetch_default_fetches_obtainable_and_skips_the_rest(tmp_path, monkeypatch, make_raw_source) -> None:
    src = _register(monkeypatch, make_raw_source(CONTENT, url=None))
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    result = _run("fetch")  # offline: only the mirrored file is obtainable
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(store.cached_path(src))
    assert "skipped adult-data" in result.stderr and "skipped db-lsac" in result.stderr


def test_fetch_unavailable_is_a_repro_error(tmp_path) -> None:
    result = _run("fetch", "adult-data")
    assert result.exit_code == 1
    assert isinstance(result.exception, DataUnavailableError)
    assert "REPRO_DATA_MIRROR" in str(result.exception)


def test_fetch_several_reports_each_failure_then_fails(tmp_path, monkeypatch, make_raw_source) -> None:
    src = _register(monkeypatch, make_raw_source(CONTENT, url=None))
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    result = _run("fetch", "adult-data", src.name)
    assert result.exit_code == 1
    assert isinstance(result.exception, DataUnavailableError)
    assert "FAILED adult-data" in result.stderr
    assert str(store.cached_path(src)) in result.stdout  # the good one was still fetched


def test_fetch_unknown_name_suggests() -> None:
    result = _run("fetch", "adult-dta")
    assert isinstance(result.exception, UnknownNameError)
    assert "adult-data" in str(result.exception)


def test_verify_mismatch_fails_missing_does_not(tmp_path, monkeypatch, make_raw_source) -> None:
    good = _register(monkeypatch, make_raw_source(CONTENT, name="good", filename="good.csv", url=None))
    _mirror(tmp_path, monkeypatch, {"good.csv": CONTENT})
    result = _run("verify")
    assert result.exit_code == 0, result.output
    assert re.search(rf"^OK +{good.name} ", result.output, re.M)
    assert re.search(r"^MISSING +adult-data ", result.output, re.M)

    bad = _register(monkeypatch, make_raw_source(CONTENT, name="bad", filename="bad.csv", url=None))
    _mirror(tmp_path, monkeypatch, {"bad.csv": b"corrupt"})
    result = _run("verify")
    assert result.exit_code == 1
    assert isinstance(result.exception, ChecksumMismatchError)
    assert re.search(rf"^MISMATCH +{bad.name} ", result.output, re.M)


def test_verify_named_missing_fails() -> None:
    result = _run("verify", "adult-data")
    assert result.exit_code == 1
    assert re.search(r"^MISSING +adult-data ", result.output, re.M)
    assert isinstance(result.exception, DataUnavailableError)


def test_path_fetches_and_prints(tmp_path, monkeypatch, make_raw_source, isolated_data_env) -> None:
    src = _register(monkeypatch, make_raw_source(CONTENT, url=None))
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    result = _run("path", src.name)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(isolated_data_env / "tmp.csv")


@pytest.mark.data
def test_verify_against_the_real_mirror(data_mirror, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    result = _run("verify")
    assert result.exit_code == 0, result.output
    ok = [line for line in result.output.splitlines() if line.startswith("OK ") and "-authors" not in line]
    assert len(ok) == 14   # 12 tabular files + the UTKFace archive and its per-image list
    authors = [line.split()[1] for line in result.output.splitlines() if line.startswith("OK ") and "-authors" in line]
    assert authors == ["adult-authors", "parkinsons-authors", "retired-adult-authors"]  # byte-identical rebuilds
    assert re.search(r"^INFERRED +credit-card-authors ", result.output, re.M)
    assert re.search(r"^MISSING +credit-card-xls ", result.output, re.M)


def test_the_fix_verify_suggests_replaces_a_file_corrupted_behind_its_mtime(
        tmp_path, monkeypatch, make_raw_source) -> None:
    # issue #15 item 2: `repro data fetch NAME` used to keep the bad file (a size+mtime stamp vouched for it)
    import os

    src = _register(monkeypatch, make_raw_source(CONTENT, url=None))
    _mirror(tmp_path, monkeypatch, {"tmp.csv": CONTENT})
    path = Path(_run("fetch", src.name).output.strip().splitlines()[-1])
    st = path.stat()
    path.write_bytes(b"x,y\n1,1\n")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime (cp -p, rsync -t)
    store.clear_verdicts()  # the next command is a new process
    verify = _run("verify", src.name)
    assert verify.exit_code == 1 and "MISMATCH" in verify.output and "repro data fetch" in str(verify.exception)
    store.clear_verdicts()
    assert _run("fetch", src.name).exit_code == 0
    assert path.read_bytes() == CONTENT
    assert _run("verify", src.name).exit_code == 0
