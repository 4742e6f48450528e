"""Table and figure of the privacy audit (saved results only; issue 21 item 3, issue 24 item 7, issue 38 item 5)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from repro.engine.results import ResultBundle
from repro.plotting import save_figure
from repro.privacy.guarantee import Label, fails_when_violated, is_nominal
from repro.studies.audit.mechanism_audit import REGISTRY


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
    for name in REGISTRY:
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
            at_best = "best_delta" in b and pd.notna(b["best_delta"])
            if at_best:    # the profile rule: the bound at the control's best δ against the claimed ε(δ) there
                where = (f"{_fmt(b['audited_epsilon_at_best'])} vs {_fmt(b['claimed_epsilon_at_best'])} "
                         f"at δ = {float(b['best_delta']):.3g}; one-point {_fmt(b['audited_epsilon'])}")
                control_eps = float(b["ratio_at_best"]) * float(c["claimed_epsilon"])
            else:
                where = f"{_fmt(b['audited_epsilon'])} vs {_fmt(b['claimed_epsilon'])}"
                control_eps = float(b["audited_epsilon"])
            control = f"flagged ({where})" if b["verdict"] == "control flagged" else f"NOT FLAGGED ({where})"
        best = {k: float(c[k]) if k in c and pd.notna(c[k]) else math.nan
                for k in ("best_delta", "claimed_epsilon_at_best", "audited_epsilon_at_best", "ratio_at_best",
                          "ratio_headline", "gdp_mu_lower", "gdp_mu_claimed", "intended_noise_std",
                          "observed_noise_std", "ceiling_ratio")}
        rows.append({"mechanism": name, "label": c["label"], "claimed": float(c["claimed_epsilon"]),
                     "best_delta": best["best_delta"], "claimed_at_best": best["claimed_epsilon_at_best"],
                     "audited_at_best": best["audited_epsilon_at_best"], "ratio_at_best": best["ratio_at_best"],
                     "delta": float(c["delta"]), "achievable": float(c["achievable_epsilon"]),
                     "how": c["achievable_how"], "audited": float(c["audited_epsilon"]), "ratio": float(c["ratio"]),
                     "method": c["method"], "runs": int(c["runs_per_side"]), "verdict": c["verdict"],
                     "control": control, "control_epsilon": control_eps, "note": c["note"],
                     "ratio_headline": best["ratio_headline"], "mu_lower": best["gdp_mu_lower"],
                     "mu_claimed": best["gdp_mu_claimed"], "sigma": best["intended_noise_std"],
                     "sigma_observed": best["observed_noise_std"], "ceiling": best["ceiling_ratio"]})
    return rows


def _ceiling(v: float) -> str:
    return "—" if math.isnan(v) else (f"{v:.3f}" + (" (uninformative)" if v < 0.5 else ""))


def markdown_table(rows: list[dict[str, object]]) -> str:
    """claimed / achievable / audited / ratio / control, one line per mechanism; ratio at best δ against the
    claimed ε(δ) there and against the headline ε; the oracle ceiling of the design ("uninformative" below 0.5);
    the Gaussian-DP μ certified (beside the claim's central-limit μ, shipped audits); intended and observed
    noise std (shipped audits)."""
    out = ["| mechanism | label | claimed ε (δ) | achievable ε | how | audited ε | audited/claimed | best δ "
           "| claimed ε(best δ) | audited at best δ | ratio at best δ | ratio to headline ε | oracle ceiling "
           "| μ lower bound (claim μ) | noise std intended / observed | method, runs/side | verdict | broken control |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        bd = "—" if math.isnan(r["best_delta"]) else f"{r['best_delta']:.3g}"
        out.append(f"| {r['mechanism']} | {r['label']} | {_fmt(r['claimed'])} ({r['delta']:.3g}) | "
                   f"{_fmt(r['achievable'])} | {r['how']} | {_fmt(r['audited'])} | {_fmt(r['ratio'])} | {bd} | "
                   f"{_fmt(r['claimed_at_best'])} | {_fmt(r['audited_at_best'])} | {_fmt(r['ratio_at_best'])} | "
                   f"{_fmt(r['ratio_headline'])} | {_ceiling(r['ceiling'])} | {_fmt(r['mu_lower'])} "
                   f"({_fmt(r['mu_claimed'])}) | {_fmt(r['sigma'])} / {_fmt(r['sigma_observed'])} | "
                   f"{r['method']}, {r['runs']} | {r['verdict']} | {r['control']} |")
    return "\n".join(out)


def report_markdown(bundle: ResultBundle) -> str:
    """The audit table and its verdict in plain words."""
    rows = combined_rows(bundle.table("audit"))
    violated = [r["mechanism"] for r in rows if r["verdict"] == "violated"]
    missed = [r["mechanism"] for r in rows if str(r["control"]).startswith("NOT FLAGGED")]
    weak = [r["mechanism"] for r in rows if fails_when_violated(r["label"]) and not r["ratio_at_best"] >= 0.5]
    lines = [markdown_table(rows), ""]
    lines.append(f"Violated accounted / public-statistics claims: {', '.join(violated) or 'none'}. "
                 f"Broken controls not flagged: {', '.join(missed) or 'none'}. "
                 f"Accounted audits below 0.5× their claimed ε at their best δ: {', '.join(weak) or 'none'} "
                 "(docs/privacy-audit.md says why). Verdicts: statistical audits by the profile rule (an empirical "
                 "point's simultaneous upper corner below the claimed trade-off curve), exact audits by the exact ε.")
    return "\n".join(lines)


def _tradeoff_panel(ax, table: pd.DataFrame, name: str) -> None:
    """One mechanism: the claimed trade-off curve f(α), the claimed instance's empirical points (α̂, β̂) with
    bars to their simultaneous upper bounds, and the broken control's points (red)."""
    t = table[table["mechanism"] == name]
    curve = t[(t["instance"] == "claimed") & (t["kind"] == "claimed")].sort_values("x")
    ax.plot([0, 1], [1, 0], color="0.75", lw=0.8, ls=":")
    ax.plot(curve["x"], curve["y"], color="0.2", lw=1.2)
    for instance, colour, marker in (("claimed", "tab:blue", "o"), ("broken", "tab:red", "x")):
        p = t[(t["instance"] == instance) & (t["kind"] == "empirical")]
        if p.empty:
            continue
        ax.errorbar(p["x"], p["y"], xerr=[0 * p["x"], p["x_up"] - p["x"]], yerr=[0 * p["y"], p["y_up"] - p["y"]],
                    fmt=marker, color=colour, markersize=3, elinewidth=0.6, capsize=0, mew=1.0)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_aspect("equal")
    ax.set_title(name, fontsize=9)
    ax.set_xlabel("type-I error α")
    ax.set_ylabel("type-II error β")


def plot(bundle: ResultBundle, outdir: Path) -> list[Path]:
    """Top: dot chart, one row per mechanism, ε relative to the claim (claim = 1): achievable (diamond), audited
    (filled circle) and the broken control's audited value (red cross); violations would lie right of 1.
    Below (issue 38 item 5): per statistical audit, the claimed trade-off curve and the empirical points."""
    import matplotlib.pyplot as plt

    from repro.plotting import _RC

    rows = combined_rows(bundle.table("audit"))
    if not rows:
        return []
    columns = ["mechanism", "instance", "kind", "x", "y", "x_up", "y_up"]
    try:
        tradeoff = bundle.table("tradeoff")
    except (FileNotFoundError, KeyError):   # results written before issue 38
        tradeoff = pd.DataFrame(columns=columns)
    if not set(columns) <= set(tradeoff.columns):
        tradeoff = pd.DataFrame(columns=columns)
    panels = [r["mechanism"] for r in rows
              if not tradeoff[(tradeoff["mechanism"] == r["mechanism"]) & (tradeoff["kind"] == "empirical")].empty]
    plt.rcParams.update(_RC)   # house style (repro.plotting.new_figure's)
    ncols = 3
    nrows = math.ceil(len(panels) / ncols)
    top_h = 0.3 * len(rows) + 2.4
    fig = plt.figure(figsize=(6.8, top_h + 2.5 * nrows), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[top_h, max(2.5 * nrows, 1e-3)]) if panels \
        else (fig.subfigures(1, 1), None)
    ax = top.subplots()
    y = np.arange(len(rows))[::-1]
    finite_top = [r["control_epsilon"] / r["claimed"] for r in rows if math.isfinite(r["control_epsilon"])]
    # capped: a control's ratio at its best δ can be large (claimed ε(δ) small there); markers stop at the edge
    right = min(max([1.2, *[r["ratio"] for r in rows if math.isfinite(r["ratio"])], *finite_top]), 2.5) * 1.08
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
    ax.plot([], [], "x", color="tab:red", mew=1.5, label="broken control at its best δ (must lie right of 1)")
    top.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, frameon=False)
    if panels and bottom is not None:
        axes = np.atleast_1d(bottom.subplots(nrows, ncols, squeeze=False)).ravel()
        for a, name in zip(axes, panels, strict=False):
            _tradeoff_panel(a, tradeoff, name)
        for a in axes[len(panels):]:
            a.set_visible(False)
        bottom.suptitle("Trade-off curves: claimed f(α) (line), audited points (blue, bars to the 95 % "
                        "simultaneous upper bounds), broken control (red ×); a point whose bars end below the "
                        "line is a violation", fontsize=8, wrap=True)
    return save_figure(fig, outdir, "audit")
