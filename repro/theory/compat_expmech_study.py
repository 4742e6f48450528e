"""Study module for ``experiments/compat-expmech-audit.toml`` (Cummings et al. 2019, Algorithm 1, Theorem 2).

One trial draws a dataset Z ~ Dⁿ over a small discrete universe (x ∈ {0..K−1}, a, y; spec §6), or
pushes it to the fallback boundary of the noisy count (``dataset = "boundary"``), computes Algorithm 1's
exact output distribution on Z and on every replace-one neighbour (quadrature over the Laplace draw,
:mod:`repro.theory.expmech_learner`), and reports the realised privacy loss and the δ it needs beside
the paper's claim (2ε, e^{−√n}), plus the exact probabilities that the output is α-discriminatory and
(α, β)-accurate under the population D.

Spec: seed-000-002-compat.md §3.1–§3.4, §3.7, §3.8 (draft), §6 (R-T3, R-F1), §8 (DEC-4, DEC-9, DEC-24, DEC-25).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from repro.errors import InvalidParameterError
from repro.plotting import new_figure, save_figure
from repro.theory import expmech_learner as em
from repro.theory import sample_complexity as sc
from repro.trial import TrialContext, TrialOutput

__all__ = ["VERSION", "CODE_DEPENDENCIES", "DATASETS", "boundary_counts", "run_trial", "plot", "report_markdown"]

VERSION = "1"
CODE_DEPENDENCIES = ("repro.theory.expmech_learner", "repro.theory.sample_complexity")
DATASETS = ("sampled", "boundary")
METHOD = "Alg. 1 (exact audit)"
TOP_NEIGHBOURS = 10


@functools.lru_cache(maxsize=16)
def _universe(k: int, p_a: float, w: float, b: float) -> tuple[np.ndarray, list[tuple[int, int]], np.ndarray]:
    hyp, ts = em.threshold_class(k)
    return hyp, ts, em.logistic_population(k, p_a=p_a, w=w, b=b)


def boundary_counts(counts: np.ndarray, n: int, epsilon: float) -> tuple[np.ndarray, bool]:
    """Move positives of the smaller positive cell to negatives (same x, a) until min_a|Z₁ₐ| = ⌈√n/ε⌉ + 2.

    At that count the noisy estimate M sits near the fallback threshold M = 1, where the Laplace step
    matters most. Returns (counts, applied); not applied if the cell is already smaller.
    Spec: §3.7 (worst-case neighbour types; adversarial datasets are admissible for a DP audit).
    """
    out = counts.copy()
    pos = out[:, :, 1].sum(axis=0)
    a = int(np.argmin(pos))
    target = math.ceil(math.sqrt(n) / epsilon) + 2
    if pos[a] <= target:
        return out, False
    for _ in range(int(pos[a] - target)):
        x = int(np.argmax(out[:, a, 1]))
        out[x, a, 1] -= 1
        out[x, a, 0] += 1
    return out, True


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """Audit Algorithm 1 exactly at one (n, ε, dataset type); see the module docstring.

    Parameters
    ----------
    params
        ``n``, ``epsilon``, ``dataset`` (sampled | boundary), universe ``k``, ``p_a``, ``w``, ``b``,
        ``alpha``, ``beta`` (for the utility probabilities and the Theorem 2 guarantee), ``nodes``.
    ctx
        ``ctx.shared_rng("dataset", n)`` draws Z, shared by every ε and dataset type of a repetition.
    """
    n, eps = int(params["n"]), float(params["epsilon"])
    kind = str(params.get("dataset", "sampled"))
    if kind not in DATASETS:
        raise InvalidParameterError(f"dataset must be one of {DATASETS}; got {kind!r}.")
    alpha, beta = float(params.get("alpha", 0.1)), float(params.get("beta", 0.05))
    k = int(params.get("k", 10))
    hyp, ts, prob = _universe(k, float(params.get("p_a", 0.3)), float(params.get("w", 0.8)),
                              float(params.get("b", 0.5)))
    counts = em.sample_counts(prob, n, rng=ctx.shared_rng("dataset", n))
    applied = False
    if kind == "boundary":
        counts, applied = boundary_counts(counts, n, eps)
    claimed_eps, claimed_delta = 2.0 * eps, math.exp(-math.sqrt(n))
    # Many small vectorised operations: multi-threaded BLAS would only add contention.
    with threadpool_limits(limits=1):
        audit = em.audit_replace_one(counts, hyp, eps, (eps, claimed_eps), nodes=int(params.get("nodes", 12)))
    probs = audit.base.probs
    pop = em.population_scores(prob, hyp)
    opt = float(pop["u"].min())
    sample = em.sample_scores(counts, hyp)
    p_min = float(prob[:, :, 1].sum(axis=0).min())
    thm2 = sc.Thm2Params(epsilon=eps, alpha=alpha, beta=beta, p_min=p_min, h_size=float(len(ts)))
    delta_2eps = audit.deltas[claimed_eps]
    record = {
        "method": METHOD,
        "realised_epsilon": audit.realised_epsilon,
        "epsilon_ratio": audit.realised_epsilon / claimed_eps,
        "delta_at_2eps": delta_2eps,
        "delta_at_eps": audit.deltas[eps],
        "claim_holds": float(delta_2eps <= claimed_delta),
        "p_fallback": audit.base.p_fallback,
        "p_top": float(probs.max()),
        "p_alpha_discriminatory": float(probs[pop["Gamma"] <= alpha].sum()),
        "p_accurate": float(probs[pop["u"] <= opt + alpha].sum()),
        "expected_excess": float(probs @ pop["u"] - opt),
        "alpha_guaranteed_printed": sc.thm2_alpha_at_n(n, thm2, "printed"),
        "alpha_guaranteed_corrected": sc.thm2_alpha_at_n(n, thm2, "corrected"),
        "min_positive_count": float(counts[:, :, 1].sum(axis=0).min()),
        "n_neighbours": float(len(audit.rows)),
        "quad_error": audit.quad_error,
        "boundary_applied": float(applied),
    }
    worst = sorted(audit.rows, key=lambda r: -float(r["max_log_ratio"]))[:TOP_NEIGHBOURS]
    output = [
        {"t0": t0, "t1": t1, "u_sample": float(sample["u"][i]), "Gamma_pop": float(pop["Gamma"][i]),
         "err_pop": float(pop["err"][i]), "prob": float(probs[i])}
        for i, (t0, t1) in enumerate(ts)
    ]
    return TrialOutput(records=[record], tables={"worst_neighbours": worst, "output_distribution": output})


# --------------------------------------------------------------------------- figures and report


def plot(bundle: Any, outdir: Path) -> list[Path]:
    """Realised vs claimed ε, needed δ vs e^{−√n}, and utility probabilities; from saved results only."""
    t = bundle.trials
    fig, axes = new_figure(3, 1, width=3.3, height=2.9)
    ax = axes[0][0]
    ns = sorted(t["n"].unique())
    markers = {"sampled": "o", "boundary": "^"}
    for kind, grp in t.groupby("dataset"):
        for i, n in enumerate(ns):
            g = grp[grp["n"] == n].groupby("epsilon", as_index=False)["realised_epsilon"].max()
            ax.plot(g["epsilon"], g["realised_epsilon"], marker=markers.get(str(kind), "s"), ms=4, color=f"C{i}",
                    ls="-" if kind == "sampled" else ":", label=f"n={n}, {kind} (ours)")
    eps = np.array(sorted(t["epsilon"].unique()))
    ax.plot(eps, 2 * eps, "k--", lw=1, label="claimed 2ε [P]")
    ax.plot(eps, eps, color="gray", lw=0.8, ls="-.", label="ε")
    ax.set_xlabel("ε (input of Algorithm 1)")
    ax.set_ylabel("realised max |ln P/P′| (all neighbours)")
    ax.set_title("Privacy loss: realised (ours) vs claimed [P]", fontsize=8)
    ax.legend(fontsize=5.5)
    ax = axes[0][1]
    floor = 1e-40
    for i, e in enumerate(sorted(t["epsilon"].unique())):
        g = t[t["epsilon"] == e].groupby("n", as_index=False)[["delta_at_2eps", "delta_at_eps"]].max()
        ax.plot(g["n"], np.maximum(g["delta_at_eps"], floor), marker="o", ms=3, color=f"C{i}", ls=":",
                label=f"δ̂(ε), ε={e:g} (ours)")
        ax.plot(g["n"], np.maximum(g["delta_at_2eps"], floor), marker="s", ms=3, color=f"C{i}",
                label=f"δ̂(2ε), ε={e:g} (ours)")
    nn = np.logspace(np.log10(min(ns)), np.log10(max(ns)), 50)
    ax.plot(nn, np.exp(-np.sqrt(nn)), "k--", lw=1, label="claimed δ = e^{−√n} [P]")
    if (t[["delta_at_2eps", "delta_at_eps"]].to_numpy() == 0).all():
        ax.text(0.4, 0.47, "δ̂ = 0 at ε and at 2ε for every dataset\nand neighbour (drawn at 1e−40)",
                transform=ax.transAxes, ha="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(floor / 3, 1)
    ax.set_xlabel("n")
    ax.set_ylabel("needed δ (0 drawn at 1e−40)")
    ax.set_title("δ needed at ε and at 2ε (worst neighbour)", fontsize=8)
    ax.legend(fontsize=5, ncol=2, loc="lower left")
    ax = axes[0][2]
    s = t[t["dataset"] == "sampled"] if (t["dataset"] == "sampled").any() else t
    for i, e in enumerate(sorted(s["epsilon"].unique())):
        g = s[s["epsilon"] == e].groupby("n", as_index=False)[["p_accurate", "p_alpha_discriminatory"]].mean()
        ax.plot(g["n"], g["p_accurate"], marker="o", ms=3, color=f"C{i}", label=f"P[Γ+err ≤ OPT+α], ε={e:g}")
        ax.plot(g["n"], g["p_alpha_discriminatory"], marker="^", ms=3, color=f"C{i}", ls=":",
                label=f"P[Γ ≤ α], ε={e:g}")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("n")
    ax.set_ylabel("exact probability (ours)")
    alpha = bundle.run.get("params", {}).get("alpha", 0.1)
    ax.set_title(f"Utility of the output (α = {alpha}), sampled Z", fontsize=8)
    ax.legend(fontsize=5.5)
    fig.suptitle("Cummings et al. (2019) Algorithm 1: exact privacy audit (ours) vs claimed (2ε, e^{−√n}) [P] "
                 "— derived figure, not a figure of the paper", fontsize=8)
    return list(save_figure(fig, outdir, "compat_expmech_audit"))


def report_markdown(bundle: Any) -> str:
    """Verdicts from saved results: privacy claim, realised loss, δ, utility; draft-vs-final notes."""
    t = bundle.trials
    holds = int(t["claim_holds"].sum())
    ratio = t["epsilon_ratio"]
    lines = [
        f"**Privacy (ours, exact audit over all replace-one neighbours).** The paper's claim "
        f"(2ε, δ = e^{{−√n}})-DP [P] holds on {holds} of {len(t)} audited datasets. The realised privacy loss "
        f"max |ln P_Z(h)/P_Z′(h)| is {ratio.min():.2f}–{ratio.max():.2f} × the claimed 2ε "
        f"({t['realised_epsilon'].min():.3g}–{t['realised_epsilon'].max():.3g}); "
        + ("the δ needed is exactly 0 at 2ε and at ε on every neighbour (every log-ratio is below ε), so on these "
           "datasets Algorithm 1 behaves as a pure "
           if t["delta_at_2eps"].max() == 0 and t["delta_at_eps"].max() == 0 else
           f"the δ needed at 2ε is at most {t['delta_at_2eps'].max():.3g} and at ε at most "
           f"{t['delta_at_eps'].max():.3g}; on these datasets its largest log-ratio makes it a pure ")
        + f"{t['realised_epsilon'].max():.3g}-DP mechanism. Largest quadrature-error estimate (log-probability): "
        f"{t['quad_error'].max():.1e}. This is an audit of the datasets drawn here, not a proof over all datasets.",
        "",
    ]
    by = t.groupby(["dataset", "n", "epsilon"], as_index=False).agg(
        realised=("realised_epsilon", "max"), d2=("delta_at_2eps", "max"), fb=("p_fallback", "mean"),
        acc=("p_accurate", "mean"), disc=("p_alpha_discriminatory", "mean"),
        a_p=("alpha_guaranteed_printed", "first"), a_c=("alpha_guaranteed_corrected", "first"))
    lines += ["| dataset | n | ε | realised ε (ours) | claimed 2ε [P] | δ̂(2ε) (ours) | claimed δ = e^{−√n} [P] | "
              "P[fallback] | P[(α)-accurate] (ours) | P[α-discr.] (ours) | guaranteed α, printed [P] / corrected [X] |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in by.itertuples():
        lines.append(
            f"| {r.dataset} | {r.n} | {r.epsilon:g} | {r.realised:.3f} | {2 * r.epsilon:g} | {r.d2:.2g} | "
            f"{math.exp(-math.sqrt(r.n)):.2g} | {r.fb:.3g} | {r.acc:.3f} | {r.disc:.3f} | "
            f"{_inf(r.a_p)} / {_inf(r.a_c)} |")
    useful = by[(by["a_c"] < 1) | (by["a_p"] < 1)]
    lines += [
        "",
        "**Utility.** P[(α)-accurate] is the exact probability that the output h satisfies "
        "Γ(h) + err(h) ≤ OPT + α under the population D (DEC-9), P[α-discr.] that Γ(h) ≤ α; Theorem 2 only "
        "promises ≥ 1 − β once n is past its sample-size bound; "
        + ("at every n here its guaranteed α is vacuous (∞ = a side condition fails; values > 1 say nothing)."
           if useful.empty else f"its guaranteed α is below 1 in {len(useful)} of {len(by)} rows of the table.")
        + " The fallback column is Pr[M ≤ 1] (DEC-4: "
        "uniform output), which dominates at small n·ε. For `boundary` datasets the utility columns say little: "
        "Z was altered away from D on purpose (a privacy stress test).",
        "",
        "**Gaps in the paper's privacy proof (spec §3.3).** The argument needs M ≤ min_a|Z₁ₐ| on *both* "
        "neighbours, whose counts differ by one; that bad event has probability ≤ (e^ε/2)e^{−√n}, below δ only "
        "for ε ≤ ln 2; and the data-dependent sensitivity step is sketched. The exact audit makes these gaps "
        "moot for the audited pairs: the loss is far below 2ε.",
        "",
        "**Draft (2018) vs final (2019) [D]/[P].** The draft's learner sampled ∝ exp(−ε u/(2Δu)) with a "
        "*data-dependent* Δu ≈ O(1/n + 1/|Z₁₀| + 1/|Z₁₁|), which is not private as written, and claimed pure "
        "ε-DP (\"Need proof?\"); its concentration bound 4exp(−ρ²n/2) had no P₁ₐ dependence and no sample size "
        "(\"n = ..\"). The final paper privatises the count with a biased Laplace estimate M, pays (2ε, e^{−√n}) "
        "and gets the P_min-dependent Theorem 2 (see compat-sample-complexity).",
    ]
    return "\n".join(lines)


def _inf(x: float) -> str:
    return "∞" if not math.isfinite(x) else f"{x:.3g}"
