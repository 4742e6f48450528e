"""Datasets: the registry of raw data files and their verified local cache.

Spec: ../shared/data/MANIFEST.md. :mod:`repro.datasets.sources` registers every raw file (name,
canonical URL, sha256, size, provenance); :mod:`repro.datasets.store` finds, copies or downloads
them into the cache (``REPRO_DATA_DIR``, default ``./data``), verifying sha256 and writing
atomically. Dataset loaders build on :func:`fetch`.
"""

from repro.datasets.sources import SOURCES, RawSource, get_source, source_names
from repro.datasets.store import (
    VerifyRow,
    cached_path,
    data_dir,
    dataset_checksums,
    fetch,
    is_obtainable,
    mirror_dir,
    mirror_path,
    offline,
    sha256_file,
    verify,
)

__all__ = [
    "SOURCES",
    "RawSource",
    "VerifyRow",
    "cached_path",
    "data_dir",
    "dataset_checksums",
    "fetch",
    "get_source",
    "is_obtainable",
    "mirror_dir",
    "mirror_path",
    "offline",
    "sha256_file",
    "source_names",
    "verify",
]
