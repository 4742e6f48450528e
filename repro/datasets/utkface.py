"""UTKFace (aligned & cropped faces) as in DP-FERMI's Figure 5: images, 9 age bins, race.

Spec: seed-004-dpfermi.md §7.1 (UTKFace row), §7.5 (input resized to 128 px); ../shared/data/MANIFEST.md
(``derived/UTKFace.tar.gz`` and its per-image list ``derived/UTKFace.images.sha256``).

Sources: the registered files ``utkface-archive`` (all 23,708 JPEGs, 200×200×3, original bytes in a
repacked archive) and ``utkface-image-list`` (the per-image sha256 list, pinned by its own sha256).

What this module does (every choice):

1. **Extraction, verified image by image.** The archive is read member by member; every member must be
   a plain file ``UTKFace/<name>`` whose name is in the list and whose sha256 equals the listed one, and
   the extracted set must equal the list exactly. Extraction goes to a temporary folder beside the final
   one and is renamed into place (:func:`os.replace`) only when every image checked out, so the cache
   never holds a partial or unverified copy. A stamp records the list's sha256.
2. **Names** ``[age]_[gender]_[race]_[datetime].jpg.chip.jpg``. Three names lack the race field and are
   skipped, as the authors did; one has a space before ``.jpg`` and one lacks the dot before ``jpg`` —
   both are parsed. **23,705 usable images.**
3. **Label**: age in 9 bins (0,10], (10,15], (15,20], (20,25], (25,30], (30,40], (40,50], (50,60],
   (60,120] → 0..8 (the authors' code, spec §7.1). **Sensitive attribute**: race 0 White, 1 Black,
   2 Asian, 3 Indian, 4 Others (k = 5).
4. **Decoding**: Pillow, RGB, resized to ``resolution``² with bilinear filtering (which Pillow
   antialiases on downsampling, as torchvision's ``Resize`` on PIL images does), stored as uint8 NHWC.
   The full set is decoded **once per resolution** into ``utkface/utkface_<r>px_<list sha>_v1.npy`` in
   the cache (atomic write); small subsets (≤ 2,000 images, the smoke profile) are decoded directly when
   no cache exists, so CI does not decode 23,705 images.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from repro.datasets.entry import Dataset
from repro.datasets.sources import get_source
from repro.datasets.store import data_dir, fetch
from repro.errors import ChecksumMismatchError, DataUnavailableError, InvalidParameterError

__all__ = [
    "DATASET",
    "ARCHIVE_SOURCE",
    "LIST_SOURCE",
    "AGE_EDGES",
    "RACES",
    "N_IMAGES",
    "N_USABLE",
    "UTKFaceIndex",
    "parse_name",
    "age_bins",
    "read_image_list",
    "extract_verified",
    "image_folder",
    "load_index",
    "load_images",
    "decode_images",
]

log = logging.getLogger(__name__)

ARCHIVE_SOURCE = "utkface-archive"
LIST_SOURCE = "utkface-image-list"
#: right edges of the 9 age bins (a, b]; the first bin starts at 0
AGE_EDGES = (10, 15, 20, 25, 30, 40, 50, 60, 120)
RACES = ("White", "Black", "Asian", "Indian", "Others")
N_IMAGES = 23_708
N_USABLE = 23_705
#: decode small subsets directly (without building the per-resolution cache) up to this many images
DIRECT_DECODE_MAX = 2_000
_FOLDER = "UTKFace"
_NAME_RE = re.compile(r"^(\d+)_(\d+)_(\d+)_(\d+) ?\.?jpg\.chip\.jpg$")
_CACHE_VERSION = 1


def parse_name(name: str) -> tuple[int, int, int] | None:
    """(age, gender, race) of an image name, or None if the name lacks a field (3 images).

    Spec: MANIFEST.md (names ``[age]_[gender]_[race]_[datetime].jpg.chip.jpg``)."""
    m = _NAME_RE.match(name)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def age_bins(age: np.ndarray) -> np.ndarray:
    """Age → bin 0..8 for (0,10], (10,15], …, (50,60], (60,120]. Spec: seed-004 §7.1 (UTKFace row)."""
    age = np.asarray(age)
    if age.size and (age.min() <= 0 or age.max() > AGE_EDGES[-1]):
        raise InvalidParameterError(
            f"UTKFace ages must lie in (0, {AGE_EDGES[-1]}]; got {age.min()}..{age.max()}."
        )
    return np.searchsorted(np.asarray(AGE_EDGES), age, side="left").astype(np.int64)


def read_image_list(path: Path) -> dict[str, str]:
    """{image name: sha256} from a ``sha256  name`` list (names may contain a space)."""
    out: dict[str, str] = {}
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line:
            continue
        digest, sep, name = line.partition("  ")
        if not sep or not re.fullmatch(r"[0-9a-f]{64}", digest) or not name or "/" in name:
            raise DataUnavailableError(
                f"{path}: line {i} is not 'sha256  name'; check the file with `repro data verify`."
            )
        out[name] = digest
    return out


def extract_verified(archive: Path, expected: dict[str, str], dest: Path) -> Path:
    """Extract ``archive``'s ``UTKFace/`` images into ``dest``, checking every image against ``expected``.

    Atomic: writes a temporary folder beside ``dest`` and renames it into place only if every member is
    listed, matches its sha256, and no listed image is missing.

    Raises
    ------
    ChecksumMismatchError
        On an unlisted, duplicate, mismatching or missing image (nothing is left in the cache).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part"))
    try:
        seen: set[str] = set()
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                if member.isdir() and member.name.rstrip("/") == _FOLDER:
                    continue
                folder, _, name = member.name.partition("/")
                if not member.isfile() or folder != _FOLDER or not name or "/" in name:
                    raise ChecksumMismatchError(
                        f"{archive}: unexpected member {member.name!r} "
                        "(only files UTKFace/<name> are allowed); "
                        "replace the archive with an intact copy."
                    )
                if name not in expected or name in seen:
                    raise ChecksumMismatchError(
                        f"{archive}: image {name!r} is "
                        f"{'duplicated' if name in seen else 'not in the image list'}; "
                        "replace the archive with an intact copy."
                    )
                data = tar.extractfile(member).read()
                actual = hashlib.sha256(data).hexdigest()
                if actual != expected[name]:
                    raise ChecksumMismatchError(
                        f"{archive}: image {name!r} has sha256 {actual}, expected {expected[name]}; "
                        "replace the archive with an intact copy."
                    )
                (tmp / name).write_bytes(data)
                seen.add(name)
        missing = sorted(set(expected) - seen)
        if missing:
            raise ChecksumMismatchError(
                f"{archive}: {len(missing)} listed images are missing (e.g. {missing[0]!r}); "
                "replace the archive with an intact copy."
            )
        (tmp / ".verified").write_text(json.dumps({"images": len(seen)}) + "\n", encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive POSIX lock on ``path`` (created if absent) for the block: the workers of one run
    that build the same cache entry take turns, each re-checking the entry once it holds the lock. Without
    POSIX locks (Windows) the block runs unlocked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            import fcntl
        except ImportError:
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cache_root() -> Path:
    return data_dir() / "utkface"


def image_folder() -> Path:
    """The verified extracted image folder in the cache, extracting the archive first if needed.

    Raises
    ------
    DataUnavailableError
        If the archive or the list is neither cached nor in the mirror (no public URL serves these bytes).
    """
    list_path = fetch(LIST_SOURCE)
    stamp_sha = get_source(LIST_SOURCE).sha256
    folder = _cache_root() / _FOLDER
    stamp = _cache_root() / f"{_FOLDER}.verified"

    def verified() -> bool:
        return folder.is_dir() and stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == stamp_sha

    if verified():
        return folder
    # workers of one run (--jobs 2) reach here together on a fresh cache: one extracts, the others wait
    # and reuse its folder (a second extraction replaced the folder while the first worker read it)
    with exclusive_lock(_cache_root() / f".{_FOLDER}.lock"):
        if verified():
            return folder
        expected = read_image_list(list_path)
        archive = fetch(ARCHIVE_SOURCE)
        log.info("extracting and verifying %d UTKFace images into %s", len(expected), folder)
        extract_verified(archive, expected, folder)
        stamp.write_text(stamp_sha + "\n", encoding="utf-8")
    return folder


@dataclass(frozen=True)
class UTKFaceIndex:
    """The usable images (sorted by name) and their labels: ``y`` age bin 0..8, ``s`` race 0..4."""

    names: tuple[str, ...]
    age: np.ndarray
    gender: np.ndarray
    y: np.ndarray
    s: np.ndarray

    @property
    def n(self) -> int:
        return len(self.names)


def load_index() -> UTKFaceIndex:
    """Names and labels of the 23,705 usable images, from the verified image list (no decoding).

    Spec: seed-004 §7.1 (UTKFace row)."""
    listed = read_image_list(fetch(LIST_SOURCE))
    names, fields = [], []
    for name in sorted(listed):
        parsed = parse_name(name)
        if parsed is None:
            continue
        names.append(name)
        fields.append(parsed)
    arr = np.asarray(fields, dtype=np.int64).reshape(-1, 3)
    if arr.size and (arr[:, 2].min() < 0 or arr[:, 2].max() >= len(RACES)):
        raise DataUnavailableError(f"UTKFace race codes must be 0..4; got {sorted(set(arr[:, 2].tolist()))}.")
    return UTKFaceIndex(tuple(names), arr[:, 0], arr[:, 1], age_bins(arr[:, 0]), arr[:, 2])


def decode_images(folder: Path, names: list[str] | tuple[str, ...], resolution: int) -> np.ndarray:
    """uint8 array (N, r, r, 3): each image decoded as RGB and resized to r×r (bilinear, antialiased)."""
    from PIL import Image

    if resolution < 8:
        raise InvalidParameterError(f"resolution must be >= 8 pixels; got {resolution}.")
    out = np.empty((len(names), resolution, resolution, 3), dtype=np.uint8)
    for i, name in enumerate(names):
        with Image.open(io.BytesIO((Path(folder) / name).read_bytes())) as im:
            im = im.convert("RGB")
            if im.size != (resolution, resolution):
                im = im.resize((resolution, resolution), Image.BILINEAR)
            out[i] = np.asarray(im, dtype=np.uint8)
    return out


def _array_cache(resolution: int) -> Path:
    """The decoded array of one resolution, named after the verified image list (and the decoder version)."""
    list_sha = get_source(LIST_SOURCE).sha256[:12]
    return _cache_root() / f"utkface_{resolution}px_{list_sha}_v{_CACHE_VERSION}.npy"


def load_images(resolution: int, indices: np.ndarray | None = None) -> np.ndarray:
    """Images of the usable set (order of :func:`load_index`), or of ``indices`` into it, at ``resolution``.

    Uses the per-resolution array cache, building it (all 23,705 images, once) unless a small subset
    (≤ 2,000 images) is asked for and no cache exists, in which case only those images are decoded.
    Spec: seed-004 §7.1, §7.5 (Resize(128))."""
    index = load_index()
    path = _array_cache(resolution)
    if path.is_file():
        arr = np.load(path, mmap_mode="r")
        if arr.shape != (index.n, resolution, resolution, 3):
            raise DataUnavailableError(f"{path} has shape {arr.shape}; delete it to rebuild the cache.")
        return np.asarray(arr if indices is None else arr[np.asarray(indices)])
    folder = image_folder()
    if indices is not None and len(indices) <= DIRECT_DECODE_MAX:
        return decode_images(folder, [index.names[i] for i in np.asarray(indices)], resolution)
    with exclusive_lock(path.with_suffix(".lock")):  # one worker decodes; the others load its array
        if path.is_file():
            arr = np.load(path, mmap_mode="r")
            return np.asarray(arr if indices is None else arr[np.asarray(indices)])
        return _decode_into_cache(folder, index, resolution, path, indices)


def _decode_into_cache(folder: Path, index: UTKFaceIndex, resolution: int, path: Path,
                       indices: np.ndarray | None) -> np.ndarray:
    """Decode every usable image at ``resolution`` and write the array cache atomically."""
    log.info("decoding %d UTKFace images at %d px into %s (once per resolution)", index.n, resolution, path)
    arr = decode_images(folder, index.names, resolution)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, arr)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return arr if indices is None else arr[np.asarray(indices)]


DATASET = Dataset(
    name="utkface", kind="image", loader=load_index, sources=(ARCHIVE_SOURCE, LIST_SOURCE), clean_split="shuffled",
    n_rows=N_USABLE,
    description="UTKFace aligned & cropped: 23,705 images, Y = age in 9 bins, A = race (k = 5) (DP-FERMI Fig. 5)",
)
