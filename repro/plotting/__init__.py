"""Figure helpers shared by every study: one house style and PNG + PDF output.

Plots only read saved results (a :class:`repro.engine.results.ResultBundle`); nothing here computes
experiment numbers.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

# Font subsetting for PDF output logs harmless warnings about font timestamps.
logging.getLogger("fontTools").setLevel(logging.ERROR)

__all__ = ["PAPER_MARKER", "new_figure", "save_figure"]

#: Style of the paper's own values drawn beside ours: hollow markers.
PAPER_MARKER: dict[str, Any] = {"marker": "o", "markerfacecolor": "none", "markersize": 8,
                                "linestyle": "none", "markeredgewidth": 1.4}

_RC = {
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "pdf.fonttype": 42,
}


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 3.4, height: float = 2.6, **kwargs: Any):
    """A figure sized for a paper column (``width``/``height`` per panel, inches), house style."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(_RC)
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                        constrained_layout=True, **kwargs)


def save_figure(fig: Any, outdir: Path, stem: str) -> list[Path]:
    """Save ``fig`` as ``<outdir>/<stem>.png`` and ``.pdf``; close it; return both paths."""
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = [outdir / f"{stem}.png", outdir / f"{stem}.pdf"]
    for p in paths:
        fig.savefig(p, bbox_inches="tight")
    plt.close(fig)
    return paths
