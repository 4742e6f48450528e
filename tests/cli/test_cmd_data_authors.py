"""`repro data list|verify|path|export` know the authors' rebuilt files (issue #24, item 6)."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import repro.cli.data as data_cli
import repro.datasets.authors_files as af
from repro.cli import main
from repro.datasets import registry


def _authors(name: str):
    return registry.get_dataset(name).authors


def invoke(*args: str):
    return CliRunner().invoke(main, ["data", *args])


@pytest.fixture
def fake_rebuild(monkeypatch: pytest.MonkeyPatch, isolated_data_env: Path) -> bytes:
    """Every raw file 'ready' and every rebuilt authors' file = these bytes (no raw data needed)."""
    content = b"a,b\n1,2\n"
    monkeypatch.setattr(data_cli, "_raw_available", lambda name: True)
    monkeypatch.setattr(af, "_csv", lambda name: (content, "test"))
    monkeypatch.setattr(data_cli, "_fetch_with_bar", lambda src: Path("/dev/null"))
    return content


def test_list_shows_the_authors_files(isolated_data_env: Path) -> None:
    result = invoke("list")
    assert result.exit_code == 0, result.output
    for base, spec in registry.authors_files().items():
        assert f"{base}-authors" in result.output and spec.filename in result.output
        assert spec.git_blob[:12] in result.output
    assert "INFERRED" in result.output  # credit card


def test_verify_flags_a_rebuilt_file_that_is_not_the_authors_blob(fake_rebuild: bytes) -> None:
    result = invoke("verify", "adult-authors")
    assert result.exit_code == 1
    assert "MISMATCH  adult-authors" in result.output and _authors("adult").git_blob in result.output


def test_verify_accepts_the_authors_blob_and_reports_an_inferred_file(monkeypatch, fake_rebuild: bytes) -> None:
    blob = af.git_blob_id(fake_rebuild)
    entry = registry.get_dataset("adult")
    monkeypatch.setitem(registry._REGISTRY, "adult",
                        dataclasses.replace(entry, authors=dataclasses.replace(entry.authors, git_blob=blob)))
    result = invoke("verify", "adult-authors", "credit-card-authors")
    assert result.exit_code == 0, result.output
    assert "OK        adult-authors" in result.output
    assert "INFERRED  credit-card-authors" in result.output and "cannot be verified" in result.output


def test_verify_named_authors_file_without_raw_data_fails(isolated_data_env: Path) -> None:
    result = invoke("verify", "parkinsons-authors")
    assert result.exit_code == 1 and "MISSING   parkinsons-authors" in result.output


def test_path_and_export_write_the_rebuilt_bytes(fake_rebuild: bytes, isolated_data_env: Path,
                                                  tmp_path: Path) -> None:
    result = invoke("path", "adult-authors")
    assert result.exit_code == 0, result.output
    path = Path(result.output.strip())
    assert path == isolated_data_env / "authors" / "adult_original_purified.csv"
    assert path.read_bytes() == fake_rebuild
    dest = tmp_path / "out" / "adult.csv"
    result = invoke("export", "adult-authors", str(dest))
    assert result.exit_code == 0 and dest.read_bytes() == fake_rebuild


@pytest.mark.data
@pytest.mark.slow
def test_path_of_a_real_authors_file_is_the_authors_blob(data_mirror: Path, isolated_data_env: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    result = invoke("path", "parkinsons-authors")
    assert result.exit_code == 0, result.output
    path = Path(result.output.strip().splitlines()[-1])
    blob = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True).stdout
    assert blob.strip() == _authors("parkinsons").git_blob
    assert "OK        parkinsons-authors" in invoke("verify", "parkinsons-authors").output


def test_run_json_records_the_rebuilt_blob_and_the_report_judges_it(fake_rebuild: bytes, monkeypatch) -> None:
    from repro.cli.data import authors_checksums
    from repro.datasets import store
    from repro.engine.report import authors_blob_verdict

    monkeypatch.setattr(store, "cached_path", lambda src: Path(__file__))  # every raw file "cached"
    blobs = authors_checksums(("adult-data", "credit-card-tsv"))
    blob = af.git_blob_id(fake_rebuild)
    assert blobs == {"adult-authors:git-blob": blob, "credit-card-authors:git-blob": blob}
    assert authors_checksums(("compas",)) == {}  # a run without the raw files records nothing
    assert "DIFFERS" in authors_blob_verdict("adult-authors:git-blob", blob)
    assert "= the authors'" in authors_blob_verdict("adult-authors:git-blob", _authors("adult").git_blob)
    assert "INFERRED" in authors_blob_verdict("credit-card-authors:git-blob", blob)
    assert authors_blob_verdict("adult-data", "ab" * 32) is None
