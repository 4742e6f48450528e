"""Experiment files that share blocks (``extends``), unsafe files (not UTF-8, a ``trial`` that is not a
study module) and a missing experiments folder: issue #20 item 6, issue #24 item 1."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from repro.engine.extends import merge_raw
from repro.engine.spec import (
    experiments_dir,
    get_experiment,
    load_all,
    load_experiment,
    skipped_files,
)
from repro.errors import ExperimentFileError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml"


def _split_toy(folder: Path) -> None:
    """toy.toml as a base file (everything but id and references) and a child that extends it."""
    text = FIXTURE.read_text()
    head, refs = text.split("[[references]]", 1)
    (folder / "_base").mkdir(parents=True)
    (folder / "_base" / "common.toml").write_text(head.replace('id = "toy"\n', ""))
    (folder / "toy.toml").write_text('id = "toy"\nextends = "_base/common.toml"\n[params]\nx = 2.0\n'
                                     "[[references]]" + refs)


def test_merge_rule() -> None:
    base = {"id": "b", "aliases": ["x"], "references": [{"metric": "m"}], "params": {"a": 1, "b": 2},
            "domains": {"a": {"gt": 0}, "b": {"min": 1}},
            "grid": {"e": [1.0, 2.0]}, "metrics": [{"name": "m", "description": "old"}, {"name": "n"}],
            "kind": "table"}
    child = {"domains": {"a": {"min": 1}}, "params": {"b": 3}, "grid": {"e": [5.0]}, "metrics": [{"name": "m", "description": "new"},
                                                                   {"name": "o"}]}
    merged = merge_raw(base, child)
    assert merged["params"] == {"a": 1, "b": 3}          # tables merge key by key
    assert merged["domains"] == {"a": {"min": 1}, "b": {"min": 1}}  # a domain is replaced whole
    assert merged["grid"] == {"e": [5.0]}                # arrays replace
    assert [m["name"] for m in merged["metrics"]] == ["m", "n", "o"]  # metrics: replaced in place, extended
    assert merged["metrics"][0]["description"] == "new"
    assert "id" not in merged and "aliases" not in merged and "references" not in merged
    assert merged["kind"] == "table"


def test_extends_gives_the_same_spec_as_the_full_file(tmp_path: Path) -> None:
    _split_toy(tmp_path)
    full = FIXTURE.read_text().replace("x = 1.0", "x = 2.0")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "toy.toml").write_text(full)
    a, b = load_experiment(tmp_path / "toy.toml"), load_experiment(tmp_path / "full" / "toy.toml")
    assert a.params == {"x": 2.0}
    assert {**a.__dict__, "path": None} == {**b.__dict__, "path": None}
    assert list(load_all(tmp_path)) == ["toy"]            # the base file is no experiment


def test_extends_an_experiment_by_id(tmp_path: Path) -> None:
    (tmp_path / "toy.toml").write_text(FIXTURE.read_text())
    (tmp_path / "toy2.toml").write_text('id = "toy2"\nextends = "toy"\ntitle = "Toy 2"\n[grid]\nepsilon = [9.0]\n')
    spec = load_all(tmp_path, strict=True)["toy2"]
    assert spec.title == "Toy 2" and spec.grid == {"method": ["a", "b"], "epsilon": [9.0]}
    assert spec.references == () and spec.metric_names == ("value", "shared")  # references never inherited


def test_extends_cycle_and_missing_base_are_one_line(tmp_path: Path) -> None:
    _split_toy(tmp_path)
    base = tmp_path / "_base" / "common.toml"
    base.write_text('extends = "../toy.toml"\n' + base.read_text())
    with pytest.raises(ExperimentFileError, match=r"cycle: toy.toml -> common.toml -> toy.toml") as exc:
        load_experiment(tmp_path / "toy.toml")
    assert "\n" not in str(exc.value)
    (tmp_path / "toy.toml").write_text((tmp_path / "toy.toml").read_text().replace("common", "gone"))
    with pytest.raises(ExperimentFileError, match=r"toy.toml: key 'extends': names '_base/gone.toml', but .*gone"):
        load_experiment(tmp_path / "toy.toml")


def test_a_base_file_cannot_hold_references(tmp_path: Path) -> None:
    _split_toy(tmp_path)
    base = tmp_path / "_base" / "common.toml"
    base.write_text(base.read_text() + '\n[[references]]\nmetric = "value"\nvalue = 1.0\nsource = "x"\n')
    with pytest.raises(ExperimentFileError, match="common.toml: key 'references': is not allowed in a base file"):
        load_experiment(tmp_path / "toy.toml")


def _toy_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "toy.toml").write_text(FIXTURE.read_text())
    return folder


def test_non_utf8_file_is_reported_and_skipped(tmp_path: Path) -> None:
    folder = _toy_folder(tmp_path)
    (folder / "latin.toml").write_bytes('id = "latin"\ntitle = "caf\xe9"\n'.encode("latin-1"))
    assert list(load_all(folder)) == ["toy"]
    (error,) = skipped_files(folder).values()
    assert "not UTF-8" in str(error) and "\n" not in str(error)
    assert get_experiment("toy", folder).id == "toy"
    with pytest.raises(ExperimentFileError, match="latin.toml: not UTF-8"):
        get_experiment("latin", folder)


@pytest.mark.parametrize(("trial", "message"), [
    ("this", "must name a study module under repro.studies."),
    ("os", "must name a study module under repro.studies."),
    ("repro.studies.nope.missing", "does not exist"),
    ("repro.studies.thesis", r"declares no top-level `STUDY = Study\("),
    ("repro.studies.thesis.part1_tables_report", r"declares no top-level `STUDY = Study\("),
    ("repro.studies..x", "must name a study module"),
])
def test_trial_must_be_a_study_module_and_is_not_imported(tmp_path: Path, trial: str, message: str) -> None:
    folder = _toy_folder(tmp_path)
    path = folder / "toy.toml"
    path.write_text(path.read_text().replace('"repro._testing.trials"', f'"{trial}"'))
    before = set(sys.modules)
    with pytest.raises(ExperimentFileError, match=message):
        load_experiment(path)
    assert "this" not in set(sys.modules) - before
    assert not any(m.startswith("repro.studies.") for m in set(sys.modules) - before)


def test_trial_check_imports_nothing(tmp_path: Path) -> None:
    folder = _toy_folder(tmp_path)
    path = folder / "toy.toml"
    path.write_text(path.read_text().replace('"repro._testing.trials"', '"repro.studies.thesis.theorem8"'))
    before = set(sys.modules)
    assert load_experiment(path).trial == "repro.studies.thesis.theorem8"
    assert not any(m.startswith("repro.studies") for m in set(sys.modules) - before)


def test_missing_experiments_folder_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(tmp_path / "nonexistent"))
    with pytest.raises(ExperimentFileError, match="nonexistent: no such folder"):
        experiments_dir()
    monkeypatch.delenv("REPRO_EXPERIMENTS_DIR")
    assert (experiments_dir() / "thesis-table-3.1.toml").is_file()  # the checkout's folder, not repro/


@pytest.mark.parametrize("key", ["min", "gt"])
def test_domain_tables_are_validated(tmp_path: Path, key: str) -> None:
    folder = _toy_folder(tmp_path)
    path = folder / "toy.toml"
    text = path.read_text()
    path.write_text(text.replace("[params]", "[domains]\nx = { minimum = 0 }\n[params]"))
    with pytest.raises(ExperimentFileError, match=r"domains.x.minimum.*not part of the schema"):
        load_experiment(path)
    path.write_text(text.replace("[params]", f"[domains]\nx = {{ {key} = 2, lt = 1 }}\n[params]"))
    with pytest.raises(ExperimentFileError, match="is empty"):
        load_experiment(path)
    path.write_text(text.replace("[params]", "[domains]\nx = { gt = 0, lt = 10, integer = false }\n[params]"))
    assert load_experiment(path).domains["x"] == {"gt": 0, "lt": 10, "integer": False}
