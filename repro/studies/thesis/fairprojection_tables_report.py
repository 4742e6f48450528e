"""Figures and report of thesis Tables 5.1–5.4 (OPT vs FairProjection), from saved results only.

Kept apart from :mod:`repro.studies.thesis.fairprojection_tables` so that redrawing never invalidates
cached trials (the study's source is hashed into the trial cache key; this module is not).

Spec: ../shared/specs/seed-003-thesis.md §6.4, §8.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from repro.engine.claims import evaluate_all

__all__ = ["plot", "report_markdown"]


def _metric_of(bundle: Any) -> str:
    names = set(bundle.spec.metric_names)
    return "sp_gap" if "sp_gap" in names else "meo"


def _paper_points(bundle: Any, metric: str) -> list[tuple[str, float | None, float, float]]:
    """(method, epsilon, unfairness, accuracy) of the paper's rows, paired from the references."""
    refs: dict[tuple[str, float | None], dict[str, float]] = {}
    for ref in bundle.spec.references:
        if ref.metric not in ("accuracy", metric) or ref.method is None:
            continue
        eps = ref.setting.get("epsilon")
        refs.setdefault((ref.method, None if eps is None else float(eps)), {})[ref.metric] = ref.value
    return [(m, e, v[metric], v["accuracy"]) for (m, e), v in refs.items() if metric in v and "accuracy" in v]


_COLORS = {"FairProjection-KL": "C0", "FairProjection-CE": "C1", "OPT": "C3", "Non-Fair": "k"}


def plot(bundle: Any, outdir: Path) -> list[Path]:
    """Accuracy against unfairness: FP-KL / FP-CE tolerance curves (means over trials), OPT's three
    points, Non-Fair, the matched FP points, and the paper's rows as hollow markers (spec §8)."""
    from repro.plotting import PAPER_MARKER, new_figure, save_figure

    metric = _metric_of(bundle)
    label = "statistical parity gap" if metric == "sp_gap" else "mean equalized odds"
    trials = bundle.trials
    curve = bundle.table("fp_curve", default=None)   # a run without curves still gets the points
    fig, axes = new_figure(width=6.0, height=4.4)
    ax = axes[0][0]
    colors = _COLORS
    if curve is not None and len(curve):
        for method, grp in curve.groupby("method"):
            mean = grp.groupby("alpha")[["unfairness", "accuracy"]].mean().sort_index()
            ax.plot(mean["unfairness"], mean["accuracy"], ".-", color=colors.get(method), lw=1, ms=4,
                    label=f"{method} curve (α grid, ours)")
    means = trials.groupby(["method", "epsilon"], dropna=False)[["accuracy", metric]].mean().reset_index()
    for _, row in means.iterrows():
        method, eps = row["method"], row["epsilon"]
        if method == "OPT":
            ax.plot(row[metric], row["accuracy"], "*", color=colors["OPT"], ms=11)
            ax.annotate(f"ε={eps:g}", (row[metric], row["accuracy"]), textcoords="offset points", xytext=(4, -10),
                        fontsize=7, color=colors["OPT"])
        elif method == "Non-Fair":
            ax.plot(row[metric], row["accuracy"], "s", color="k", ms=7)
        else:
            ax.plot(row[metric], row["accuracy"], "D", color=colors.get(method), ms=5)
    ax.plot([], [], "*", color=colors["OPT"], ms=11, label="OPT (ours)")
    ax.plot([], [], "s", color="k", ms=7, label="Non-Fair (ours)")
    ax.plot([], [], "D", color="grey", ms=5, label="FP matched to OPT (ours)")
    for method, _eps, unf, acc in _paper_points(bundle, metric):
        marker = {"OPT": "*", "Non-Fair": "s"}.get(method, "D")
        size = 13 if marker == "*" else PAPER_MARKER["markersize"]
        ax.plot(unf, acc, **{**PAPER_MARKER, "marker": marker, "markersize": size}, color=colors.get(method, "grey"))
    ax.plot([], [], **PAPER_MARKER, color="grey", label="paper (hollow)")
    ax.set_xlabel(label + " (test)")
    ax.set_ylabel("accuracy (test)")
    n = int(trials["repetition"].nunique()) if len(trials) else 0
    ax.set_title(f"{bundle.spec.title}\nmeans over {n} trials ({bundle.profile} profile)")
    ax.legend(loc="lower right", fontsize=7)
    # Zoom on the region of the table's rows (curves at α = 0 can be far left).
    pts = means[metric].to_list() + [p[2] for p in _paper_points(bundle, metric)]
    accs = means["accuracy"].to_list() + [p[3] for p in _paper_points(bundle, metric)]
    if pts:
        lo, hi = min(pts), max(pts)
        pad = max(0.004, 0.3 * (hi - lo))
        ax.set_xlim(max(0.0, lo - pad), hi + pad)
        alo, ahi = min(accs), max(accs)
        apad = max(0.001, 0.3 * (ahi - alo))
        ax.set_ylim(alo - apad, ahi + apad)
    paths = save_figure(fig, outdir, bundle.spec.id.replace(".", "_"))
    if curve is not None and len(curve):
        paths += _plot_full_curves(bundle, outdir, curve, means, metric, label)
    return paths


def _plot_full_curves(bundle: Any, outdir: Path, curve: Any, means: Any, metric: str, label: str) -> list[Path]:
    """The whole FairProjection tolerance curves, with OPT's and Non-Fair's points (ours)."""
    from repro.plotting import new_figure, save_figure

    fig, axes = new_figure(width=6.0, height=4.4)
    ax = axes[0][0]
    for method, grp in curve.groupby("method"):
        mean = grp.groupby("alpha")[["unfairness", "accuracy"]].mean().sort_index()
        ax.plot(mean["unfairness"], mean["accuracy"], ".-", color=_COLORS.get(method), label=method)
    for _, row in means.iterrows():
        if row["method"] in ("OPT", "Non-Fair"):
            ax.plot(row[metric], row["accuracy"], "*" if row["method"] == "OPT" else "s",
                    color=_COLORS[row["method"]], ms=9)
    ax.set_xlabel(label + " (test)")
    ax.set_ylabel("accuracy (test)")
    ax.set_title("Full FairProjection tolerance curves (ours)")
    ax.legend(fontsize=7)
    return list(save_figure(fig, outdir, bundle.spec.id.replace(".", "_") + "_full_curves"))


def report_markdown(bundle: Any) -> str:
    """Matched comparison and runtimes in words, from saved results."""
    metric = _metric_of(bundle)
    trials = bundle.trials
    if trials is None or trials.empty:
        return ""
    lines = []
    g = trials.groupby(["method", "epsilon"], dropna=False)
    mean = g[["accuracy", metric, "seconds_fit"]].mean()
    opt = mean.loc["OPT"] if "OPT" in mean.index.get_level_values(0) else None
    if opt is not None:
        for eps, row in opt.iterrows():
            parts = [f"OPT ε={eps:g}: accuracy {row['accuracy']:.4f} at {metric} {row[metric]:.4f}"]
            for m in ("FairProjection-KL", "FairProjection-CE"):
                if (m, eps) in mean.index:
                    r = mean.loc[(m, eps)]
                    parts.append(f"{m} matched: {r['accuracy']:.4f} (Δacc OPT − FP = "
                                 f"{row['accuracy'] - r['accuracy']:+.4f})")
            lines.append("- " + "; ".join(parts) + ".")
    if "matched" in trials.columns:
        fp_rows = trials[trials["method"].str.startswith("FairProjection")]
        unmatched = int((fp_rows["matched"] == 0).sum())
        if unmatched:
            lines.append(f"- {unmatched} of {len(fp_rows)} FP matches fell outside FP's curve (closest end used).")
    sec = trials.groupby("method")["seconds_fit"].mean()
    lines.append("- Mean runtime per operating point (s): " + ", ".join(f"{m} {v:.2f}" for m, v in sec.items())
                 + ". FP's figure includes the base GBM fit and one projection at a known α.")
    rt = bundle.table("runtime", default=None)   # optional table
    if rt is not None and "method" in rt:
        sweeps = rt[rt["method"].str.contains("sweep")].groupby("method")["seconds"].mean()
        lines.append("- Mean FP tolerance sweep per trial (s): " + ", ".join(f"{m}: {v:.1f}" for m, v in sweeps.items())
                     + ".")
    if not math.isnan(float(mean["accuracy"].mean())):
        return "\n".join([*lines, *_claim_lines(bundle)])
    return ""


def _claim_lines(bundle: Any) -> list[str]:
    """The verdicts of the experiment's ``[[claims]]`` (thesis §5.7.4, spec §8, §9.2 item 11) on the summary."""
    claims = bundle.spec.claims
    verdicts = evaluate_all(claims, bundle.summary, params=bundle.run.get("params", {}))
    lines = [f"- {c.description}" + ("" if c.threshold is None else f" (threshold {c.threshold:g})")
             + f": {'**holds**' if verdicts[c.name] else '**does not hold**'}."
             for c in claims if verdicts[c.name] is not None]
    return ["", "Claims of the thesis (§5.7.4), on these results:", "", *lines] if lines else []
