"""The dataset registry: names found from the loader modules, the two data modes and their split policy."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from repro.datasets import authors_files, registry
from repro.engine import cache
from repro.errors import InvalidParameterError, UnknownNameError

PACKAGE = Path(registry.__file__).parent


def _declared_modules() -> dict[str, str]:
    """dataset name -> module, read from each module's ``DATASET = Dataset(name=...)`` in the package's
    source (not from the registry)."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "DATASET" for t in node.targets)
                    and isinstance(node.value, ast.Call)):
                name = next(k.value.value for k in node.value.keywords if k.arg == "name")
                found[name] = f"repro.datasets.{path.stem}"
    return found


def test_every_declared_entry_is_found_by_import_without_a_list() -> None:
    expected = _declared_modules()
    assert {"adult", "credit-card", "retired-adult", "parkinsons", "utkface"} <= set(expected)
    assert registry.dataset_names() == tuple(sorted(expected))
    for name, module in expected.items():
        assert registry.get_dataset(name).module == module
    assert set(registry.dataset_names("tabular")) == {"adult", "adult-race", "compas", "credit-card",
                                                      "parkinsons", "retired-adult"}
    assert registry.dataset_names("image") == ("utkface",)


def test_registry_source_holds_no_regex_and_no_name_list() -> None:
    text = Path(registry.__file__).read_text(encoding="utf-8")
    assert "import re\n" not in text and "re.compile" not in text and "adult" not in text


def test_authors_mode_exactly_where_an_authors_file_is_declared() -> None:
    files = registry.authors_files()
    assert set(files) == {"adult", "retired-adult", "parkinsons", "credit-card"}
    for entry in registry.entries():
        assert entry.data_modes == (("authors", "clean") if entry.name in files else ("clean",))
        assert (entry.authors is not None) == (entry.name in files)
        assert all(len(s) > 0 for s in entry.sources) and entry.raw_sources()   # registered raw files


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
        registry.check_data_mode("Authors")


def test_a_study_checks_the_kind_not_a_name() -> None:
    with pytest.raises(InvalidParameterError, match="needs tabular data; dataset 'utkface' is image"):
        registry.get_dataset("utkface").require("tabular", "thesis Part I")
    assert registry.get_dataset("compas").require("tabular", "x").name == "compas"


def test_a_module_on_the_dataset_path_is_registered(tmp_path, monkeypatch) -> None:
    (tmp_path / "toy_extra.py").write_text(
        "from repro.datasets.entry import Dataset\n"
        "DATASET = Dataset(name='toy-extra', loader=lambda: 'rows', description='a toy')\n", encoding="utf-8")
    monkeypatch.setenv(registry.ENV_DATASET_PATH, str(tmp_path))
    registry.rescan()
    try:
        assert "toy-extra" in registry.dataset_names("tabular")
        entry = registry.get_dataset("toy-extra")
        assert entry.module == "repro.datasets.toy_extra" and registry.load("toy-extra", "clean") == "rows"
    finally:
        import repro.datasets as package

        package.__path__.remove(str(tmp_path))
        monkeypatch.delenv(registry.ENV_DATASET_PATH)
        registry.rescan()
    assert "toy-extra" not in registry.dataset_names()


def test_a_name_declared_twice_is_an_error(tmp_path, monkeypatch) -> None:
    (tmp_path / "adult_again.py").write_text(
        "from repro.datasets.entry import Dataset\nDATASET = Dataset(name='adult', loader=lambda: None)\n",
        encoding="utf-8")
    monkeypatch.setenv(registry.ENV_DATASET_PATH, str(tmp_path))
    registry.rescan()
    try:
        with pytest.raises(RuntimeError, match="declared twice"):
            registry.dataset_names()
    finally:
        import repro.datasets as package

        package.__path__.remove(str(tmp_path))
        monkeypatch.delenv(registry.ENV_DATASET_PATH)
        registry.rescan()


def test_registry_modules_are_trial_code() -> None:
    """The trial cache's code hash covers the loader modules the registry finds at run time."""
    cache.trial_code_modules.cache_clear()
    mods = cache.trial_code_modules("repro.studies.dpfermi.tradeoff_figures")
    for module in _declared_modules().values():
        assert module in mods


@pytest.mark.data
def test_load_both_modes(data_mirror, isolated_data_env, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    authors_files.load_authors_dataset.cache_clear()
    authors_files._csv.cache_clear()
    assert registry.load("parkinsons", "authors").name == "parkinsons-authors"
    clean = registry.load("parkinsons", "clean")
    assert clean is registry.get_dataset("parkinsons").loader()
    assert clean.name == "parkinsons"
    assert registry.DEFAULT_DATA == "authors"
