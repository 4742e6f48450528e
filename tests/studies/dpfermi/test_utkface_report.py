"""DP-FERMI Fig. 5 figure and report name each ε's privacy label (the `strict` variant's ε are not nominal)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from repro.engine.results import ResultBundle
from repro.engine.spec import load_experiment
from repro.studies.dpfermi import utkface_report as rep

matplotlib.use("Agg")
ROOT = Path(__file__).parents[3]


def bundle(tmp_path: Path, variant: str, *, seeds: int = 1, privacy: bool = True) -> ResultBundle:
    """A cpu-profile run of two ε whose λ = 10 and λ = 50 points are (nearly) the same constant classifier (the
    strict cpu run's ε = 10 panel)."""
    spec = load_experiment(ROOT / "experiments" / "dpfermi-fig-5.toml")
    rows = [{"method": "dp-fermi", "epsilon": eps, "knob": knob, "repetition": r,
             "error": error + 0.01 * r, "violation": violation}
            for eps in (10.0, 100.0) for r in range(seeds)
            for knob, error, violation in [(0.0, 0.60, 0.27), (10.0, 0.7899, 0.0011), (50.0, 0.7903, 0.0)]]
    out = tmp_path / f"cpu-{variant}"
    label = {"reference": "nominal", "strict": "public-statistics caveat"}[variant]
    if privacy:
        (out / "tables").mkdir(parents=True)
        pd.DataFrame({"epsilon": [10.0, 100.0], "epsilon_label": [label, label]}).to_csv(
            out / "tables" / "privacy.csv", index=False)
    return ResultBundle(spec=spec, directory=out, trials=pd.DataFrame(rows), summary=pd.DataFrame(),
                        run={"profile": "cpu", "variant": variant})


def drawn_axes(b: ResultBundle, tmp_path: Path, monkeypatch) -> list:
    from matplotlib.figure import Figure

    seen: list = []
    original = Figure.savefig

    def spy(self, *args, **kwargs):
        seen.extend(self.axes)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    assert rep.plot(b, tmp_path / "fig")
    return seen


@pytest.mark.parametrize("variant", ["reference", "strict"])
@pytest.mark.parametrize("privacy", [True, False])
def test_panel_titles_and_report_carry_the_runs_epsilon_label(variant: str, privacy: bool, tmp_path: Path,
                                                               monkeypatch) -> None:
    """The defect: every panel said "(nominal)" and the report "All ε are nominal", also for `strict`, whose
    ε carry the public-statistics caveat (exact strict accountant). The label is the one the trials declared
    (their privacy table); a run without that table says so instead of guessing."""
    b = bundle(tmp_path, variant, privacy=privacy)
    label = ("nominal" if variant == "reference" else "public-statistics caveat") if privacy else rep.NO_LABEL
    titles = {ax.get_title() for ax in drawn_axes(b, tmp_path, monkeypatch)}
    assert titles == {f"UTKFace, ε = 10 ({label})", f"UTKFace, ε = 100 ({label})"}
    text = rep.report_markdown(b)
    assert ("All ε are nominal" in text) == (variant == "reference" and privacy)
    if variant == "strict" and privacy:
        assert "public-statistics caveat" in text
    assert rep.epsilon_labels(b) == {10.0: label, 100.0: label}


def test_coinciding_points_share_one_label_and_seeds_get_per_point_bars(tmp_path: Path, monkeypatch) -> None:
    """λ = 10 and λ = 50 land on (nearly) the same classifier: one label "λ=10, 50", not two printed over each other;
    several seeds give ±1 std bars per point (no band filled along the error axis, which can cross itself)."""
    from matplotlib.collections import PolyCollection
    from matplotlib.container import ErrorbarContainer

    axes = drawn_axes(bundle(tmp_path, "strict", seeds=3), tmp_path, monkeypatch)
    ours = [t.get_text() for t in axes[0].texts if t.get_text().startswith("λ=")]
    assert sorted(ours) == ["λ=0", "λ=10, 50"]
    assert not any(isinstance(c, PolyCollection) for c in axes[0].collections)
    bars = [c for c in axes[0].containers if isinstance(c, ErrorbarContainer) and c.has_xerr]
    assert bars and all(c.has_yerr for c in bars)
    legend = [t.get_text() for t in axes[0].figure.legends[0].get_texts()]
    assert "DP-FERMI, variant strict (ours)" in legend
