"""Figures 5.1–5.10 and the trend verdicts of the LDP pre-processing study, from saved results only.

Kept apart from :mod:`repro.studies.thesis.ldp_figures` so that editing a plot or a verdict
does not invalidate the cached trials (the study module's source is part of the cache key).

Spec: ../shared/specs/seed-003-thesis.md §7 (layout, captions, "Claimed trends"), §9.2 item 12.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repro.engine.claims import evaluate_all

__all__ = ["curves", "plot", "privacy_lines", "report_markdown", "supplied_values", "trend_checks"]

METHODS = ("OPT", "GRR", "SS")
BASELINE = "non-private"
_LABELS = {"gender": "gender", "race": "race", "race_gender": "race-gender", "fam_inc": "family income"}
_DATASET_NAMES = {"adult": "Adult", "lsac": "LSAC"}

# --------------------------------------------------------------------------------------------
# figures and verdicts (from saved results only)

_STYLE = {"OPT": {"color": "#d62728", "marker": "o"}, "GRR": {"color": "#1f77b4", "marker": "s"},
          "SS": {"color": "#2ca02c", "marker": "^"}}
_PANELS = {"utility": (("accuracy", "Accuracy"), ("f1", "F1-score")),
           "fairness": (("sp_gap", r"$\Delta_{SP}(\hat h)$"), ("eo_gap", r"$\Delta_{EO}(\hat h)$"))}


def curves(bundle: Any) -> pd.DataFrame:
    """Mean, std, n and 95% half-width (1.96·std/√n) per (method, ε, metric) from trials.csv."""
    t = bundle.trials
    metrics = [m for m in ("accuracy", "f1", "sp_gap", "eo_gap", "train_delta", "train_delta_prime") if m in t]
    long = t.melt(id_vars=["method", "epsilon"], value_vars=metrics, var_name="metric").dropna(subset=["value"])
    long["epsilon"] = long["epsilon"].fillna(-1.0)
    g = long.groupby(["method", "epsilon", "metric"])["value"]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["std"] = out["std"].fillna(0.0)
    out["ci95"] = 1.96 * out["std"] / np.sqrt(out["count"])
    return out


def _figure_ids(bundle: Any) -> tuple[str, str]:
    figs = bundle.run.get("params", {}).get("figures") or bundle.spec.params.get("figures")
    return str(figs[0]), str(figs[1])


def _caption(bundle: Any, kind: str) -> str:
    p = bundle.run.get("params", {}) or dict(bundle.spec.params)
    k = int(p.get("k", 2))
    attr = _LABELS.get(str(p.get("attribute")), str(p.get("attribute")))
    kind_word = "Utility" if kind == "utility" else "Fairness"
    what = ("binary sensitive attribute" if k == 2 else
            ("combined non-binary sensitive attribute" if str(p.get("attribute")) == "race_gender" else
             "non-binary sensitive attribute"))
    tail = "" if k == 2 else f" with k = {k}"
    return f"{kind_word} metrics for {_DATASET_NAMES.get(str(p.get('dataset')), '')} dataset with {what} '{attr}'{tail}"


def plot(bundle: Any, outdir: Path) -> list[Path]:
    """Two figures per result: utility (accuracy, F1) and fairness (Δ_SP, Δ_EO) versus ε."""
    from repro.plotting import new_figure, save_figure

    c = curves(bundle)
    paths: list[Path] = []
    n_seeds = int(bundle.trials["repetition"].nunique())
    p = bundle.run.get("params", {}) or dict(bundle.spec.params)
    binary = int(p.get("k", 2)) == 2
    labels = {"OPT": "OPT (Thm 14)" if binary else "OPT (5.5.9)", "GRR": "RR (= GRR)" if binary else "GRR",
              "SS": "SS (≡ RR)" if binary else "SS"}
    for fig_id, kind in zip(_figure_ids(bundle), ("utility", "fairness"), strict=True):
        fig, axes = new_figure(2, 1, width=3.5, height=2.7)
        eps = sorted(e for e in c.epsilon.unique() if e > 0)
        pos = {e: i for i, e in enumerate(eps)}  # categorical ε axis, as in the thesis' figures
        for ax, (metric, label) in zip(axes[0], _PANELS[kind], strict=True):
            for method in METHODS:
                d = c[(c.method == method) & (c.metric == metric)].sort_values("epsilon")
                if d.empty:
                    continue
                x = [pos[e] for e in d.epsilon]
                ax.plot(x, d["mean"], label=labels[method], lw=1.4, ms=4, **_STYLE[method])
                ax.fill_between(x, d["mean"] - d.ci95, d["mean"] + d.ci95, color=_STYLE[method]["color"],
                                alpha=0.18, lw=0)
            base = c[(c.method == BASELINE) & (c.metric == metric)]
            if not base.empty:
                m, h = float(base["mean"].iloc[0]), float(base["ci95"].iloc[0])
                ax.axhline(m, color="black", ls="--", lw=1.2, label="non-private")
                ax.axhspan(m - h, m + h, color="black", alpha=0.07, lw=0)
            ax.set_xticks(range(len(eps)))
            ax.set_xticklabels([f"{e:g}" for e in eps])
            ax.set_xlabel(r"LDP privacy parameter $\varepsilon$")
            ax.set_ylabel(label)
        handles, names = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, names, loc="outside lower center", ncol=4, frameon=False)
        fig.suptitle(f"Figure {fig_id}: {_caption(bundle, kind)}\n(mean and 95% CI over {n_seeds} seeds; "
                     f"profile {bundle.profile}, variant {bundle.variant})", fontsize=8.5)
        paths += save_figure(fig, outdir, f"fig-{fig_id}")
    return paths


def _val(c: pd.DataFrame, method: str, metric: str, eps: float | None = None) -> tuple[float, float]:
    sel = (c.method == method) & (c.metric == metric)
    if eps is not None:
        sel &= np.isclose(c.epsilon, eps)
    d = c[sel]
    if d.empty:
        return math.nan, math.nan
    return float(d["mean"].iloc[0]), float(d["ci95"].iloc[0])


def paired_upper(bundle: Any, metric: str, a: str, b: str, eps: float) -> tuple[float, float]:
    """Mean and upper 95% bound of the per-repetition difference a − b at ε.

    Every mechanism of a repetition shares the data split and the LightGBM seed (common random
    numbers), so paired differences are much less noisy than the two curves' own bands.
    """
    t = bundle.trials
    sel = np.isclose(t["epsilon"].fillna(-1.0), eps)
    x = t[sel & (t.method == a)].set_index("repetition")[metric]
    y = t[(sel | (b == BASELINE)) & (t.method == b)].set_index("repetition")[metric]
    d = (x - y).dropna()
    if d.size == 0:
        return math.nan, math.nan
    half = 1.96 * float(d.std(ddof=1)) / math.sqrt(d.size) if d.size > 1 else math.inf
    return float(d.mean()), float(d.mean()) + half


def _verdict(ok: bool) -> str:
    return "**holds**" if ok else "**does not hold**"


# --------------------------------------------------------------------------------------------
# verdicts: the experiment's [[claims]] (`<metric>-<trend>`), judged on the summary; the report only
# supplies the paired confidence intervals the summary lacks, and renders each claim's deciding values

_METRIC_ORDER = ("accuracy", "f1", "sp_gap", "eo_gap")
_SYMBOL = {"accuracy": "accuracy", "f1": "f1", "sp_gap": "Δ_SP", "eo_gap": "Δ_EO"}


def _params(bundle: Any) -> dict[str, Any]:
    return dict(bundle.run.get("params", {}) or bundle.spec.params)


def supplied_values(bundle: Any, c: pd.DataFrame, eps: list[float]) -> dict[str, Any]:
    """The values claims name that are not summary columns: per fairness metric, OPT's 95% half-width per ε
    (``<metric>_opt_ci95``) and the paired 95% CI of OPT − non-private at the largest ε
    (``<metric>_opt_minus_nonprivate_low``/``_high``)."""
    out: dict[str, Any] = {}
    for metric in ("sp_gap", "eo_gap"):
        out[f"{metric}_opt_ci95"] = np.array([_val(c, "OPT", metric, e)[1] for e in eps])
        mean_d, upper = paired_upper(bundle, metric, "OPT", BASELINE, eps[-1])
        out[f"{metric}_opt_minus_nonprivate_low"] = 2 * mean_d - upper
        out[f"{metric}_opt_minus_nonprivate_high"] = upper
    return out


def _ev_unaffected(c: pd.DataFrame, eps: list[float], metric: str, claim: Any, bundle: Any) -> str:
    base, _ = _val(c, BASELINE, metric)
    diffs = {e: _val(c, "OPT", metric, e)[0] - base for e in eps}
    worst = max(diffs, key=lambda e: abs(diffs[e]))
    others = max(abs(_val(c, m, metric, e)[0] - base) for m in ("GRR", "SS") for e in eps)
    return (f"max |OPT − non-private| = {abs(diffs[worst]):.4f} at ε = {worst:g} (non-private {base:.4f}; "
            f"criterion ≤ {claim.threshold:g}); GRR/SS max deviation {others:.4f}")


def _ev_smallest(c: pd.DataFrame, eps: list[float], metric: str, claim: Any, bundle: Any) -> str:
    base, _ = _val(c, BASELINE, metric)
    wins = [e for e in eps if _val(c, "OPT", metric, e)[0] < min(_val(c, "GRR", metric, e)[0],
                                                                  _val(c, "SS", metric, e)[0], base)]
    sig = [e for e in eps if all(paired_upper(bundle, metric, "OPT", m, e)[1] < 0 for m in ("GRR", "SS", BASELINE))]
    return (f"OPT smallest at {len(wins)}/{len(eps)} ε values (paired 95% CI below 0 against all three at "
            f"{len(sig)}/{len(eps)})"
            + (f" (not at ε = {', '.join(f'{e:g}' for e in eps if e not in wins)})" if len(wins) < len(eps) else ""))


def _ev_gap_widens(c: pd.DataFrame, eps: list[float], metric: str, claim: Any, bundle: Any) -> str:
    gap = {e: min(_val(c, "GRR", metric, e)[0], _val(c, "SS", metric, e)[0]) - _val(c, "OPT", metric, e)[0]
           for e in eps}
    mid = eps[len(eps) // 2]
    return (f"min(GRR, SS) − OPT = {gap[eps[0]]:.4f} at ε = {eps[0]:g}, {gap[mid]:.4f} at ε = {mid:g}, "
            f"{gap[eps[-1]]:.4f} at ε = {eps[-1]:g}")


def _large_eps(c: pd.DataFrame, eps: list[float], metric: str) -> tuple[str, float, float, float]:
    large = [e for e in eps if e >= 4]
    opt = float(np.mean([_val(c, "OPT", metric, e)[0] for e in large])) if large else math.nan
    grr = float(np.mean([_val(c, "GRR", metric, e)[0] for e in large])) if large else math.nan
    return ", ".join(f"{e:g}" for e in large), opt, grr, _val(c, BASELINE, metric)[0]


def _ev_large_eps_half(c: pd.DataFrame, eps: list[float], metric: str, claim: Any, bundle: Any) -> str:
    large, opt, grr, base = _large_eps(c, eps, metric)
    return (f"mean over ε ∈ {{{large}}}: OPT {opt:.4f}, GRR {grr:.4f}, non-private {base:.4f}; ratio "
            f"{opt / min(grr, base):.2f} (criterion ≤ {claim.threshold:g})")


def _ev_large_eps_reduction(c: pd.DataFrame, eps: list[float], metric: str, claim: Any, bundle: Any) -> str:
    large, opt, grr, base = _large_eps(c, eps, metric)
    return (f"mean over ε ∈ {{{large}}}: OPT {opt:.4f}, GRR {grr:.4f}, non-private {base:.4f}; reduction "
            f"{min(grr, base) - opt:.4f} (criterion ≥ {claim.threshold:g})")


def _ev_no_convergence(c: pd.DataFrame, eps: list[float], metric: str, claim: Any, bundle: Any) -> str:
    o, _ = _val(c, "OPT", metric, eps[-1])
    b, _ = _val(c, BASELINE, metric)
    mean_d, upper = paired_upper(bundle, metric, "OPT", BASELINE, eps[-1])
    return (f"at ε = {eps[-1]:g}: OPT {o:.4f} vs non-private {b:.4f}; paired difference {mean_d:.4f}, "
            f"95% CI [{2 * mean_d - upper:.4f}, {upper:.4f}] (excludes 0 = distinct)")


def _ev_similar(c: pd.DataFrame, eps: list[float], metric: str, claim: Any, bundle: Any) -> str:
    spread = {e: np.ptp([_val(c, m, metric, e)[0] for m in METHODS]) for e in eps}
    worst = max(spread, key=spread.get)
    return f"max spread {spread[worst]:.4f} at ε = {worst:g} (criterion ≤ {claim.threshold:g})"


def _ev_close_at_small_eps(c: pd.DataFrame, eps: list[float], metric: str, claim: Any, bundle: Any) -> str:
    o, _ = _val(c, "OPT", metric, eps[0])
    g = min(_val(c, m, metric, eps[0])[0] for m in ("GRR", "SS"))
    return f"ε = {eps[0]:g}: OPT {o:.4f}, best of GRR/SS {g:.4f}"


def _ev_beyond_threshold(c: pd.DataFrame, eps: list[float], metric: str, claim: Any, bundle: Any) -> str:
    lower = {e: _val(c, "OPT", metric, e)[0] < min(_val(c, m, metric, e)[0] for m in ("GRR", "SS")) for e in eps}
    signif = {e: all(paired_upper(bundle, metric, "OPT", m, e)[1] < 0 for m in ("GRR", "SS")) for e in eps}
    threshold = next((e for i, e in enumerate(eps) if all(lower[x] for x in eps[i:])), None)
    strict = next((e for i, e in enumerate(eps) if all(signif[x] for x in eps[i:])), None)
    vals = "; ".join(f"ε={e:g}: OPT {_val(c, 'OPT', metric, e)[0]:.3f}, GRR {_val(c, 'GRR', metric, e)[0]:.3f},"
                     f" SS {_val(c, 'SS', metric, e)[0]:.3f}" for e in eps)
    sig_text = (f"significant (paired 95% CI of OPT − GRR and OPT − SS below 0) from ε = {strict:g} on"
                if strict is not None else "no tail of the grid where OPT is significantly lower (paired 95% CIs)")
    return ((f"threshold ε = {threshold:g}; " if threshold is not None else "no threshold in the grid; ")
            + f"{sig_text} [{vals}]")


#: the deciding values of each trend, by the claim name's `<trend>` part
_EVIDENCE = {"unaffected": _ev_unaffected, "smallest": _ev_smallest, "gap-widens": _ev_gap_widens,
             "large-eps-half": _ev_large_eps_half, "large-eps-reduction": _ev_large_eps_reduction,
             "no-convergence": _ev_no_convergence, "similar": _ev_similar,
             "close-at-small-eps": _ev_close_at_small_eps, "beyond-threshold": _ev_beyond_threshold}


def _trend_claims(bundle: Any) -> list[tuple[str, str, Any]]:
    """The experiment's ``[[claims]]`` of the form ``<metric>-<trend>``, as (metric, trend, claim), in metric order."""
    out = []
    for claim in bundle.spec.claims:
        metric, _, trend = claim.name.partition("-")
        if metric in _METRIC_ORDER and trend in _EVIDENCE:
            out.append((metric, trend, claim))
    return sorted(out, key=lambda x: _METRIC_ORDER.index(x[0]))


def trend_checks(bundle: Any) -> list[tuple[str, str, bool]]:
    """The §7 'Claimed trends' of this figure pair as (claim, deciding values, holds) triples.

    The verdicts are the experiment's ``[[claims]]`` on the summary (repro/engine/claims.py); a claim whose
    selection has no rows in these results is left out."""
    c = curves(bundle)
    eps = sorted(e for e in c.epsilon.unique() if e > 0)
    if not eps:
        return []
    fu, ff = _figure_ids(bundle)
    verdicts = evaluate_all([cl for _, _, cl in _trend_claims(bundle)], bundle.summary, params=_params(bundle),
                            values=supplied_values(bundle, c, eps))
    out: list[tuple[str, str, bool]] = []
    for metric, trend, claim in _trend_claims(bundle):
        ok = verdicts[claim.name]
        if ok is None:
            continue
        fig = fu if metric in ("accuracy", "f1") else ff
        out.append((f"Fig. {fig}: {claim.description}", _EVIDENCE[trend](c, eps, metric, claim, bundle), ok))
    return out


def privacy_lines(bundle: Any) -> list[str]:
    """One line per mechanism: the label (and caveat) of its ε as the trials recorded it (``eps_label``,
    ``eps_caveat``; from :func:`repro.privacy.ldp_mechanisms.guarantee`)."""
    t = bundle.trials
    if "eps_label" not in t:
        return ["", "Privacy labels: not recorded in these results (run them again to record each ε's label)."]
    caveats = t["eps_caveat"] if "eps_caveat" in t else pd.Series("", index=t.index)
    seen = pd.DataFrame({"method": t["method"], "label": t["eps_label"], "caveat": caveats.fillna("")})
    lines = ["", "Privacy of each mechanism's ε (local DP of each training record's sensitive attribute):", ""]
    for method in [*METHODS, BASELINE]:
        rows = seen[seen["method"] == method].drop_duplicates(["label", "caveat"])
        for label, caveat in rows[["label", "caveat"]].itertuples(index=False):
            lines.append(f"- {method}: *{label}*" + (f" — {caveat}" if caveat else ""))
    return lines


def report_markdown(bundle: Any) -> str:
    """Trend-by-trend verdicts of the figure pair (spec §7 'Claimed trends')."""
    checks = trend_checks(bundle)
    if not checks:
        return "\n".join(["No ε values in these results; no trend can be checked.", *privacy_lines(bundle)])
    data = bundle.trials
    lines = [f"Claimed trends (spec §7), from {int(data['repetition'].nunique())} seeds "
             f"(profile {bundle.profile}, variant {bundle.variant}):", ""]
    lines += [f"- {claim}: {_verdict(ok)} — {vals}" for claim, vals, ok in checks]
    held = sum(ok for _, _, ok in checks)
    lines += ["", f"{held}/{len(checks)} claims hold in our numbers."]
    c = curves(bundle)
    eps = sorted(e for e in c.epsilon.unique() if e > 0)
    if eps and "train_delta" in set(c.metric):
        parts = [f"{m} {_val(c, m, 'train_delta', eps[-1])[0]:.4f}" for m in ("OPT", "GRR")]
        base = _val(c, BASELINE, "train_delta")[0]
        lines += ["", f"Context: data unfairness Δ (Definition 10) of the perturbed training set at ε = {eps[-1]:g}: "
                  f"{', '.join(parts)} (original data {base:.4f}). The mechanisms act on the data; the "
                  "classifier's gaps also depend on how well the other features reveal the attribute."]
    lines += privacy_lines(bundle)
    return "\n".join(lines)
