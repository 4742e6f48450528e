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
