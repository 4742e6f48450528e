"""A figure whose paper values are not comparable says so across its top (repro/engine/results.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.engine.results import ResultBundle, _marked, figure_mark, write_results
from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import ExperimentSpec, load_experiment


@pytest.fixture
def spec() -> ExperimentSpec:
    return load_experiment(Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml")


@pytest.mark.parametrize(("profile", "overrides", "mark"), [
    ("smoke", {}, "smoke profile: wiring check, not a reproduction; paper points are context only"),
    ("full", {}, None),
    ("full", {"x": ["2.0"]}, "not comparable to the paper (x: 2.0 ≠ 1.0); paper points are context only"),
    ("full", {"epsilon": ["1.0", "2.0"]}, None),   # the reference's cell, ε = 1, is in the paper's grid
])
def test_the_mark_follows_the_comparability_rule(spec: ExperimentSpec, tmp_path: Path, profile: str,
                                                 overrides: dict, mark: str | None) -> None:
    outcome = run_experiment(spec, RunConfig(out=tmp_path, profile=profile, overrides=overrides))
    bundle = ResultBundle.load(spec, write_results(outcome, command="x", dataset_sha256={}))
    assert figure_mark(bundle) == mark


def test_a_marked_figure_carries_the_words_when_saved(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    with _marked("smoke profile: wiring check, not a reproduction"):
        fig.savefig(tmp_path / "a.png", bbox_inches="tight")
    assert [t.get_text() for t in fig.texts] == ["smoke profile: wiring check, not a reproduction"]
    fig.savefig(tmp_path / "b.png")   # outside the block nothing is added
    assert len(fig.texts) == 1
    plt.close(fig)


def test_a_partly_comparable_run_marks_only_its_context_points(tmp_path: Path) -> None:
    """A reference of every ε of method a, a run that adds ε = 2 (not in the paper's grid): that row is context,
    the ε = 1 row is judged, and the figure says how many are context."""
    text = (Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml").read_text(encoding="utf-8")
    path = tmp_path / "toy.toml"
    path.write_text(text.replace("setting = { epsilon = 1.0 }\n", ""), encoding="utf-8")
    spec = load_experiment(path)
    outcome = run_experiment(spec, RunConfig(out=tmp_path, profile="full", overrides={"epsilon": ["1.0", "2.0"]}))
    rows = outcome.summary[(outcome.summary["method"] == "a") & (outcome.summary["metric"] == "value")]
    assert rows["comparable"].tolist() == [True, False]
    assert rows["condition"].tolist()[1] == "epsilon: 2.0 ≠ one of 1.0, 3.0"
    bundle = ResultBundle.load(spec, write_results(outcome, command="x", dataset_sha256={}))
    assert figure_mark(bundle) == ("1 of 2 paper values not comparable (epsilon: 2.0 ≠ one of 1.0, 3.0): those "
                                   "points are context only")
