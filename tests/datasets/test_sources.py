"""Registry of raw data files (spec: ../shared/data/MANIFEST.md)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from repro.datasets.sources import SOURCES, RawSource, get_source, source_names
from repro.errors import InvalidParameterError, UnknownNameError

EXPECTED_NAMES = {
    "adult-data", "adult-test", "adult-names", "adult-reconstruction", "compas-two-years",
    "lsac-bar-pass", "parkinsons-updrs", "parkinsons-names", "credit-card-xls",
    "credit-card-tsv", "db-adult-processed-26k", "db-lsac", "acs-income-ca-2018-test",
    "utkface-archive", "utkface-image-list",
}
CREDIT_XLS_SHA = "30c6be3abd8dcfd3e6096c828bad8c2f011238620f5369220bd60cfc82700933"


def test_registry_has_exactly_the_manifest_files() -> None:
    assert set(SOURCES) == EXPECTED_NAMES
    assert source_names() == list(SOURCES)


@pytest.mark.parametrize("src", list(SOURCES.values()), ids=list(SOURCES))
def test_every_source_is_well_formed(src: RawSource) -> None:
    assert re.fullmatch(r"[0-9a-f]{64}", src.sha256)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", src.name)
    assert src.license and src.citation and src.description
    assert src.size is None or src.size > 0
    if src.filename.startswith("derived/"):
        assert src.url is None and not src.canonical
    else:
        assert src.canonical and src.url is not None and src.url.startswith("https://")
        # canonical files keep the canonical name: the URL ends with it (percent-encoded)
        assert src.url.endswith(src.filename.replace(" ", "%20"))


def test_names_filenames_and_digests_are_unique() -> None:
    srcs = list(SOURCES.values())
    assert len({s.filename for s in srcs}) == len(srcs)
    assert len({s.sha256 for s in srcs}) == len(srcs)


def test_specific_entries() -> None:
    xls = get_source("credit-card-xls")
    assert xls.filename == "default of credit card clients.xls"
    assert xls.sha256 == CREDIT_XLS_SHA and xls.canonical and xls.size is None
    assert "not byte-verified" in get_source("lsac-bar-pass").notes.lower()
    assert get_source("db-lsac").filename == "derived/db_LSAC.csv"
    assert get_source("adult-data").size == 3_974_305


def test_unknown_name_suggests_close_matches() -> None:
    with pytest.raises(UnknownNameError, match=r"did you mean 'adult-data'"):
        get_source("adult-dat")


def test_unknown_name_without_close_match_lists_valid_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        get_source("zzzz")
    assert "db-lsac" in str(info.value) and "repro data list" in str(info.value)


@pytest.mark.parametrize(
    "change",
    [{"sha256": "ABC"}, {"sha256": "g" * 64}, {"filename": "../escape.csv"},
     {"filename": "/abs.csv"}, {"filename": "a//b"}, {"name": "Adult_Data"}, {"size": -1}],
)
def test_raw_source_rejects_bad_fields(change: dict) -> None:
    with pytest.raises(InvalidParameterError):
        replace(get_source("adult-data"), **change)


def _parse_checksums(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            sha, filename = line.split(maxsplit=1)
            out[filename.lstrip("*")] = sha
    return out


@pytest.mark.data
def test_every_mirror_checksum_line_is_registered(data_mirror: Path) -> None:
    listed = _parse_checksums(data_mirror / "checksums.sha256")
    by_file = {s.filename: s for s in SOURCES.values()}
    assert len(listed) == 14
    for filename, sha in listed.items():
        assert filename in by_file, f"{filename} is in checksums.sha256 but not registered"
        src = by_file[filename]
        assert src.sha256 == sha, filename
        assert src.size == (data_mirror / filename).stat().st_size, filename
    # the only registered file that is not in the mirror is the canonical credit-card xls
    assert set(by_file) - set(listed) == {"default of credit card clients.xls"}
