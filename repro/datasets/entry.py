"""One dataset, declared: the :class:`Dataset` entry each dataset module exports as ``DATASET``.

Modelled on folktables' ``BasicProblem``: a small frozen value that says everything the rest of the
house needs to know about a dataset, so a study, ``repro data`` and the report read the entry and
nothing else. A dataset module (``repro/datasets/adult.py``) holds the loader and, at module level::

    DATASET = Dataset(name="adult", kind="tabular", loader=load_adult, sources=("adult-data", "adult-test"),
                      authors=AuthorsFile(...))

:mod:`repro.datasets.registry` finds the entries by importing every module of the package; the split
policy of each data mode is applied by :func:`repro.datasets.split.split`.

Spec: issue 36 ("Datasets"); issue 13 (data modes, the authors' files); seed-003-thesis.md §2.7 step 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repro.errors import InvalidParameterError

if TYPE_CHECKING:
    import pandas as pd

    from repro.datasets.sources import RawSource

__all__ = ["AuthorsFile", "Dataset", "DATA_MODES", "DEFAULT_DATA", "KINDS", "SPLIT_RULES"]

#: the data modes, in the order the experiment files list them; the default is the papers' setting
DATA_MODES = ("authors", "clean")
DEFAULT_DATA = "authors"
#: what a loader returns: ``tabular`` a :class:`repro.datasets.tabular.TabularDataset` (the tabular
#: studies take any of these), ``image`` an image index (UTKFace), ``frame`` a pandas frame of coded columns
KINDS = ("tabular", "image", "frame")
#: how the ``clean`` data are split: ``random`` a sorted ``round(f·n)`` / rest partition from the
#: generator; ``shuffled`` the generator's permutation, the first ``⌊f·n⌋`` for training (both in
#: shuffled order). The ``authors`` mode is always the authors' fixed ``df.sample`` split.
SPLIT_RULES = ("random", "shuffled")


@dataclass(frozen=True)
class AuthorsFile:
    """The authors' processed file of a dataset (data mode ``authors``): how it is named, pinned, rebuilt
    (``build``: the frame pandas writes, and the raw source used) and read. Spec: issue 13 facts 1–4."""

    filename: str
    git_blob: str
    sources: tuple[str, ...]
    label: str
    sensitive: str
    numeric: tuple[str, ...]
    group_names: tuple[str, str]
    positive_group: str          # value of ``sensitive`` (as parsed) that is A = 1
    n_rows: int
    n_features: int
    canonical: bool
    recipe: str
    build: Callable[[], tuple[pd.DataFrame, str]]
    copies: int = 1              # times the source table is written (Adult: 2)
    #: (rows per person, what a row is) when a person has several rows in the source (Parkinsons)
    unit: tuple[int, str] | None = None

    def privacy_unit(self) -> tuple[int, str]:
        """(most rows of one person, what a row is): the source's unit times the copies."""
        rows, what = self.unit or (1, "one row per person")
        if self.copies == 1:
            return rows, what
        return rows * self.copies, (f"{rows * self.copies} rows per person: the authors' file writes its source "
                                    f"table {self.copies} times (source: {what})")


@dataclass(frozen=True)
class Dataset:
    """One registered dataset.

    Attributes
    ----------
    name : str
        The name experiments use (``--set dataset=NAME``).
    kind : str
        One of :data:`KINDS`; a study that needs tabular data checks it (:meth:`require`).
    loader : callable
        Zero arguments, the ``clean`` data (deterministic, cached in-process by the loader).
    sources : tuple of str
        The registered raw files it reads (:mod:`repro.datasets.sources`: file name, sha256, URL; a
        mirror holds them under that file name). ``repro data verify`` checks them.
    authors : AuthorsFile or None
        The authors' processed file; when given, the dataset has data mode ``authors``.
    clean_split : str
        The ``clean`` mode's split rule, one of :data:`SPLIT_RULES`.
    train_fraction : float
        The training share of the split (a study may pass its own).
    description : str
        One line for ``repro data list``.
    n_rows : int or None
        Rows of the ``clean`` data when known without loading them (the loader checks it); the notes'
        derived numbers (:meth:`rows`) use it.
    module : str
        The module that declares it (filled in by the registry).
    """

    name: str
    loader: Callable[[], Any]
    kind: str = "tabular"
    sources: tuple[str, ...] = ()
    authors: AuthorsFile | None = None
    clean_split: str = "random"
    train_fraction: float = 0.75
    description: str = ""
    n_rows: int | None = None
    module: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidParameterError(f"dataset {self.name!r}: kind must be one of {', '.join(KINDS)}; "
                                        f"got {self.kind!r}.")
        if self.clean_split not in SPLIT_RULES:
            raise InvalidParameterError(f"dataset {self.name!r}: clean_split must be one of "
                                        f"{', '.join(SPLIT_RULES)}; got {self.clean_split!r}.")
        if not 0 < self.train_fraction < 1:
            raise InvalidParameterError(f"dataset {self.name!r}: train_fraction must lie in (0, 1); "
                                        f"got {self.train_fraction}.")

    @property
    def has_authors_file(self) -> bool:
        return self.authors is not None

    @property
    def data_modes(self) -> tuple[str, ...]:
        """``("authors", "clean")`` when the authors' file is declared, else ``("clean",)``."""
        return DATA_MODES if self.has_authors_file else ("clean",)

    def raw_sources(self) -> tuple[RawSource, ...]:
        """The registered raw files of :attr:`sources` (name, file name, sha256, URL)."""
        from repro.datasets.sources import get_source

        return tuple(get_source(s) for s in self.sources)

    def check_mode(self, data: str) -> str:
        """``data`` if it is a data mode of this dataset, else a one-line error naming the choices."""
        if data not in self.data_modes:
            raise InvalidParameterError(f"data must be one of {', '.join(self.data_modes)} for dataset "
                                        f"{self.name!r}; got {data!r} (set it with --set data=...).")
        return data

    def rows(self, data: str = "clean") -> int | None:
        """Rows of the data in mode ``data`` as registered (the authors' file's, or :attr:`n_rows`), without
        loading them; None when the entry does not declare them."""
        self.check_mode(data)
        return self.authors.n_rows if data == "authors" else self.n_rows

    def require(self, kind: str, study: str) -> Dataset:
        """This entry if it is of ``kind``, else a one-line error saying what ``study`` needs."""
        if self.kind != kind:
            raise InvalidParameterError(f"{study} needs {kind} data; dataset {self.name!r} is {self.kind} "
                                        f"(declared in {self.module or 'its module'}).")
        return self

    def load(self, data: str = "clean") -> Any:
        """The data in mode ``data``: ``clean`` the loader's, ``authors`` the rebuilt authors' file."""
        self.check_mode(data)
        if data == "authors":
            from repro.datasets.authors_files import load_authors_dataset

            return load_authors_dataset(self)
        return self.loader()
