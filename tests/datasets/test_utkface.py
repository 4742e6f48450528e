"""UTKFace loader (spec seed-004 §7.1; MANIFEST.md): names, age bins, verified atomic extraction, decoding."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from repro.datasets import utkface
from repro.datasets.utkface import (
    N_USABLE,
    age_bins,
    decode_images,
    extract_verified,
    parse_name,
    read_image_list,
)
from repro.errors import ChecksumMismatchError, DataUnavailableError, InvalidParameterError


def test_parse_names_including_the_irregular_ones() -> None:
    """MANIFEST: 3 names lack the race field (skipped); one has a space before .jpg, one lacks the dot."""
    assert parse_name("100_0_0_20170112213500903.jpg.chip.jpg") == (100, 0, 0)
    assert parse_name("24_0_1_20170116220224657 .jpg.chip.jpg") == (24, 0, 1)
    assert parse_name("55_0_0_20170116232725357jpg.chip.jpg") == (55, 0, 0)
    for bad in ("39_1_20170116174525125.jpg.chip.jpg", "61_1_20170109142408075.jpg.chip.jpg", "x.jpg"):
        assert parse_name(bad) is None


def test_age_bins_edges() -> None:
    """Bins (0,10], (10,15], (15,20], (20,25], (25,30], (30,40], (40,50], (50,60], (60,120] → 0..8."""
    ages = np.array([1, 10, 11, 15, 16, 20, 21, 25, 26, 30, 31, 40, 41, 50, 51, 60, 61, 116, 120])
    assert age_bins(ages).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 8]
    with pytest.raises(InvalidParameterError, match=r"\(0, 120\]"):
        age_bins(np.array([0, 5]))
    with pytest.raises(InvalidParameterError, match=r"\(0, 120\]"):
        age_bins(np.array([121]))


def _jpeg(seed: int, size: int = 24) -> bytes:
    from PIL import Image

    arr = np.random.default_rng(seed).integers(0, 256, size=(size, size, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG")
    return buf.getvalue()


def _archive(tmp_path: Path, files: dict[str, bytes], name: str = "a.tar.gz") -> Path:
    path = tmp_path / name
    with tarfile.open(path, "w:gz") as tar:
        for member, data in files.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


NAMES = ("1_0_0_1.jpg.chip.jpg", "30_1_4_2.jpg.chip.jpg", "24_0_1_3 .jpg.chip.jpg")


def _listing(files: dict[str, bytes]) -> dict[str, str]:
    return {n: hashlib.sha256(b).hexdigest() for n, b in files.items()}


def test_extract_verified_ok_and_atomic(tmp_path: Path) -> None:
    images = {n: _jpeg(i) for i, n in enumerate(NAMES)}
    archive = _archive(tmp_path, {f"UTKFace/{n}": b for n, b in images.items()})
    dest = extract_verified(archive, _listing(images), tmp_path / "cache" / "UTKFace")
    assert sorted(p.name for p in dest.iterdir() if not p.name.startswith(".")) == sorted(NAMES)
    assert (dest / NAMES[2]).read_bytes() == images[NAMES[2]]
    assert [p.name for p in dest.parent.iterdir()] == ["UTKFace"]  # no temporary folder left


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ("tamper", "has sha256"),
        ("missing", "listed images are missing"),
        ("extra", "not in the image list"),
        ("traversal", "unexpected member"),
    ],
)
def test_extract_verified_rejects_and_leaves_nothing(tmp_path: Path, change: str, match: str) -> None:
    """Every image is checked: a changed byte, a missing or unlisted image, or a path outside UTKFace/ fails,
    and neither the destination nor a temporary folder remains."""
    images = {n: _jpeg(i) for i, n in enumerate(NAMES)}
    listing = _listing(images)
    members = {f"UTKFace/{n}": b for n, b in images.items()}
    if change == "tamper":
        members[f"UTKFace/{NAMES[1]}"] = images[NAMES[1]][:-1] + b"\x00"
    elif change == "missing":
        del members[f"UTKFace/{NAMES[0]}"]
    elif change == "extra":
        members["UTKFace/99_0_0_9.jpg.chip.jpg"] = _jpeg(9)
    else:
        members["UTKFace/../evil.jpg"] = b"x"
    archive = _archive(tmp_path, members)
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumMismatchError, match=match):
        extract_verified(archive, listing, cache / "UTKFace")
    assert list(cache.iterdir()) == []
    assert not (tmp_path / "evil.jpg").exists()


def test_read_image_list_handles_spaces_and_rejects_garbage(tmp_path: Path) -> None:
    good = tmp_path / "list"
    good.write_text(f"{'a' * 64}  24_0_1_3 .jpg.chip.jpg\n{'b' * 64}  1_0_0_1.jpg.chip.jpg\n")
    assert read_image_list(good) == {"24_0_1_3 .jpg.chip.jpg": "a" * 64, "1_0_0_1.jpg.chip.jpg": "b" * 64}
    bad = tmp_path / "bad"
    bad.write_text("nonsense\n")
    with pytest.raises(DataUnavailableError, match="line 1"):
        read_image_list(bad)


def test_decode_resizes_to_uint8(tmp_path: Path) -> None:
    (tmp_path / "a.jpg").write_bytes(_jpeg(0, size=40))
    out = decode_images(tmp_path, ["a.jpg"], 16)
    assert out.shape == (1, 16, 16, 3) and out.dtype == np.uint8
    with pytest.raises(InvalidParameterError, match="resolution"):
        decode_images(tmp_path, ["a.jpg"], 4)


def test_offline_without_mirror_is_a_clear_error(isolated_data_env: Path) -> None:
    with pytest.raises(DataUnavailableError, match="REPRO_DATA_MIRROR"):
        utkface.load_index()


@pytest.mark.data
def test_real_archive_index_and_images(
    data_mirror: Path, isolated_data_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mirror copy: 23,708 listed images, 23,705 usable; label/race counts; min race share ρ ≈ 0.071;
    a small subset decodes without building the full cache; every image of the archive is verified."""
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    index = utkface.load_index()
    assert index.n == N_USABLE
    assert np.bincount(index.s).tolist() == [10078, 4526, 3434, 3975, 1692]
    assert np.bincount(index.y).tolist() == [3218, 610, 1049, 2760, 5024, 4338, 2100, 2211, 2395]
    assert np.bincount(index.s).min() / index.n == pytest.approx(0.0714, abs=1e-4)
    images = utkface.load_images(16, np.arange(5))
    assert images.shape == (5, 16, 16, 3) and images.dtype == np.uint8
    folder = utkface.image_folder()
    assert len([p for p in folder.iterdir() if p.name.endswith(".jpg")]) == 23_708
    assert not list(isolated_data_env.glob("utkface/*.npy"))  # no full decode for a subset


def test_workers_extracting_together_extract_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (a full `dpfermi-fig-5 --profile cpu --jobs 2` run on a fresh data cache failed): two
    workers both found no extracted folder, both extracted, and the second replaced the folder while the
    first was decoding from it (FileNotFoundError). Now one extracts and the other waits and reuses it."""
    import threading
    import time
    from types import SimpleNamespace

    images = {n: _jpeg(i) for i, n in enumerate(NAMES)}
    archive = _archive(tmp_path, {f"UTKFace/{n}": b for n, b in images.items()})
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f"{h}  {n}\n" for n, h in _listing(images).items()))
    monkeypatch.setattr(utkface, "fetch", lambda src: listing if src == utkface.LIST_SOURCE else archive)
    monkeypatch.setattr(utkface, "get_source", lambda src: SimpleNamespace(sha256="f" * 64))
    monkeypatch.setattr(utkface, "_cache_root", lambda: tmp_path / "cache")
    calls = []
    real = utkface.extract_verified

    def slow_extract(*args, **kwargs):
        calls.append(threading.current_thread().name)
        time.sleep(0.5)  # the other worker checks the cache meanwhile
        return real(*args, **kwargs)

    monkeypatch.setattr(utkface, "extract_verified", slow_extract)
    folders, errors = [], []

    def worker() -> None:
        try:
            folder = utkface.image_folder()
            folders.append(sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")))
        except Exception as err:  # noqa: BLE001 - reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=worker, name=f"w{i}") for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(calls) == 1
    assert folders == [sorted(NAMES)] * 2
