"""The dataset registry: names found from the loader modules, the two data modes and their split policy."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from repro.datasets import authors_files, registry
from repro.datasets.authors_files import authors_split, load_authors_dataset
from repro.engine import cache
from repro.errors import InvalidParameterError, UnknownNameError

PACKAGE = Path(registry.__file__).parent


def _decorated_modules() -> dict[str, str]:
    """dataset name -> module, read from the decorators in the package's source (not from the registry)."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                for dec in node.decorator_list:
                    if isinstance(dec, ast.Call) and getattr(dec.func, "id", "") == "tabular_dataset":
                        found[dec.args[0].value] = f"repro.datasets.{path.stem}"
    return found


def test_every_decorated_loader_is_found_without_a_list() -> None:
    expected = _decorated_modules()
    assert {"adult", "credit-card", "retired-adult", "parkinsons"} <= set(expected)
    assert registry.dataset_names() == tuple(sorted(expected))
    for name, module in expected.items():
        assert registry.get_dataset(name).module == module


def test_authors_mode_exactly_where_an_authors_file_exists() -> None:
    for name in registry.dataset_names():
        modes = registry.get_dataset(name).data_modes
        assert modes == (("authors", "clean") if name in authors_files.AUTHORS_DATASETS else ("clean",))


def test_unknown_name_or_mode_is_one_line_naming_the_choices() -> None:
    with pytest.raises(UnknownNameError) as err:
        registry.load("adultt")
    msg = str(err.value)
    assert "\n" not in msg and "'adultt'" in msg and "credit-card" in msg and "parkinsons" in msg
    with pytest.raises(InvalidParameterError, match="data must be one of authors, clean for dataset 'adult'; got 'raw'"):
        registry.load("adult", "raw")
    with pytest.raises(InvalidParameterError, match="data must be one of clean for dataset 'compas'"):
        registry.load("compas", "authors")
    with pytest.raises(InvalidParameterError, match="data must be one of authors, clean"):
        registry.train_test_split(10, "Authors")


def test_authors_split_ignores_the_generator_clean_split_follows_it() -> None:
    n = 1001
    a1 = registry.train_test_split(n, "authors", rng=np.random.default_rng(1))
    a2 = registry.train_test_split(n, "authors", rng=np.random.default_rng(2))
    for got, want in zip(a1, authors_split(n), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(a1[0], a2[0])
    c1 = registry.train_test_split(n, "clean", rng=np.random.default_rng(1))
    c1b = registry.train_test_split(n, "clean", rng=np.random.default_rng(1))
    c2 = registry.train_test_split(n, "clean", rng=np.random.default_rng(2))
    np.testing.assert_array_equal(c1[0], c1b[0])
    assert not np.array_equal(c1[0], c2[0])
    for train, test in (a1, c1):  # a partition, 75 % training rows (round half to even)
        assert train.size == round(0.75 * n) and np.union1d(train, test).tolist() == list(range(n))
        assert np.intersect1d(train, test).size == 0
    with pytest.raises(InvalidParameterError, match="generator"):
        registry.train_test_split(n, "clean")


def test_registry_modules_are_trial_code() -> None:
    """The trial cache's code hash covers the loader modules the registry finds at run time."""
    cache.trial_code_modules.cache_clear()
    mods = cache.trial_code_modules("repro.studies.dpfermi.tradeoff_figures")
    for module in _decorated_modules().values():
        assert module in mods


@pytest.mark.data
def test_load_both_modes(data_mirror, isolated_data_env, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    load_authors_dataset.cache_clear()
    authors_files._csv.cache_clear()
    assert registry.load("parkinsons", "authors").name == "parkinsons-authors"
    clean = registry.load("parkinsons", "clean")
    assert clean is registry.get_dataset("parkinsons").loader()
    assert clean.name == "parkinsons"
    assert registry.DEFAULT_DATA == "authors"
