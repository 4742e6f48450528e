"""Figures and report text of the thesis Part I tables (read saved results only; never recompute).

Spec: seed-003-thesis.md §3–§4, §10 (P4, P5, P7, P9); measured-anchors.md (thesis Part I).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pandas as pd

from repro.privacy.group import group_privacy
from repro.studies.methods import is_user_label
from repro.studies.thesis import methods as method_registry
from repro.studies.thesis.methods.algorithm2 import ALG2, BASE
from repro.studies.thesis.methods.dp_fermi import NAME as FERMI
from repro.studies.thesis.methods.dp_fermi_other_group import NAME as FERMI_OTHER
from repro.studies.thesis.methods.dp_fermi_strict import NAME as FERMI_STRICT

__all__ = ["plot", "report_markdown"]

# ------------------------------------------------------------------------------ figures, report

#: colours and markers for methods that declare none (e.g. a researcher's own, `repro run --with`)
_SPARE_STYLES = ({"color": "C4", "marker": "P"}, {"color": "C5", "marker": "X"}, {"color": "C6", "marker": "h"},
                 {"color": "C8", "marker": "p"}, {"color": "C9", "marker": "d"})


def _registered_styles() -> dict[str, dict[str, Any]]:
    """Record name -> style, in the registry's order (every method file's declared ``style``)."""
    styles: dict[str, dict[str, Any]] = {}
    for method in method_registry.methods().values():
        for record in method.record_names:
            styles[record] = dict(method.style.get(record, {}))
    return styles


def user_methods(trials) -> list[str]:
    """The researcher's methods in a run (rows whose ε is *declared by the user*), sorted."""
    if "eps_label" not in trials:
        return []
    return sorted(trials.loc[trials["eps_label"].map(is_user_label), "method"].astype(str).unique())


def _styles(trials) -> dict[str, dict[str, Any]]:
    """Style of every method of the run: the registered ones first, then every other method found."""
    styles = _registered_styles()
    others = [m for m in dict.fromkeys(trials["method"].astype(str)) if m not in styles]
    for i, method in enumerate(others):
        styles[method] = dict(_SPARE_STYLES[i % len(_SPARE_STYLES)])
    return styles


def data_modes(bundle) -> list[str | None]:
    """Data modes in the run (``authors`` first), or ``[None]`` for runs without the ``data`` axis."""
    t = bundle.trials
    if "data" not in t or t["data"].isna().all():
        return [None]
    return sorted(t["data"].dropna().unique(), key=lambda d: (d != "authors", d))


def view(bundle, data: str | None) -> Any:
    """The bundle restricted to one data mode (trials, summary rows and the data table)."""
    if data is None:
        return bundle
    summ = bundle.summary
    summ = summ[summ["data"] == data]  # typed column (summary.csv), never the setting label
    tables = {}
    d = bundle.table("data", default=None)   # runs without an Algorithm 2 trial have no data table
    if d is not None:
        tables["data"] = d[d["data"] == data] if "data" in d else d
    return dataclasses.replace(bundle, trials=bundle.trials[bundle.trials["data"] == data], summary=summ,
                               _tables=tables)


def _agg(bundle) -> Any:
    t = bundle.trials
    cols = ["accuracy", "sp_gap"]
    keys = ["method"] + (["lambda"] if "lambda" in t else [])
    g = t.groupby(keys, dropna=False)[cols].agg(["mean", "std", "count"])
    g.columns = [f"{a}_{b}" for a, b in g.columns]
    return g.reset_index()


def _paper_points(spec) -> dict[str, list[tuple[float, float, float | None]]]:
    pts: dict[tuple[str, Any], dict[str, float]] = {}
    for ref in spec.references:
        lam = ref.setting.get("lambda")
        pts.setdefault((ref.method or "", lam), {})[ref.metric] = ref.value
    out: dict[str, list] = {}
    for (method, lam), v in pts.items():
        if "accuracy" in v and "sp_gap" in v:
            out.setdefault(method, []).append((v["sp_gap"], v["accuracy"], lam))
    return out


def plot(bundle, outdir: Path) -> list[Path]:
    """Accuracy vs SP gap: DP-FERMI's λ curve (±1 std over runs; SP-gap bars clipped at 0, since a gap
    cannot be negative), Algorithm 2's point, the paper's points as hollow markers."""
    from repro.plotting import new_figure, save_figure

    modes = data_modes(bundle)
    fig, axes = new_figure(ncols=len(modes), width=4.6, height=3.4)
    for ax, data in zip(axes[0], modes, strict=True):
        _draw(ax, view(bundle, data), data)
    return save_figure(fig, outdir, bundle.spec.id.replace(".", "_"))


def _draw(ax, bundle, data: str | None) -> None:
    from repro.plotting import PAPER_MARKER

    agg = _agg(bundle)
    styles = _styles(bundle.trials)
    mine = set(user_methods(bundle.trials))
    for method, st in styles.items():
        rows = agg[agg["method"] == method]
        if rows.empty:
            continue
        curve = "lambda" in rows and rows["lambda"].notna().sum() > 1
        if curve:
            rows = rows.sort_values("lambda")
        sp_std = rows["sp_gap_std"].fillna(0)
        # an SP gap is >= 0: the bar below the mean stops at 0 (asymmetric), the one above is ±1 std
        sp_err = [sp_std.clip(upper=rows["sp_gap_mean"].clip(lower=0)), sp_std]
        ax.errorbar(rows["sp_gap_mean"], rows["accuracy_mean"], xerr=sp_err,
                    yerr=rows["accuracy_std"].fillna(0), color=st["color"], marker=st["marker"],
                    markersize=st.get("markersize", 7 if method in mine else 5),
                    linestyle="-" if curve else "none", linewidth=1, capsize=2,
                    label=method if method in mine else f"{method} (ours)", alpha=st.get("alpha", 1.0))
        if curve and method == FERMI:
            for _, r in rows.iterrows():
                ax.annotate(f"λ={r['lambda']:g}", (r["sp_gap_mean"], r["accuracy_mean"]),
                            textcoords="offset points", xytext=(4, 3), fontsize=6, color=st["color"])
    for method, pts in _paper_points(bundle.spec).items():
        st = styles.get(method, {"color": "k"})
        pts = sorted(pts, key=lambda p: (p[2] is None, p[2] or 0))
        ax.plot([p[0] for p in pts], [p[1] for p in pts], **{**PAPER_MARKER, "color": st["color"],
                "marker": "*" if method == ALG2 else "o", "markersize": 11 if method == ALG2 else 7},
                label=f"{method} (paper)")
    ax.set_xlabel("statistical parity gap (test)")
    ax.set_ylabel("accuracy (test)")
    p = bundle.spec.params
    where = "" if data is None else f", {data} data"
    ax.set_title(f"{bundle.spec.id}: {p.get('dataset')}{where}, ε′ = {p.get('eps_prime')}, δ′ = {p.get('delta')}"
                 f" [{bundle.variant}]", fontsize=8)
    # below the axes, never over the λ labels and error bars (issue #35; more so with --with methods)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)


def _data_row(bundle) -> Any:
    d = bundle.table("data", default=None)   # runs without an Algorithm 2 trial have no data table
    return d.iloc[0] if d is not None and len(d) else None


_WHY = {
    (ALG2, "sp_gap", "credit-card", None): (
        "our DP-SGD base model on the Credit Card data is almost a constant 'no default' classifier "
        "(before post-processing its SP gap is {base_sp:.4f} and its accuracy {base_acc:.4f} ≈ 1 − the "
        "default rate), so Algorithm 2 has almost nothing to equalize and its SP gap is the Laplace noise "
        "floor; the thesis's base model must have been less degenerate (its file "
        "`credit-card-defaulters_processed.csv` is not public and our category merges are a guess, spec "
        "P5). Whether the claim 'Algorithm 2 has the smaller SP gap' holds is judged in the thesis-claim line "
        "above."),
    (ALG2, "accuracy", None, None): (
        "the Algorithm 2 accuracy follows the base DP-SGD model; see the privacy paragraph (our noise is "
        "recalibrated for the actual (q, T), spec P4)."),
    (FERMI, "accuracy", "adult", "clean"): (
        "on the clean data DP-FERMI (the thesis's code path) is LESS accurate than the table (mean difference over "
        "the λ rows {fermi_acc_diff:+.4f}) while its SP gaps follow the table's λ curve. The thesis ran on the "
        "authors' Adult file, which holds adult.data twice, so 74.8 % of its test rows have a copy in training "
        "(issue 13 fact 1); compare the `data = authors` rows of this table."),
    (FERMI, "accuracy", None, "clean"): (
        "on the clean data the mean difference of DP-FERMI (the thesis's code path) over the λ rows is "
        "{fermi_acc_diff:+.4f}; the thesis ran on the authors' processed file and split, so compare the "
        "`data = authors` rows of this table."),
    (FERMI, "accuracy", None, "authors"): (
        "on the authors' file and split the mean difference over the λ rows is {fermi_acc_diff:+.4f}; nothing "
        "was tuned to close what remains (the thesis's seeds and PyTorch's batch order are not reproducible "
        "bit for bit)."),
    (FERMI, "accuracy", None, None): (
        "DP-FERMI (the thesis's code path) is systematically LESS accurate than the table (mean difference "
        "over the λ rows {fermi_acc_diff:+.4f}) while its SP gaps follow the table's λ curve, so at equal SP "
        "gap our curve lies ≈ 0.01–0.02 lower. Not explained by the data split (three other 75/25 splits "
        "moved the λ = 1 mean by ≤ 0.005 in our check) nor by the seeds (std of the mean ≈ std/√10). "
        "Remaining suspects: the non-public purified data file (P5), and undocumented details of the "
        "authors' run; we did not tune anything to close the gap."),
    (FERMI, "sp_gap", None, None): (
        "outside a tolerance derived from our own run-to-run spread; DP-FERMI's SP gap varies strongly "
        "between runs at small λ."),
}


def _explain(method: str, metric: str, dataset: str, ctx: dict[str, float], data: str | None = None) -> str:
    for key in ((method, metric, dataset, data), (method, metric, None, data), (method, metric, dataset, None),
                (method, metric, None, None)):
        if key in _WHY:
            return _WHY[key].format(**ctx)
    return "no specific explanation; see the notes."


_MODE_HEAD = {
    "authors": ("**As the authors ran it (`data = authors`)**: their processed file rebuilt from the raw data and "
                "their fixed split `df.sample(frac=0.75, random_state=100)`. {leak}"),
    "clean": ("**Clean reading (`data = clean`)**: our deduplicated canonical data with a 75/25 split drawn from "
              "the base seed; no test row has a copy in training."),
}
_LEAK = {
    "adult": ("The Adult file holds adult.data's 30,162 complete rows twice, so 11,287 of the 15,081 test rows "
              "(74.8 %) have an identical copy in training: test accuracy is optimistic, by more for models that "
              "fit the training rows more closely."),
    "credit-card": ("The Credit Card file is not public: ours is an INFERRED reconstruction (issue 13 fact 4), "
                    "with no duplicated rows."),
}


def report_markdown(bundle) -> str:
    """Per data mode: paper vs ours in words (see :func:`_mode_markdown`)."""
    modes = data_modes(bundle)
    dataset = str(bundle.spec.params.get("dataset", ""))
    parts = []
    for data in modes:
        if data is not None:
            parts.append("\n" + _MODE_HEAD[data].format(leak=_LEAK.get(dataset, "")) + "\n")
        parts.append(_mode_markdown(view(bundle, data), data))
    return "\n".join(parts)


def _label_sentence(trials: pd.DataFrame) -> str:
    """Each method's ε label as its records state it (the method's declared guarantee)."""
    if "eps_label" not in trials:
        return ""
    labels = trials.dropna(subset=["eps_label"]).groupby("method", sort=False)["eps_label"].first()
    return "ε labels (each method's declared guarantee): " + "; ".join(
        f"{m} *{lab}*" for m, lab in labels.items()) + " (what each caveat treats as public: docs/privacy.md)."


def _person_sentence(bundle, epsilon: float, delta: float) -> str:
    """Algorithm 2's ε per person where a person has several rows (the data table's ``rows_per_person``)."""
    row = _data_row(bundle)
    if row is None or "rows_per_person" not in row or not int(row["rows_per_person"]) > 1:
        return ""
    k = int(row["rows_per_person"])
    eps_k, delta_k = group_privacy(float(epsilon), delta, k)
    return (f" Privacy unit: {row['privacy_unit']}. Every ε here is per row; per person Algorithm 2's "
            f"(ε′, δ′) is the group privacy of {k} rows: ({eps_k:.3f}, {delta_k:.2g}).")


def _mode_markdown(bundle, data: str | None) -> str:
    """Paper vs ours in words: Algorithm 2 vs the comparable-accuracy DP-FERMI row, the privacy actually
    spent (spec P4), the DP-FERMI group-order behaviour, and an explanation of every row outside tolerance."""
    agg = _agg(bundle)
    t = bundle.trials
    spec = bundle.spec
    dataset = str(spec.params.get("dataset", ""))
    judge = bundle.profile != "smoke"  # smoke numbers are not comparable to the thesis: no verdicts
    lines: list[str] = []
    if not judge:
        lines.append("- Smoke profile: the numbers below check the wiring only and are not compared with the "
                     "thesis (run `--profile full` for verdicts).")
    a2 = agg[agg["method"] == ALG2]
    base = agg[agg["method"] == BASE]
    ctx = {"base_sp": float(base["sp_gap_mean"].iloc[0]) if not base.empty else math.nan,
           "base_acc": float(base["accuracy_mean"].iloc[0]) if not base.empty else math.nan,
           "fermi_acc_diff": math.nan}
    if not a2.empty:
        r = a2.iloc[0]
        sel = t[t["method"] == ALG2]
        delta = float(spec.params.get("delta", 1e-5))
        paper_sigma = next((ref.value for ref in spec.references if ref.metric == "noise_std"), math.nan)
        lines.append(
            f"- **Algorithm 2** ({int(r.accuracy_count)} runs): accuracy {r.accuracy_mean:.4f} ± "
            f"{r.accuracy_std:.4f}, SP gap {r.sp_gap_mean:.4f} ± {r.sp_gap_std:.4f}; before post-processing "
            f"the DP-SGD model has accuracy {ctx['base_acc']:.4f} and SP gap {ctx['base_sp']:.4f}.")
        lines.append(
            f"- **Privacy (spec P4).** DP-SGD ran at q = {sel['q'].mean():.4f}, T = {int(sel['steps'].mean())} "
            f"(Opacus: q = 1/⌈n_fit/1024⌉) with noise multiplier {sel['noise_multiplier'].mean():.4f} "
            f"(σ = {sel['noise_std'].mean():.3f}; the thesis's σ = {paper_sigma:g}, calibrated by the thesis "
            f"for its own (q, T)). Accountant ε of the DP-SGD part: {sel['eps_dpsgd'].mean():.3f} (PLD), "
            f"{sel['eps_dpsgd_rdp'].mean():.3f} (RDP); total ε′ = {sel['eps_total'].mean():.3f} at δ′ = {delta:g} "
            f"(the DP-SGD part + ε₀ + ε₁ of the post-processing, basic composition). Variant `{bundle.variant}`. "
            + _label_sentence(t) + _person_sentence(bundle, sel["eps_total"].mean(), delta))
    fr = agg[agg["method"] == FERMI].sort_values("lambda") if "lambda" in agg else agg.iloc[0:0]
    if not fr.empty and not a2.empty and judge:
        best = fr.iloc[(fr["accuracy_mean"] - a2.iloc[0].accuracy_mean).abs().argsort()[:1]].iloc[0]
        ratio = best.sp_gap_mean / max(a2.iloc[0].sp_gap_mean, 1e-12)
        lines.append(
            f"- **Thesis claim** (Algorithm 2 has the smaller SP gap at comparable accuracy): DP-FERMI's "
            f"closest-accuracy row is λ = {best['lambda']:g} with accuracy {best.accuracy_mean:.4f} and SP gap "
            f"{best.sp_gap_mean:.4f}, {ratio:.1f}× Algorithm 2's: "
            + ("**holds**." if ratio > 1 else "**does not hold** here."))
    other = agg[agg["method"] == FERMI_OTHER]
    if not other.empty and not fr.empty:
        o_last = other.sort_values("lambda").iloc[-1]
        f_last = fr.iloc[-1]
        blocked = o_last.sp_gap_mean > 2 * f_last.sp_gap_mean and o_last.sp_gap_mean > 0.5 * ctx["base_sp"]
        lines.append(
            "- **DP-FERMI group order (spec seed-004 §4.3, measured-anchors).** The code's 1×1 W keeps one "
            "ERMI term, that of the group listed first in the training frame. With the male term (our "
            "`DP-FERMI` rows) the SP gap falls with λ as in the table; with the female term (`DP-FERMI (other "
            "group order)`) it is " + ", ".join(f"{r.sp_gap_mean:.3f} at λ = {r['lambda']:g}"
                                                for _, r in other.sort_values("lambda").iterrows())
            + (", i.e. the regularizer does not reduce the gap (the authors' code on the rebuilt Adult file "
               "gave 0.21–0.23 at λ = 1 for this reason)." if blocked else
               ": on this dataset the base model is already nearly fair, so both orders give small gaps."))
    strict = agg[agg["method"] == FERMI_STRICT]
    if not strict.empty:
        lines.append(
            "- **DP-FERMI (strict)** (paper math: full ERMI, per-sample clipping, accountant-calibrated noise; "
            "ablation): SP gap " + ", ".join(f"{r.sp_gap_mean:.3f}" for _, r in strict.sort_values("lambda").iterrows())
            + f" and accuracy {strict['accuracy_mean'].min():.3f}–{strict['accuracy_mean'].max():.3f} over the "
            "table's λ: with the true ERMI (small when predictions are nearly group-independent) and clipped, "
            "noised steps, λ in this range barely moves the model. The table's λ values are specific to the "
            "code's one-term surrogate.")
    lines.extend(_user_lines(bundle, agg, a2))
    summ = bundle.summary
    judged = summ[summ["within"].notna() & summ["metric"].isin(["accuracy", "sp_gap"])]
    fermi_rows = judged[(judged["method"] == FERMI) & (judged["metric"] == "accuracy")]
    if not fermi_rows.empty:
        ctx["fermi_acc_diff"] = float(pd.to_numeric(fermi_rows["diff"]).mean())
    bad = judged[judged["within"].astype(str).str.lower() != "true"]
    if not judge:
        pass
    elif bad.empty and not judged.empty:
        lines.append("- Every paper value is within its tolerance.")
    elif not bad.empty:
        lines.append("- **Rows outside tolerance, and why:**")
        for (method, metric), grp in bad.groupby(["method", "metric"], sort=False):
            rows = "; ".join(
                f"{r['setting'] if isinstance(r['setting'], str) else 'ours'} {r['mean']:.4f} vs {r['paper']:.4f} "
                f"(diff {r['diff']:+.4f}, tol {r['tolerance']:g})" for _, r in grp.iterrows())
            lines.append(f"  - {method} {metric}: {rows}. Why: "
                         + _explain(str(method), str(metric), dataset, ctx, data))
    data = _data_row(bundle)
    if data is not None:
        lines.append(
            f"- Data: {data['dataset']} from `{data['source']}`"
            + ("" if bool(data["canonical"]) else " (**derived substitute**, not the canonical file)")
            + f"; {int(data['rows'])} rows × {int(data['features'])} features; DP-SGD fit on "
              f"{int(data['n_fit'])}, post-processing {int(data['n_post'])}, DP-FERMI trains on "
              f"{int(data['n_full_train'])}, test {int(data['n_test'])}.")
    return "\n".join(lines)


def _user_lines(bundle, agg, a2) -> list[str]:
    """One line per researcher's method (``repro run --with``): its numbers beside Algorithm 2's, on the same
    splits and seeds, and its guarantee as the user declared it."""
    lines = []
    table = bundle.table("user_methods", default=None)   # runs without a user method have no such table
    declared = table.drop_duplicates("method").set_index("method") if table is not None else None
    for method in user_methods(bundle.trials):
        rows = agg[agg["method"] == method]
        if rows.empty:
            continue
        r = rows.iloc[0]
        eps = bundle.trials.loc[bundle.trials["method"] == method, "eps_total"].mean()
        text = (f"- **{method}** ({int(r.accuracy_count)} run(s) on the same splits and seeds as the paper's methods): "
                f"accuracy {r.accuracy_mean:.4f} ± {r.accuracy_std:.4f}, SP gap {r.sp_gap_mean:.4f} ± "
                f"{r.sp_gap_std:.4f}")
        if not a2.empty:
            text += (f" (Algorithm 2: {a2.iloc[0].accuracy_mean:.4f}, {a2.iloc[0].sp_gap_mean:.4f})")
        guarantee = (f"{declared.loc[method, 'guarantee']}" if declared is not None and method in declared.index
                     else f"ε = {eps:g}")
        lines.append(text + f". Privacy: {guarantee} — *declared by the user*, not checked by the project.")
    return lines

