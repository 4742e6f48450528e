"""Report text of thesis Tables 3.1–3.4 says only true things (issue #24, item 4).

Built on small hand-made result bundles (no training): the text must not judge a smoke run, must
not state one claim both ways, and must not explain a Credit Card row with the Adult file's
duplicated rows.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from repro.engine.results import ResultBundle
from repro.engine.spec import load_experiment
from repro.studies.thesis import part1_tables_report as rep
from repro.studies.thesis.methods.algorithm2 import ALG2, BASE
from repro.studies.thesis.methods.dp_fermi import NAME as FERMI

ROOT = Path(__file__).parents[3]


def make_bundle(tmp_path: Path, table: str, profile: str, data: str) -> ResultBundle:
    """One data mode; Algorithm 2 with a larger SP gap than DP-FERMI at equal accuracy (claim fails),
    every paper row outside tolerance."""
    spec = load_experiment(ROOT / "experiments" / f"{table}.toml")
    privacy = {"q": 0.03, "steps": 1500, "noise_multiplier": 1.1, "noise_std": 0.5, "eps_dpsgd": 1.0,
               "eps_dpsgd_rdp": 1.1, "eps_total": 3.0}
    rows = []
    for rep_ in range(2):
        rows.append({"method": ALG2, "lambda": None, "accuracy": 0.78, "sp_gap": 0.05, **privacy})
        rows.append({"method": BASE, "lambda": None, "accuracy": 0.78, "sp_gap": 0.06, **privacy})
        for lam in (0.5, 1.0):
            rows.append({"method": FERMI, "lambda": lam, "accuracy": 0.78 - 0.01 * lam + 0.001 * rep_,
                         "sp_gap": 0.01 * lam})
    trials = pd.DataFrame(rows).assign(data=data, repetition=0)
    summary = pd.DataFrame([
        {"method": m, "metric": metric, "setting": f"data={data};lambda=1.0" if m == FERMI else f"data={data}",
         "data": data, "lambda": 1.0 if m == FERMI else None, "mean": 0.5, "paper": 0.7, "diff": -0.2, "tolerance": 0.01, "within": False, "n": 2, "std": 0.0}
        for m in (ALG2, FERMI) for metric in ("accuracy", "sp_gap")])
    return ResultBundle(spec=spec, directory=tmp_path, trials=trials, summary=summary,
                        run={"profile": profile, "variant": "reference"})


@pytest.mark.parametrize("table", ["thesis-table-3.1", "thesis-table-3.3"])
def test_smoke_report_prints_no_verdicts(tmp_path: Path, table: str) -> None:
    text = rep.report_markdown(make_bundle(tmp_path, table, "smoke", "authors"))
    lowered = text.lower()
    for verdict in ("does not hold", "**holds**", "still holds", "outside tolerance", "within its tolerance"):
        assert verdict not in lowered, verdict
    assert "smoke profile" in lowered and "not compared" in lowered


@pytest.mark.parametrize("data", ["authors", "clean"])
def test_full_report_states_each_claim_one_way(tmp_path: Path, data: str) -> None:
    text = rep.report_markdown(make_bundle(tmp_path, "thesis-table-3.3", "full", data))
    assert "**does not hold**" in text  # the hand-made bundle breaks the claim
    assert "still holds" not in text and "**holds**" not in text


def test_credit_card_rows_are_not_explained_by_the_adult_duplicates(tmp_path: Path) -> None:
    for data in ("authors", "clean"):
        text = rep.report_markdown(make_bundle(tmp_path, "thesis-table-3.3", "full", data))
        assert "adult.data" not in text and "74.8" not in text


def test_adult_clean_rows_still_cite_the_duplicates(tmp_path: Path) -> None:
    text = rep.report_markdown(make_bundle(tmp_path, "thesis-table-3.1", "full", "clean"))
    assert "74.8 %" in text and "adult.data twice" in text


def test_sp_gap_error_bars_stop_at_zero(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import LineCollection

    bundle = make_bundle(tmp_path, "thesis-table-3.1", "full", "authors")
    # a small mean with a large spread: a symmetric bar would reach below 0
    t = bundle.trials
    t.loc[(t["method"] == ALG2), "sp_gap"] = [0.001, 0.02]
    captured = []
    import matplotlib.axes

    original = matplotlib.axes.Axes.errorbar

    def spy(self, *args, **kwargs):
        container = original(self, *args, **kwargs)
        captured.append(container)
        return container

    mp = pytest.MonkeyPatch()
    mp.setattr(matplotlib.axes.Axes, "errorbar", spy)
    try:
        paths = rep.plot(bundle, tmp_path / "fig")
    finally:
        mp.undo()
    assert paths and captured
    xmins = [seg[:, 0].min() for c in captured for col in c.lines[2] if isinstance(col, LineCollection)
             for seg in col.get_segments()]
    assert xmins and min(xmins) >= 0.0


def _labelled(bundle: ResultBundle, label: str, rows_per_person: int | None) -> ResultBundle:
    import dataclasses

    trials = bundle.trials.assign(eps_label=label)
    tables = {}
    if rows_per_person is not None:
        tables["data"] = pd.DataFrame([{"dataset": "adult-authors", "data": "authors", "source": "adult-data",
                                        "canonical": True, "rows": 60_324, "features": 102, "n_fit": 30_162,
                                        "n_post": 15_081, "n_full_train": 45_243, "n_test": 15_081,
                                        "rows_per_person": rows_per_person, "privacy_unit": "two rows (test)"}])
    return dataclasses.replace(bundle, trials=trials, _tables=tables)


def test_privacy_paragraph_reads_the_labels_from_the_records(tmp_path: Path) -> None:
    """The labels printed are the records' own (the old text hard-coded them), and the total ε′ is stated as the
    composition it is (it already includes ε₀ + ε₁)."""
    bundle = _labelled(make_bundle(tmp_path, "thesis-table-3.1", "full", "authors"), "nominal", None)
    text = rep.report_markdown(bundle)
    assert f"{ALG2} *nominal*" in text and f"{BASE} *nominal*" in text
    assert "public-statistics caveat" not in text
    assert "(+ ε₀ + ε₁" not in text and "the DP-SGD part + ε₀ + ε₁" in text


def test_privacy_paragraph_gives_the_per_person_epsilon(tmp_path: Path) -> None:
    """Two rows per person (the authors' Adult file): Algorithm 2's (ε′, δ′) = (3, 1e-5) is (6, (1 + e³)·1e-5)
    per person; one row per person adds no sentence."""
    import math

    base = make_bundle(tmp_path, "thesis-table-3.1", "full", "authors")
    text = rep.report_markdown(_labelled(base, "public-statistics caveat", 2))
    assert "two rows (test)" in text and f"(6.000, {1e-5 * (1 + math.exp(3.0)):.2g})" in text
    assert "per person" not in rep.report_markdown(_labelled(base, "public-statistics caveat", 1))


def test_the_legend_lies_outside_the_axes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In thesis-table-3_1.png the legend covered the "λ=0.5" label and an error bar (issue #35)."""
    import repro.plotting as plotting

    bundle = make_bundle(tmp_path, "thesis-table-3.1", "full", "authors")
    seen = []
    original = plotting.save_figure

    def spy(fig, *args, **kwargs):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is not None:
                seen.append(legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer)))
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(plotting, "save_figure", spy)
    assert rep.plot(bundle, tmp_path / "fig")
    assert seen and not any(seen)
