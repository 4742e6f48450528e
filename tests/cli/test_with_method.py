"""`repro run ID --with FILE.py`: a researcher's method on a smoke profile of one thesis table and one DP-FERMI
figure (summary, REPORT text, figure legend, cache key), and the one-line errors of a bad method."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from repro.cli import main

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "my_method.py"
NAME = "OutputPerturbationLogisticRegression (yours)"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(ROOT / "experiments"))
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path


@pytest.fixture
def data_env(env: Path, data_mirror: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(env / "data"))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    return env


@pytest.fixture
def legends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every legend label of every figure the run saves."""
    import repro.plotting as plotting

    labels: list[str] = []
    original = plotting.save_figure

    def spy(fig, *args, **kwargs):
        for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
            if legend is not None:
                labels.extend(t.get_text() for t in legend.get_texts())
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(plotting, "save_figure", spy)
    return labels


def _run(*args: str):
    result = CliRunner().invoke(main, ["run", *args, "--seeds", "1", "--set", "data=authors", "--quiet"])
    assert result.exit_code == 0, result.output
    return result


def _directory(env: Path, experiment: str) -> Path:
    (directory,) = (env / "results" / experiment).glob("smoke*")
    return directory


def _report(env: Path, experiment: str) -> str:
    result = CliRunner().invoke(main, ["report", experiment])
    assert result.exit_code == 0, result.output
    return (env / "results" / "REPORT.md").read_text(encoding="utf-8")


@pytest.mark.data
def test_thesis_table_with_my_method(data_env: Path, legends: list[str]) -> None:
    method = data_env / "my_method.py"
    shutil.copy(EXAMPLE, method)
    _run("thesis-table-3.1", "--with", str(method))
    directory = _directory(data_env, "thesis-table-3.1")
    assert "+with-" in directory.name   # never the profile's own folder, which a plain run rewrites
    summary = pd.read_csv(directory / "summary.csv")
    mine = summary[summary["method"] == NAME].set_index("metric")
    assert {"accuracy", "sp_gap", "eps_total"} <= set(mine.index)
    assert mine.loc["eps_total", "mean"] == 3.0  # the cell's ε′ reached the method's __init__
    assert 0.5 < mine.loc["accuracy", "mean"] <= 1.0
    trials = pd.read_csv(directory / "trials.csv")
    assert set(trials.loc[trials["method"] == NAME, "eps_label"]) == {"declared by the user"}
    assert NAME in legends and "Algorithm 2 (ours)" in legends
    assert f"**{NAME}**" in _report(data_env, "thesis-table-3.1") and "*declared by the user*" in _report(
        data_env, "thesis-table-3.1")
    # the method's code hash is in its cache key: an edit retrains it and nothing else
    again = CliRunner().invoke(main, ["run", "thesis-table-3.1", "--with", str(method), "--seeds", "1",
                                      "--set", "data=authors"])
    assert "(6 cached)" in again.output
    # the terminal table shows your method's rows too, though they have no paper value beside them
    assert any(line.startswith(NAME) and "accuracy" in line for line in again.output.splitlines()), again.output
    method.write_text(method.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    edited = CliRunner().invoke(main, ["run", "thesis-table-3.1", "--with", str(method), "--seeds", "1",
                                       "--set", "data=authors"])
    assert "(5 cached)" in edited.output
    # identity is the code's hash and class, not the path: a moved file is the same trials, and no machine path
    # reaches the results (issue 24 follow-up)
    moved = data_env / "elsewhere" / "renamed.py"
    moved.parent.mkdir()
    shutil.move(method, moved)
    again = CliRunner().invoke(main, ["run", "thesis-table-3.1", "--with", str(moved), "--seeds", "1",
                                      "--set", "data=authors"])
    assert "(6 cached)" in again.output
    for path in directory.rglob("*"):
        if path.is_file() and path.suffix in (".csv", ".json", ".md"):
            assert str(data_env) not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.data
def test_dpfermi_figure_with_my_method(data_env: Path, legends: list[str]) -> None:
    _run("dpfermi-fig-2", "--with", f"{EXAMPLE}:OutputPerturbationLogisticRegression", "--set", "epsilon=1")
    directory = _directory(data_env, "dpfermi-fig-2")
    summary = pd.read_csv(directory / "summary.csv")
    assert {"error", "violation"} <= set(summary.loc[summary["method"] == NAME, "metric"])
    privacy = pd.read_csv(directory / "tables" / "privacy.csv")
    mine = privacy[privacy["method"] == NAME].iloc[0]
    assert mine["eps_label"] == "declared by the user" and mine["epsilon"] == 1.0
    assert NAME in legends and "Tran et al. (2021b), PF-LD (ours)" in legends
    assert "**Your methods**" in _report(data_env, "dpfermi-fig-2")


BAD_METHODS = {
    "no_guarantee.py": ("class M:\n    def __init__(self, random_state=None): pass\n"
                        "    def fit(self, X, y, sensitive_features=None): return self\n"
                        "    def predict(self, X): return X[:, 0] > 0\n"),
    "no_predict.py": ("import math\nfrom repro.privacy.guarantee import Guarantee, Label, Neighbouring\n"
                      "class M:\n    privacy_guarantee = Guarantee(1.0, 0.0, Label.USER_DECLARED, "
                      "Neighbouring.REPLACE_ONE, caveat='x')\n"
                      "    def __init__(self, random_state=None): pass\n"
                      "    def fit(self, X, y, sensitive_features=None): return self\n"),
    "no_init.py": ("from repro.privacy.guarantee import Guarantee, Label, Neighbouring\n"
                   "class M:\n    privacy_guarantee = Guarantee(1.0, 0.0, Label.USER_DECLARED, "
                   "Neighbouring.REPLACE_ONE, caveat='x')\n"
                   "    def fit(self, X, y, sensitive_features=None): return self\n"
                   "    def predict(self, X): return X[:, 0] > 0\n"),
    "no_fit.py": ("from repro.privacy.guarantee import Guarantee, Label, Neighbouring\n"
                  "class M:\n    privacy_guarantee = Guarantee(1.0, 0.0, Label.USER_DECLARED, "
                  "Neighbouring.REPLACE_ONE, caveat='x')\n"
                  "    def __init__(self, random_state=None): pass\n"
                  "    def predict(self, X): return X[:, 0] > 0\n"),
    "no_class.py": "x = 1\n",
    "broken.py": "raise RuntimeError('boom')\n",
}


@pytest.mark.parametrize(("ref", "message"), [
    ("missing.py", "no such file"),
    ("no_class.py", "found 0 classes with fit() and a privacy_guarantee"),
    ("no_guarantee.py:M", "has no class attribute privacy_guarantee"),
    # issue #35: the file's one class is named with what it lacks (was "found 0 classes with fit() and ...")
    ("no_guarantee.py", "class M lacks a class attribute privacy_guarantee"),
    ("no_fit.py", "class M lacks fit()"),
    ("no_predict.py:M", "has no predict() method"),
    ("no_init.py:M", "M.__init__ must accept random_state"),   # no __init__ at all: failed at trial time before
    ("broken.py", "importing the file failed: RuntimeError: boom"),
    ("no_guarantee.py:Nope", "no class 'Nope'"),
    ("repro_no_such_module:Cls", "cannot import module 'repro_no_such_module'"),
])
def test_bad_method_is_one_line_before_any_trial(env: Path, ref: str, message: str) -> None:
    for name, text in BAD_METHODS.items():
        (env / name).write_text(text, encoding="utf-8")
    target = ref if ref.startswith("repro_") else str(env / ref)
    result = CliRunner().invoke(main, ["run", "thesis-table-3.1", "--with", target])
    assert result.exit_code != 0
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not (env / "results").exists() or not any((env / "results").rglob("trials.csv"))


def test_with_needs_a_study_that_takes_methods(env: Path) -> None:
    result = CliRunner().invoke(main, ["run", "compat-fairnr", "--with", str(EXAMPLE)])
    assert result.exit_code != 0 and "does not take your own method" in result.output


PREDICTS = {   # issue #35: what a --with method's predict returned, and the words of the per-trial error
    "nan": ("p = (X[:, 0] > 0).astype(float); p[0] = float('nan'); return p", "NaN/inf"),
    "labels": ("return 2 * (X[:, 0] > 0)", "labels other than 0 and 1 (2)"),
    "half": ("return (X[:, 0] > 0)[: len(X) // 2]", "shape ("),
    "matrix": ("return np.stack([X[:, 0] > 0] * 2, axis=1)", "shape ("),
    "none": ("return None", "predict returned None"),
}


def _predicting(body: str) -> str:
    return ("import numpy as np\nfrom repro.privacy.guarantee import Guarantee, Label, Neighbouring\n"
            "class Bad:\n    privacy_guarantee = Guarantee(1.0, 0.0, Label.USER_DECLARED, "
            "Neighbouring.REPLACE_ONE, caveat='x')\n"
            "    def __init__(self, random_state=None): pass\n"
            "    def fit(self, X, y, sensitive_features=None): return self\n"
            f"    def predict(self, X):\n        {body}\n")


@pytest.mark.parametrize("case", sorted(PREDICTS))
def test_predictions_outside_the_contract_are_named(case: str) -> None:
    import numpy as np

    from repro.engine.user_method import PredictionError, checked_predictions

    namespace: dict = {}
    exec(_predicting(PREDICTS[case][0]), namespace)
    X = np.linspace(-1, 1, 10)[:, None]
    with pytest.raises(PredictionError, match=re.escape(PREDICTS[case][1])) as caught:
        checked_predictions("Bad (yours)", namespace["Bad"]().predict(X), len(X))
    assert "Bad (yours)" in str(caught.value) and "0/1 vector of the test set's length (10)" in str(caught.value)


def test_valid_predictions_pass_as_floats() -> None:
    import numpy as np

    from repro.engine.user_method import checked_predictions

    for raw in ([0, 1, 1], np.array([True, False, True]), np.array([0.0, 1.0, 0.0])):
        assert checked_predictions("M", raw, 3).dtype == float


@pytest.mark.data
def test_a_nan_predict_is_a_trial_error_naming_method_and_setting(data_env: Path) -> None:
    """A NaN predict gave accuracy 0.0, dropped the sp_gap row and exited 0 (issue #35)."""
    (data_env / "bad.py").write_text(_predicting(PREDICTS["nan"][0]), encoding="utf-8")
    result = CliRunner().invoke(main, ["run", "thesis-table-3.1", "--with", str(data_env / "bad.py"), "--seeds", "1",
                                       "--set", "data=authors", "--set", "only_method=Bad (yours)", "--quiet"])
    assert result.exit_code == 1, result.output
    line = result.output.strip().splitlines()[-1]
    assert "method 'Bad (yours)', setting 'data=authors'" in line and "NaN/inf" in line, result.output
