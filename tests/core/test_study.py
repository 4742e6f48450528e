"""The study contract: one declared :class:`repro.engine.study.Study` per study module (issue 36, part 1).

Checks the loader's one-line errors, the declaration's own checks, the spec loader's check of a
declaration against an experiment file, that every experiment's study loads and agrees with its file,
and (by grep) that nothing outside the loader reads a study module's attributes.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.engine.spec import check_study, get_experiment, load_all, study_of
from repro.engine.study import Batching, Study, load_study
from repro.errors import ExperimentFileError, InvalidParameterError

ROOT = Path(__file__).parents[2]
PKG = "repro_studytest"


def _run(params, ctx):
    return {"value": 1.0}


@pytest.fixture
def toy_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / PKG
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "missing.py").write_text("def run_trial(params, ctx):\n    return {}\n")
    (root / "wrong.py").write_text("def run_trial(params, ctx):\n    return {}\n\n\nSTUDY = {'run_trial': run_trial}\n")
    (root / "malformed.py").write_text("from repro.engine.study import Study\n\n\ndef run_trial(params, ctx):\n"
                                       "    return {}\n\n\nSTUDY = Study(run_trial=run_trial, index='knob')\n")
    (root / "unknown_field.py").write_text("from repro.engine.study import Study\n\n\ndef run_trial(params, ctx):\n"
                                           "    return {}\n\n\nSTUDY = Study(run_trial=run_trial, INDEX=('k',))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [m for m in sys.modules if m.startswith(PKG)]:
        del sys.modules[name]


@pytest.mark.parametrize(("module", "words"), [
    ("missing", "declares no STUDY; add `STUDY = Study(run_trial=run_trial, ...)`"),
    ("wrong", "STUDY is a dict, not a repro.engine.study.Study"),
    ("malformed", "its STUDY is malformed (Study.index must be a tuple of names"),
    ("unknown_field", "its STUDY is malformed (Study.__init__() got an unexpected keyword argument 'INDEX')"),
])
def test_the_loader_names_the_module_and_the_fix_in_one_line(toy_modules: Path, module: str, words: str) -> None:
    with pytest.raises(ExperimentFileError) as err:
        load_study(f"{PKG}.{module}")
    message = str(err.value)
    assert "\n" not in message and f"{PKG}.{module}" in message and words in message


def test_a_real_study_loads_as_declared() -> None:
    study = load_study("repro._testing.outputs")
    assert study.index == ("lam",) and study.values == ("label",) and study.version == "1"
    assert load_study("repro._testing.batched").batch is not None
    assert load_study("repro.studies.thesis.part1_tables").user_methods
    assert not load_study("repro.studies.thesis.theorem8").user_methods


def test_the_declaration_checks_itself() -> None:
    with pytest.raises(TypeError, match="both index and values"):
        Study(run_trial=_run, index=("a",), values=("a",))
    with pytest.raises(TypeError, match="does not declare"):
        Study(run_trial=_run, methods=("a",), variant_independent=("b",))
    with pytest.raises(TypeError, match="must be a function"):
        Study(run_trial="run_trial")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Batching"):
        Study(run_trial=_run, batch=(_run, _run))  # type: ignore[arg-type]
    assert Study(run_trial=_run, index=["k"]).index == ("k",)  # type: ignore[arg-type]
    assert Study(run_trial=_run, batch=Batching(key=_run, run=_run)).batch is not None


SPECS = load_all(ROOT / "experiments")


@pytest.mark.parametrize("experiment_id", sorted(SPECS))
def test_every_experiment_agrees_with_its_study(experiment_id: str) -> None:
    spec = SPECS[experiment_id]
    study = study_of(spec)
    assert isinstance(study, Study)
    assert set(study.scopes) <= set(spec.scopes)


def test_the_spec_loader_refuses_a_study_that_contradicts_the_file() -> None:
    spec = get_experiment("thesis-table-3.1")
    study = study_of(spec)
    with pytest.raises(ExperimentFileError, match=r"\['accuracy'\] are metrics here"):
        check_study(spec, dataclasses.replace(study, values=("accuracy",)))
    with pytest.raises(ExperimentFileError, match=r"\['lambda'\] are grid keys here"):
        check_study(spec, dataclasses.replace(study, values=("lambda",)))
    with pytest.raises(ExperimentFileError, match=r"are not methods of study .*; it declares: Algorithm 2$"):
        check_study(spec, dataclasses.replace(study, methods=("Algorithm 2",)))
    with pytest.raises(ExperimentFileError, match=r"\['adult'\] are not datasets of study"):
        check_study(spec, dataclasses.replace(study, datasets=("credit-card",)))
    with pytest.raises(ExperimentFileError, match=r"scope\(s\) \['other'\], which this file does not declare"):
        check_study(spec, dataclasses.replace(study, scopes=("split", "other")))
    check_study(spec, study)  # the real declaration agrees


def test_with_is_refused_in_one_line_where_the_study_takes_no_user_method() -> None:
    from repro.engine.user_method import USER_KEY

    spec = get_experiment("compat-fairnr")
    extra = dataclasses.replace(spec, cells=({"method": "Mine (yours)", USER_KEY: "x.py:Mine@0"},))
    with pytest.raises(InvalidParameterError, match="does not take your own method") as err:
        check_study(extra, study_of(spec))
    assert "\n" not in str(err.value)


def _code_lines(*folders: str) -> list[tuple[str, int, str]]:
    out = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                out.append((str(path.relative_to(ROOT)), i, line.split("#", 1)[0]))
    return out


#: the attributes of the old nine-attribute contract, read from a module by name
_OLD = re.compile(r"""getattr\([^)]*["'](INDEX|VALUES|VERSION|USER_METHODS|VARIANT_INDEPENDENT_METHODS|REQUIRES|"""
                  r"""batch_key|run_trials|run_trial|STUDY)["']|\.(run_trials|batch_key)\(""")


def test_nothing_outside_the_loader_reads_a_study_module() -> None:
    hits = [f"{p}:{i}" for p, i, code in _code_lines("repro", "tests")
            if _OLD.search(code) and p != "repro/engine/study.py" and p != "tests/core/test_study.py"]
    assert not hits, hits
    assert _OLD.search('getattr(module, "VERSION", "0")') and _OLD.search("module.run_trials(x)")


def test_no_study_module_keeps_the_old_attributes() -> None:
    old = re.compile(r"^(INDEX|VALUES|VERSION|USER_METHODS|VARIANT_INDEPENDENT_METHODS|REQUIRES)\s*=", re.M)
    bad = [str(p.relative_to(ROOT)) for folder in ("repro/studies", "repro/_testing")
           for p in sorted((ROOT / folder).rglob("*.py")) if old.search(p.read_text(encoding="utf-8"))]
    assert not bad, bad
