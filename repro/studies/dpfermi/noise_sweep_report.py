"""Figure and report of ``dpfermi-noise-sweep``: test error against L·D, released λ = 0 lines (saved results only)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["plot", "report_markdown", "closest_noise_levels"]


def _means(trials: pd.DataFrame) -> pd.DataFrame:
    keys = ["dataset", "fairness", "epsilon", "lr_theta", "knob", "LD"]
    g = trials.groupby(keys, sort=True)
    return pd.DataFrame({"error": g["error"].mean(), "error_std": g["error"].std(ddof=1).fillna(0.0),
                         "violation": g["violation"].mean(), "n": g["error"].size()}).reset_index()


def _released(bundle) -> dict[tuple[str, str, float], float]:
    out = {}
    for ref in bundle.spec.references:
        st = ref.setting
        out[(str(st["dataset"]), str(st["fairness"]), float(st["epsilon"]))] = float(ref.value)
    return out


def closest_noise_levels(bundle) -> pd.DataFrame:
    """Per (dataset, fairness, ε, η_θ): our λ = 0 error at each L·D, the released λ = 0 error, and the L·D
    whose error is closest to it (an inference about the released runs' noise level)."""
    m = _means(bundle.trials)
    m = m[np.isclose(m["knob"], 0.0)]
    released = _released(bundle)
    rows = []
    for (ds, fair, eps, lr), grp in m.groupby(["dataset", "fairness", "epsilon", "lr_theta"], sort=True):
        rel = released.get((ds, fair, float(eps)), math.nan)
        row = {"dataset": ds, "fairness": fair, "epsilon": eps, "lr_theta": lr, "released": rel}
        row.update({f"L·D={ld:g}": e for ld, e in zip(grp["LD"], grp["error"], strict=True)})
        if math.isfinite(rel):
            i = int(np.argmin(np.abs(grp["error"].to_numpy() - rel)))
            row["closest L·D"] = float(grp["LD"].iloc[i])
            row["|gap|"] = float(abs(grp["error"].iloc[i] - rel))
        rows.append(row)
    return pd.DataFrame(rows)


def plot(bundle, outdir: Path) -> list[Path]:
    """One panel per (dataset, fairness) and ε: test error vs L·D (log x), λ = 0 solid and λ > 0 dashed per η_θ,
    the released λ = 0 error as a horizontal line."""
    from repro.plotting import new_figure, save_figure

    m = _means(bundle.trials)
    released = _released(bundle)
    cells = list(m[["dataset", "fairness"]].drop_duplicates().itertuples(index=False, name=None))
    eps_values = sorted(m["epsilon"].unique())
    fig, axes = new_figure(nrows=len(cells), ncols=len(eps_values), width=2.8, height=2.2)
    colors = {lr: c for lr, c in zip(sorted(m["lr_theta"].unique()), ("tab:blue", "tab:orange", "tab:green"),
                                     strict=False)}
    for r, (ds, fair) in enumerate(cells):
        for c, eps in enumerate(eps_values):
            ax = axes[r][c]
            sub = m[(m["dataset"] == ds) & (m["fairness"] == fair) & np.isclose(m["epsilon"], eps)]
            for (lr, lam), grp in sub.groupby(["lr_theta", "knob"], sort=True):
                ax.errorbar(grp["LD"], grp["error"], yerr=grp["error_std"], color=colors.get(lr, "k"),
                            linestyle="-" if lam == 0 else "--", marker="o" if lam == 0 else "x", markersize=3,
                            capsize=2, label=f"η_θ = {lr:g}, λ = {lam:g} (ours)")
            rel = released.get((ds, fair, float(eps)))
            if rel is not None:
                ax.axhline(rel, color="k", linestyle=":", linewidth=1, label="released λ = 0 error")
            ax.set_xscale("log")
            ax.set_title(f"{ds} ({fair}), ε = {eps:g}", fontsize=8)
            ax.set_xlabel("L·D (σ_θ ∝ L·D)")
            ax.set_ylabel("test error")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=7)
    return save_figure(fig, outdir, bundle.spec.id)


def report_markdown(bundle) -> str:
    """The λ = 0 error at each L·D beside the released λ = 0 error, and the closest L·D (an inference)."""
    t = closest_noise_levels(bundle)
    lines = ["**Which noise level do the released λ = 0 points correspond to?** Our λ = 0 test error (mean over "
             "seeds, authors' data and split) at each L·D (σ_θ ∝ L·D) beside the released value; `closest L·D` "
             "is an INFERENCE about the released runs (their (L, D) are not published), not a measurement. "
             "A released value below every L·D's error means even L·D = 1 is noisier than the released run.\n"]
    if t.empty:
        return lines[0]
    cols = list(t.columns)
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for _, r in t.iterrows():
        lines.append("| " + " | ".join("—" if isinstance(v, float) and math.isnan(v) else
                                       (f"{v:.4f}" if isinstance(v, float) and not float(v).is_integer() else
                                        (f"{v:g}" if isinstance(v, float) else str(v))) for v in r) + " |")
    return "\n".join(lines)
