"""Issue #36, experiment families: ``[append]`` merge rules, array cells, ``{placeholders}`` in notes,
the ``[[claims]]`` evaluator and ``ResultBundle.table(name, default=)``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from repro.engine.claims import Claim, ClaimError, check_expression, evaluate
from repro.engine.extends import merge_raw
from repro.engine.results import ResultBundle
from repro.engine.spec import load_experiment
from repro.errors import ExperimentFileError, NoResultsError

MINIMAL = '''title = "t"
document = "d"
section = "s"
spec = "x"
reproduces = "r"
kind = "table"
trial = "repro._testing.noop"
'''
PROFILES = '''
[profiles.smoke]
seeds = 1
[profiles.full]
seeds = 2

[[metrics]]
name = "acc"
description = "accuracy"
'''


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- merge rules


def test_tables_merge_by_key_and_arrays_replace() -> None:
    base = {"params": {"a": 1, "b": [1, 2]}, "notes": "base\n"}
    child = {"params": {"b": [3]}, "notes": "child\n"}
    assert merge_raw(base, child) == {"params": {"a": 1, "b": [3]}, "notes": "child\n"}


def test_append_extends_inherited_strings_and_arrays() -> None:
    base = {"notes": "base\n", "grid": {"method": ["a", "b"], "eps": [1]}}
    child = {"append": {"notes": "member\n", "grid": {"method": ["c"]}}}
    out = merge_raw(base, child)
    assert out == {"notes": "base\nmember\n", "grid": {"method": ["a", "b", "c"], "eps": [1]}}


@pytest.mark.parametrize(("child", "message"), [
    ({"append": {"notes": "x"}, "notes": "y"}, "both sets"),
    ({"append": {"missing": [1]}}, "appends a list to nothing"),
    ({"append": {"notes": ["x"]}}, "appends a list to str"),
    ({"append": "x"}, "must be a table"),
])
def test_append_refuses_what_it_cannot_extend(child: dict, message: str) -> None:
    with pytest.raises(ExperimentFileError, match=message):
        merge_raw({"notes": "base\n"}, child, where="m.toml")


def test_claims_merge_by_name_and_fidelity_is_not_inherited() -> None:
    base = {"claims": [{"name": "a", "expr": "1 < 2"}, {"name": "b", "expr": "1 < 2"}], "fidelity": {"status": "x"}}
    out = merge_raw(base, {"claims": [{"name": "b", "expr": "2 < 3"}, {"name": "c", "expr": "3 < 4"}]})
    assert [c["name"] for c in out["claims"]] == ["a", "b", "c"]
    assert out["claims"][1]["expr"] == "2 < 3"
    assert "fidelity" not in out


def test_a_member_file_appends_notes_and_fills_placeholders(tmp_path: Path) -> None:
    _write(tmp_path, "_base/fam.toml", MINIMAL + 'notes = "At ε = {epsilon} on {dataset}; grid {lam}.\\n"\n'
           '[params]\nepsilon = 3.0\ndataset = "adult"\n[grid]\nlam = [0.5, 1.0]\n' + PROFILES)
    member = _write(tmp_path, "m.toml", 'id = "m"\nextends = "_base/fam.toml"\n[params]\nepsilon = 9.0\n'
                    '[append]\nnotes = "Own {{epsilon}} text.\\n"\n')
    spec = load_experiment(member)
    assert spec.notes == "At ε = {epsilon} on {dataset}; grid {lam}.\nOwn {{epsilon}} text.\n"
    assert spec.rendered_notes() == "At ε = 9.0 on adult; grid [0.5, 1.0].\nOwn {epsilon} text.\n"


def test_braces_around_other_text_are_not_placeholders(tmp_path: Path) -> None:
    path = _write(tmp_path, "m.toml", 'id = "m"\n' + MINIMAL + 'notes = "λ ∈ {0.5, 1}, {−ε}, {2×2}"\n' + PROFILES)
    assert load_experiment(path).rendered_notes() == "λ ∈ {0.5, 1}, {−ε}, {2×2}"


def test_an_unknown_placeholder_is_refused_at_load_in_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "m.toml", 'id = "m"\n' + MINIMAL + 'notes = "at {epsilon}"\n[params]\ndelta = 0.1\n'
                  + PROFILES)
    with pytest.raises(ExperimentFileError, match=r"placeholder \{epsilon\} names no \[params\] key") as err:
        load_experiment(path)
    assert "\n" not in str(err.value)


def test_an_array_in_a_cell_lists_one_cell_per_value(tmp_path: Path) -> None:
    path = _write(tmp_path, "m.toml", 'id = "m"\n' + MINIMAL + 'cells = [\n  { method = "A" },\n'
                  '  { method = "B", lam = [0.5, 1.0] },\n]\n' + PROFILES)
    assert load_experiment(path).expand_cells("full") == [{"method": "A"}, {"method": "B", "lam": 0.5},
                                                          {"method": "B", "lam": 1.0}]


def test_append_without_extends_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "m.toml", 'id = "m"\n' + MINIMAL + '[append]\nnotes = "x"\n' + PROFILES)
    with pytest.raises(ExperimentFileError, match="has no `extends`"):
        load_experiment(path)


# --------------------------------------------------------------------------- claims


@pytest.fixture
def summary() -> pd.DataFrame:
    """A tiny summary: two methods over two ε values, one metric each row."""
    rows = [("OPT", 1.0, "gap", 0.10), ("OPT", 4.0, "gap", 0.05), ("GRR", 1.0, "gap", 0.12),
            ("GRR", 4.0, "gap", 0.20), ("base", float("nan"), "gap", 0.30), ("OPT", 1.0, "acc", 0.80)]
    return pd.DataFrame([{"result_id": "x", "method": m, "setting": "", "metric": k, "n": 2, "mean": v,
                          "std": 0.0, "epsilon": e} for m, e, k, v in rows])


def _holds(expr: str, summary: pd.DataFrame, threshold: object = None, **params: object) -> bool | None:
    return evaluate(Claim("c", expr, "src", threshold), summary, params=params)


@pytest.mark.parametrize(("expr", "expected"), [
    ('gap(method="OPT", epsilon=1.0) + 0.1 == 0.2', True),
    ('gap(method="GRR", epsilon=4.0) - gap(method="OPT", epsilon=4.0) > 0.14', True),
    ('gap(method="OPT", epsilon=4.0) * 2 == 0.1', True),
    ('gap(method="OPT", epsilon=4.0) / 0.05 == 1', True),
    ('2 ** 2 == 4', True),
    ('-gap(method="OPT", epsilon=1.0) < 0', True),
    ('all(gap(method="OPT") < gap(method="GRR"))', True),       # element-wise, aligned by ε
    ('gap(method="OPT") < gap(method="GRR")', True),
    ('gap(method="OPT") <= 0.07', False),                        # holds for every element, or not
    ('0.04 < gap(method="OPT") < 0.11', True),                    # chained
    ('gap(method="OPT") != gap(method="GRR")', True),
    ('any(gap(method="OPT") > 0.09) and not all(gap(method="OPT") > 0.09)', True),
    ('gap(method="OPT", epsilon=1.0) > 1 or acc(method="OPT") > 0.5', True),
    ('abs(gap(method="OPT", epsilon=1.0) - gap(method="GRR", epsilon=1.0)) <= threshold', True),
    ('max(gap(method="OPT")) == 0.1 and min(gap(method="OPT")) == 0.05', True),
    ('max(max(gap(method="OPT"), gap(method="GRR"))) == 0.2', True),   # several arguments: element-wise
    ('mean(gap(method="GRR")) == 0.16', True),
    ('first(gap(method="OPT")) == 0.1 and last(gap(method="OPT")) == 0.05', True),
    ('decreasing(gap(method="OPT")) and increasing(gap(method="GRR"))', True),
    ('decreasing(gap(method="GRR"))', False),
    ('gap(method="OPT")[-1] < threshold[0]', None),             # threshold given as a number: see below
])
def test_each_operator(expr: str, expected: bool | None, summary: pd.DataFrame) -> None:
    threshold = 0.02 if "threshold[" not in expr else None
    if expected is None:
        assert _holds(expr, summary, [0.06, 1.0]) is True
        return
    assert _holds(expr, summary, threshold) is expected


def test_parameters_and_supplied_values_are_names(summary: pd.DataFrame) -> None:
    assert _holds("T > 10", summary, T=50) is True
    assert evaluate(Claim("c", "ratio <= threshold", "s", 0.6), summary, values={"ratio": 0.5}) is True


def test_an_empty_selection_is_not_evaluable(summary: pd.DataFrame) -> None:
    assert _holds('gap(method="SS") < 1', summary) is None
    assert _holds('nosuchmetric < 1', summary) is None


@pytest.mark.parametrize("expr", [
    "__import__('os').system('true')", "gap.__class__", "[x for x in gap]", "lambda: 1", "open('f')",
    "gap(1)", 'abs(x=1)', "'text' == 'text'", "gap[1:2]", "gap(method=other)",
])
def test_unsafe_or_unknown_constructs_are_refused_in_one_line(expr: str) -> None:
    with pytest.raises(ClaimError) as err:
        check_expression(expr, where="claim 'c'")
    assert "\n" not in str(err.value) and "claim 'c'" in str(err.value)


def test_a_claim_file_is_checked_when_it_loads(tmp_path: Path) -> None:
    bad = _write(tmp_path, "m.toml", 'id = "m"\n' + MINIMAL + PROFILES +
                 '\n[[claims]]\nname = "c"\nexpr = "__import__(\'os\')"\nsource = "s"\n')
    with pytest.raises(ExperimentFileError, match="claims\\[0\\].expr"):
        load_experiment(bad)
    no_threshold = _write(tmp_path, "n.toml", 'id = "n"\n' + MINIMAL + PROFILES +
                          '\n[[claims]]\nname = "c"\nexpr = "acc < threshold"\nsource = "s"\n')
    with pytest.raises(ExperimentFileError, match="declares none"):
        load_experiment(no_threshold)
    good = _write(tmp_path, "g.toml", 'id = "g"\n' + MINIMAL + PROFILES +
                  '\n[[claims]]\nname = "c"\nexpr = "acc(method=\\"A\\") < threshold"\nthreshold = 0.9\nsource = "§1"\n')
    spec = load_experiment(good)
    assert spec.claim("c").threshold == 0.9
    verdict = evaluate(spec.claim("c"), pd.DataFrame([{"method": "A", "metric": "acc", "mean": 0.8}]))
    assert verdict is True


# --------------------------------------------------------------------------- ResultBundle.table


def test_table_default_is_returned_only_for_a_missing_table(tmp_path: Path) -> None:
    spec = load_experiment(_write(tmp_path / "exp", "m.toml", 'id = "m"\n' + MINIMAL + PROFILES))
    run = tmp_path / "run"
    (run / "tables").mkdir(parents=True)
    (run / "tables" / "here.csv").write_text("a,b\n1,2\n")
    (run / "run.json").write_text(json.dumps({"profile": "smoke"}))
    bundle = ResultBundle(spec, run, pd.DataFrame(), pd.DataFrame(), {})
    assert bundle.table("missing", default=None) is None
    assert bundle.table("missing", default="x") == "x"
    assert list(bundle.table("here", default=None)["a"]) == [1]
    with pytest.raises(NoResultsError, match="no table 'missing'"):
        bundle.table("missing")
