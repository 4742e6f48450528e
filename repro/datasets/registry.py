"""The dataset registry: every :class:`repro.datasets.entry.Dataset`, found by importing the dataset modules.

A dataset is one module whose module-level ``DATASET`` is a :class:`~repro.datasets.entry.Dataset`
entry. The registry imports every module on the package's search path (``repro.datasets.__path__``,
plus the folders of ``$REPRO_DATASET_PATH``, separated by ``os.pathsep``) and collects those entries:
no hand-written list, so adding a dataset is one file. Two data modes (issue 13):

``authors``
    The authors' processed file rebuilt from the raw data (the entry's ``authors``, read by
    :mod:`repro.datasets.authors_files`, named ``<name>-authors``) and their ONE fixed split.
``clean``
    Our canonical loader and a random split drawn from the generator the caller passes.

The split policy of each mode is applied by :func:`repro.datasets.split.split`.

Spec: seed-003-thesis.md §2.7 step 1, §3.1; seed-004-dpfermi.md §7.1; issue 13 (data modes); issue 36.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
from typing import Any

from repro.datasets.entry import DATA_MODES, DEFAULT_DATA, AuthorsFile, Dataset
from repro.errors import InvalidParameterError, UnknownNameError

__all__ = ["DATA_MODES", "DEFAULT_DATA", "ENV_DATASET_PATH", "Dataset", "authors_files", "dataset_names",
           "entries", "get_dataset", "load", "check_data_mode", "rescan"]

#: folders of extra dataset modules (each module imports as ``repro.datasets.<stem>``), os.pathsep-separated
ENV_DATASET_PATH = "REPRO_DATASET_PATH"
#: the registry's folder is scanned for dataset modules (the trial-code hash covers every module in it)
__plugin_packages__ = ("repro.datasets",)

_REGISTRY: dict[str, Dataset] = {}
_SCANNED = False


def _search_path() -> list[str]:
    """The package's ``__path__``, extended (in place, so imports find them) by ``$REPRO_DATASET_PATH``."""
    import repro.datasets as package

    for folder in filter(None, os.environ.get(ENV_DATASET_PATH, "").split(os.pathsep)):
        if not os.path.isdir(folder):
            what = "a file, not a folder" if os.path.exists(folder) else "missing (no such folder)"
            raise InvalidParameterError(
                f"{ENV_DATASET_PATH} entry {folder!r} is {what}; list folders of dataset modules, separated by "
                f"{os.pathsep!r}, or unset {ENV_DATASET_PATH}")
        folder = os.path.abspath(folder)
        if folder not in package.__path__:
            package.__path__.append(folder)
    return list(package.__path__)


def _scan() -> None:
    """Import every module on the search path and collect its ``DATASET`` entry."""
    global _SCANNED
    if _SCANNED:
        return
    found: dict[str, Dataset] = {}
    for info in sorted(pkgutil.iter_modules(_search_path()), key=lambda m: m.name):
        if info.ispkg:
            continue
        module_name = f"repro.datasets.{info.name}"
        entry = getattr(importlib.import_module(module_name), "DATASET", None)
        if not isinstance(entry, Dataset):
            continue
        known = found.get(entry.name)
        if known is not None:
            raise RuntimeError(f"dataset {entry.name!r} is declared twice ({known.module}, {module_name})")
        found[entry.name] = dataclasses.replace(entry, module=module_name)
    _REGISTRY.clear()
    _REGISTRY.update(found)
    _SCANNED = True


def rescan() -> None:
    """Forget the entries found so far; the next lookup scans the search path again (tests, plugins)."""
    global _SCANNED
    _SCANNED = False


def entries(kind: str | None = None) -> tuple[Dataset, ...]:
    """Every registered entry (of ``kind`` when given), sorted by name."""
    _scan()
    return tuple(e for _, e in sorted(_REGISTRY.items()) if kind is None or e.kind == kind)


def dataset_names(kind: str | None = None) -> tuple[str, ...]:
    """Every registered dataset name (of ``kind`` when given), sorted."""
    return tuple(e.name for e in entries(kind))


def get_dataset(name: str) -> Dataset:
    """The entry of ``name``; an unknown name is a one-line error naming the choices."""
    _scan()
    if name not in _REGISTRY:
        raise UnknownNameError(f"unknown dataset {name!r}; choices: {', '.join(sorted(_REGISTRY))}.")
    return _REGISTRY[name]


def authors_files() -> dict[str, AuthorsFile]:
    """``{dataset name: its declared authors' file}`` of every entry that has one (data mode ``authors``)."""
    return {e.name: e.authors for e in entries() if e.authors is not None}


def check_data_mode(data: str, name: str | None = None) -> str:
    """``data`` if it is a data mode (of dataset ``name`` when given), else a one-line error naming the choices."""
    if name is not None:
        return get_dataset(name).check_mode(data)
    if data not in DATA_MODES:
        raise InvalidParameterError(f"data must be one of {', '.join(DATA_MODES)}; got {data!r} "
                                    "(set it with --set data=...).")
    return data


def load(name: str, data: str = DEFAULT_DATA) -> Any:
    """Dataset ``name`` in data mode ``data`` (``authors``: the rebuilt authors' file; ``clean``: our loader).

    Both loaders cache in-process; do not mutate the arrays.
    """
    return get_dataset(name).load(data)
