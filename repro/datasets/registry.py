"""The dataset registry: ``load(name, data=...)`` and the 75/25 split policy of each data mode, once.

A tabular dataset is one loader module in :mod:`repro.datasets` whose loader carries the
:func:`tabular_dataset` decorator; the registry finds those modules by scanning the package folder
(no hand-written list), so adding a dataset is one file. Two data modes (issue 13):

``authors``
    The authors' processed file rebuilt from the raw data (:mod:`repro.datasets.authors_files`,
    named ``<name>-authors``) and their ONE fixed split ``df.sample(frac=0.75, random_state=100)``,
    the same for every repetition (:func:`repro.datasets.authors_files.authors_split`).
``clean``
    Our deduplicated canonical loader and a random ``round(0.75·n)`` / rest split drawn from the
    generator the caller passes (the caller decides its scope: one per repetition, or one fixed).

Spec: seed-003-thesis.md §2.7 step 1, §3.1; seed-004-dpfermi.md §7.1; issue 13 (data modes).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from repro.datasets.tabular import TabularDataset, train_test_indices
from repro.errors import InvalidParameterError, UnknownNameError

__all__ = ["DATA_MODES", "DEFAULT_DATA", "DatasetEntry", "tabular_dataset", "dataset_names", "get_dataset",
           "load", "train_test_split", "check_data_mode"]

#: the data modes, in the order the experiment files list them; the default is the papers' setting
DATA_MODES = ("authors", "clean")
DEFAULT_DATA = "authors"
#: the registry's folder is scanned for loader modules (the trial-code hash covers every module in it)
__plugin_packages__ = ("repro.datasets",)

_DECORATOR = re.compile(r"^@tabular_dataset\(", re.MULTILINE)


@dataclass(frozen=True)
class DatasetEntry:
    """One registered dataset: its name, clean loader and defining module."""

    name: str
    loader: Callable[[], TabularDataset]
    module: str

    @property
    def has_authors_file(self) -> bool:
        from repro.datasets.authors_files import AUTHORS_DATASETS

        return self.name in AUTHORS_DATASETS

    @property
    def data_modes(self) -> tuple[str, ...]:
        return DATA_MODES if self.has_authors_file else ("clean",)


_REGISTRY: dict[str, DatasetEntry] = {}
_SCANNED = False


def tabular_dataset(name: str) -> Callable[[Callable[[], TabularDataset]], Callable[[], TabularDataset]]:
    """Register the decorated zero-argument loader as the ``clean`` data of dataset ``name``."""

    def register(loader: Callable[[], TabularDataset]) -> Callable[[], TabularDataset]:
        known = _REGISTRY.get(name)
        if known is not None and known.module != loader.__module__:
            raise RuntimeError(f"dataset {name!r} is registered twice ({known.module}, {loader.__module__})")
        _REGISTRY[name] = DatasetEntry(name, loader, loader.__module__)
        return loader

    return register


def _scan() -> None:
    """Import every module of :mod:`repro.datasets` that registers a dataset (found by its source text)."""
    global _SCANNED
    if _SCANNED:
        return
    import repro.datasets as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        path = Path(package.__path__[0]) / f"{info.name}.py"
        if not info.ispkg and path.is_file() and _DECORATOR.search(path.read_text(encoding="utf-8")):
            importlib.import_module(f"{package.__name__}.{info.name}")
    _SCANNED = True


def dataset_names() -> tuple[str, ...]:
    """Every registered tabular dataset, sorted."""
    _scan()
    return tuple(sorted(_REGISTRY))


def get_dataset(name: str) -> DatasetEntry:
    """The registry entry of ``name``; an unknown name is a one-line error naming the choices."""
    _scan()
    if name not in _REGISTRY:
        raise UnknownNameError(f"unknown dataset {name!r}; choices: {', '.join(sorted(_REGISTRY))}.")
    return _REGISTRY[name]


def check_data_mode(data: str, name: str | None = None) -> str:
    """``data`` if it is a data mode (of dataset ``name`` when given), else a one-line error naming the choices."""
    modes = DATA_MODES if name is None else get_dataset(name).data_modes
    if data not in modes:
        what = "" if name is None else f" for dataset {name!r}"
        raise InvalidParameterError(f"data must be one of {', '.join(modes)}{what}; got {data!r} "
                                    "(set it with --set data=...).")
    return data


def load(name: str, data: str = DEFAULT_DATA) -> TabularDataset:
    """Dataset ``name`` in data mode ``data`` (``authors``: the rebuilt authors' file; ``clean``: our loader).

    Both loaders cache in-process; do not mutate the arrays.
    """
    entry = get_dataset(name)
    check_data_mode(data, name)
    if data == "authors":
        from repro.datasets.authors_files import load_authors_dataset

        return load_authors_dataset(name)
    return entry.loader()


def train_test_split(n: int, data: str, *, rng: np.random.Generator | None = None, train_fraction: float = 0.75
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, test rows) of an ``n``-row dataset under data mode ``data``'s split policy.

    ``authors``: the authors' fixed ``df.sample(frac=train_fraction, random_state=100)`` (``rng`` is not
    used, so every repetition gets the same split); ``clean``: a random ``round(train_fraction·n)`` / rest
    partition drawn from ``rng`` (required). Spec: seed-003 §2.7 step 1; issue 13 (Loader).
    """
    check_data_mode(data)
    if data == "authors":
        from repro.datasets.authors_files import authors_split

        return authors_split(n, train_fraction)
    if rng is None:
        raise InvalidParameterError("the clean split needs a generator: pass rng=ctx.rng('split', ...).")
    return train_test_indices(n, train_fraction, rng=rng)
