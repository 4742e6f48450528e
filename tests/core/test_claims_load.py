"""A ``[[claims]]`` entry cannot silently vanish: a name it cannot resolve is refused when the file loads (or when
its study is checked), a name given twice is refused, and the report judges every declared claim."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from repro.engine.results import report_hook, report_module_name
from repro.engine.spec import load_all, load_experiment, study_of
from repro.errors import ExperimentFileError

TOY = (Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml").read_text(encoding="utf-8")


def _toy(tmp_path: Path, claims: str, name: str = "toy") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(TOY.replace('id = "toy"', f'id = "{name}"') + claims, encoding="utf-8")
    return path


def _claim(expr: str, name: str = "c") -> str:
    return f'\n[[claims]]\nname = "{name}"\nexpr = \'\'\'{expr}\'\'\'\nsource = "made up"\n'


def test_a_claim_over_known_names_loads(tmp_path: Path) -> None:
    spec = load_experiment(_toy(tmp_path, _claim('value(method="a", epsilon__ge=1) > x - 10')))
    assert spec.claim("c").expr.startswith("value(")
    study_of(spec)


@pytest.mark.parametrize(("expr", "named"), [
    ('valeu(method="a") > 0', "selects valeu(...), which is not a metric"),   # a misspelt metric
    ('mean(valeu) > 0', "names 'valeu'"),                                    # a misspelt bare name
    ('value(method="c") > 0', "filters method='c'"),                          # a method no cell has
])
def test_an_unknown_metric_name_or_method_is_refused_at_load(tmp_path: Path, expr: str, named: str) -> None:
    path = _toy(tmp_path, _claim(expr, "misspelt"))
    with pytest.raises(ExperimentFileError, match="misspelt") as err:
        load_experiment(path)
    assert named in str(err.value) and str(path) in str(err.value)


def test_an_unknown_filter_key_is_refused_when_the_study_is_checked(tmp_path: Path) -> None:
    spec = load_experiment(_toy(tmp_path, _claim('value(method="a", epsilonn=1) > 0', "bad-filter")))
    with pytest.raises(ExperimentFileError, match="bad-filter") as err:
        study_of(spec)
    assert "'epsilonn'" in str(err.value) and "toy.toml" in str(err.value)


def test_two_claims_with_one_name_are_refused(tmp_path: Path) -> None:
    twice = _claim("value(method='a') > 0", "same") + _claim("value(method='b') > 0", "same")
    with pytest.raises(ExperimentFileError, match="'same'"):
        load_experiment(_toy(tmp_path, twice))
    # also in a file that extends a base: the second entry would have replaced the first in silence
    base = tmp_path / "_base"
    base.mkdir()
    (base / "b.toml").write_text("\n".join(line for line in TOY.splitlines() if not line.startswith("id ")).split(
        "[[references]]")[0] + _claim("value(method='a') > 0", "inherited"), encoding="utf-8")
    child = tmp_path / "child.toml"
    child.write_text('id = "child"\nextends = "_base/b.toml"\n' + twice, encoding="utf-8")
    with pytest.raises(ExperimentFileError, match="'same' is declared twice"):
        load_experiment(child)


def test_every_claim_of_the_project_loads_and_is_judged_by_its_report() -> None:
    """Each experiment's claims resolve (load_all is strict), and its report either renders them itself (the
    study's report module judges them) or leaves them to the engine's claims table."""
    for spec in load_all(strict=True).values():
        if not spec.claims:
            continue
        study_of(spec)
        if report_hook(spec, "report_markdown") is not None:
            source = inspect.getsource(importlib.import_module(report_module_name(spec)))
            assert "evaluate_all(" in source, f"{spec.id}: its report text does not judge its claims"
