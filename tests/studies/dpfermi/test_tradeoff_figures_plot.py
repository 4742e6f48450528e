"""DP-FERMI trade-off figures draw honest spreads (issue #24, item 7).

The curve runs in knob (λ, γ) order, where the test error is not monotone; a band filled along the
error axis then crosses itself. The spread is drawn as per-point ±1 std bars instead.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

from repro.engine.results import ResultBundle
from repro.engine.spec import load_experiment
from repro.studies.dpfermi import tradeoff_figures_report as rep

matplotlib.use("Agg")
ROOT = Path(__file__).parents[3]


def zigzag_bundle(tmp_path: Path) -> ResultBundle:
    """Tran 2021a and DP-FERMI curves whose error goes back and forth along the knob."""
    spec = load_experiment(ROOT / "experiments" / "dpfermi-fig-2.toml")
    rng = np.random.default_rng(0)
    rows = []
    for method in ("tran-2021a", "dp-fermi"):
        for knob, error, violation in [(0.0, 0.16, 0.20), (1.0, 0.19, 0.05), (2.0, 0.17, 0.08), (4.0, 0.21, 0.01)]:
            for seed in range(3):
                rows.append({"method": method, "epsilon": 1.0, "knob": knob, "repetition": seed,
                             "error": error + rng.normal(0, 0.01), "violation": violation + rng.normal(0, 0.02)})
    return ResultBundle(spec=spec, directory=tmp_path / "smoke", trials=pd.DataFrame(rows), summary=pd.DataFrame(),
                        run={"profile": "smoke", "variant": "reference"})


def test_spread_is_per_point_bars_not_a_self_crossing_band(tmp_path: Path, monkeypatch) -> None:
    from matplotlib.axes import Axes
    from matplotlib.collections import PolyCollection

    axes_seen: list[Axes] = []
    original = Axes.plot

    def spy(self, *args, **kwargs):
        axes_seen.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", spy)
    paths = rep.plot(zigzag_bundle(tmp_path), tmp_path / "fig")
    assert paths and axes_seen
    ax = axes_seen[0]
    for coll in ax.collections:
        if isinstance(coll, PolyCollection):  # a filled band: its lower edge must run one way along x
            for path in coll.get_paths():
                x = path.vertices[:, 0]
                lower = np.diff(x[1 : len(x) // 2])
                assert (lower >= -1e-12).all() or (lower <= 1e-12).all(), "self-crossing band"
    bars = [c for c in ax.containers if isinstance(c, matplotlib.container.ErrorbarContainer)]
    assert len(bars) >= 2  # one set of ±1 std bars per curve method (Tran 2021a, DP-FERMI)
    for container in bars:
        assert container.has_xerr and container.has_yerr
