"""The DP-FERMI study tests' synthetic data is a registered dataset entry, as a real dataset is."""

from __future__ import annotations

import pytest

from repro.datasets import registry
from repro.datasets.entry import AuthorsFile, Dataset


@pytest.fixture(autouse=True)
def synthetic_entry(monkeypatch: pytest.MonkeyPatch) -> Dataset:
    """``dataset = "synthetic"``: a tabular entry with both data modes (its split policy is the entry's; the
    tests give the data themselves by replacing the study's ``load_dataset``)."""
    registry.entries()   # scan first: a later scan would drop the test's entry
    authors = AuthorsFile(filename="synthetic.csv", git_blob="0" * 40, sources=(), label="y", sensitive="s",
                          numeric=(), group_names=("g0", "g1"), positive_group="g1", n_rows=0, n_features=0,
                          canonical=False, recipe="test data", build=lambda: (None, "synthetic"))
    entry = Dataset(name="synthetic", loader=lambda: None, authors=authors, module=__name__)
    monkeypatch.setitem(registry._REGISTRY, "synthetic", entry)
    return entry
