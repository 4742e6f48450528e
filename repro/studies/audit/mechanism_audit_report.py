"""Table and figure of the privacy audit (saved results only; issue 21 item 3, issue 24 item 7)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from repro.engine.results import ResultBundle
from repro.plotting import new_figure, save_figure
from repro.privacy.guarantee import Label, fails_when_violated, is_nominal
from repro.studies.audit.mechanisms import MECHANISMS


def _fmt(v: float) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else ("∞" if math.isinf(v) else f"{v:.3f}")


def _short_label(label: Label | str) -> str:
    """Tick-label text: the nominal or accounted label's text, a star marking the public-statistics caveat."""
    if is_nominal(label):
        return Label.NOMINAL.value
    return Label.ACCOUNTED.value + ("*" if Label(label) is Label.PUBLIC_STATISTICS else "")


def combined_rows(table: pd.DataFrame) -> list[dict[str, object]]:
    """One row per mechanism (in registry order): the claimed instance's numbers and its control's verdict."""
    rows = []
    for name in MECHANISMS:
        claimed = table[(table["mechanism"] == name) & (table["instance"] == "claimed")]
        if claimed.empty:
            continue
        c = claimed.iloc[0]
        broken = table[(table["mechanism"] == name) & (table["instance"] == "broken")]
        if broken.empty:
            control = "no control (nominal)" if is_nominal(c["label"]) else "not run"
            control_eps = math.nan
        else:
            b = broken.iloc[0]
            control = f"flagged ({_fmt(b['audited_epsilon'])} > {_fmt(b['claimed_epsilon'])})" \
                if b["verdict"] == "control flagged" else f"NOT FLAGGED ({_fmt(b['audited_epsilon'])})"
            control_eps = float(b["audited_epsilon"])
        rows.append({"mechanism": name, "label": c["label"], "claimed": float(c["claimed_epsilon"]),
                     "delta": float(c["delta"]), "achievable": float(c["achievable_epsilon"]),
                     "how": c["achievable_how"], "audited": float(c["audited_epsilon"]), "ratio": float(c["ratio"]),
                     "method": c["method"], "runs": int(c["runs_per_side"]), "verdict": c["verdict"],
                     "control": control, "control_epsilon": control_eps, "note": c["note"]})
    return rows


def markdown_table(rows: list[dict[str, object]]) -> str:
    """claimed / achievable / audited / ratio / control, one line per mechanism."""
    out = ["| mechanism | label | claimed ε (δ) | achievable ε | how | audited ε | audited/claimed | method, runs/side "
           "| verdict | broken control |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['mechanism']} | {r['label']} | {_fmt(r['claimed'])} ({r['delta']:.3g}) | "
                   f"{_fmt(r['achievable'])} | {r['how']} | {_fmt(r['audited'])} | {_fmt(r['ratio'])} | "
                   f"{r['method']}, {r['runs']} | {r['verdict']} | {r['control']} |")
    return "\n".join(out)


def report_markdown(bundle: ResultBundle) -> str:
    """The audit table and its verdict in plain words."""
    rows = combined_rows(bundle.table("audit"))
    violated = [r["mechanism"] for r in rows if r["verdict"] == "violated"]
    missed = [r["mechanism"] for r in rows if str(r["control"]).startswith("NOT FLAGGED")]
    weak = [r["mechanism"] for r in rows if fails_when_violated(r["label"]) and r["ratio"] < 0.5]
    lines = [markdown_table(rows), ""]
    lines.append(f"Violated accounted / public-statistics claims: {', '.join(violated) or 'none'}. "
                 f"Broken controls not flagged: {', '.join(missed) or 'none'}. "
                 f"Accounted audits below 0.5× their claim: {', '.join(weak) or 'none'} "
                 "(docs/privacy-audit.md says why).")
    return "\n".join(lines)


def plot(bundle: ResultBundle, outdir: Path) -> list[Path]:
    """Dot chart, one row per mechanism, ε relative to the claim (claim = 1): achievable (diamond), audited
    (filled circle) and the broken control's audited value (red cross); violations would lie right of 1."""
    rows = combined_rows(bundle.table("audit"))
    if not rows:
        return []
    fig, axes = new_figure(width=6.8, height=0.3 * len(rows) + 2.4)
    ax = axes[0][0]
    y = np.arange(len(rows))[::-1]
    finite_top = [r["control_epsilon"] / r["claimed"] for r in rows if math.isfinite(r["control_epsilon"])]
    right = max([1.2, *[r["ratio"] for r in rows if math.isfinite(r["ratio"])], *finite_top]) * 1.08
    ax.axvline(1.0, color="0.3", lw=1, ls="--", label="claimed ε (ratio 1)")
    ax.axvspan(1.0, right, color="tab:red", alpha=0.06, lw=0)
    for yi, r in zip(y, rows, strict=True):
        ax.plot([-0.04 * right, right], [yi, yi], color="0.9", lw=0.6, zorder=0)
        if math.isfinite(r["achievable"]):
            ax.plot(r["achievable"] / r["claimed"], yi, "D", color="0.45", markersize=5, markerfacecolor="none")
        colour = "tab:red" if r["verdict"] == "violated" else ("tab:orange" if is_nominal(r["label"]) else "tab:blue")
        ax.plot(min(r["ratio"], right), yi, "o", color=colour, markersize=6)
        if math.isfinite(r["control_epsilon"]):
            ax.plot(min(r["control_epsilon"] / r["claimed"], right), yi, "x", color="tab:red", markersize=6, mew=1.5)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{r['mechanism']} ({_short_label(r['label'])})" for r in rows])
    ax.set_xlim(-0.04 * right, right)   # a bound of 0 stays visible
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("ε relative to the claimed ε (audited / claimed); * public-statistics caveat")
    ax.set_title(f"Privacy audit ({bundle.profile} profile): attack lower bounds vs claims")
    ax.plot([], [], "D", color="0.45", markerfacecolor="none", label="achievable ε (exact, implemented mechanism)")
    ax.plot([], [], "o", color="tab:blue", label="audited ε, accounted claim")
    ax.plot([], [], "o", color="tab:orange", label="audited ε, nominal claim")
    ax.plot([], [], "x", color="tab:red", mew=1.5, label="broken control (must lie right of 1)")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, frameon=False)
    return save_figure(fig, outdir, "audit")
