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
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from repro.engine.study import Study
from repro.engine.trial import TrialContext, TrialOutput
from repro.errors import InvalidParameterError
from repro.theory import expmech_learner as em
from repro.theory import sample_complexity as sc

__all__ = ["STUDY", "DATASETS", "boundary_counts", "run_trial"]

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
        ``ctx.rng("dataset", n, scope="repetition")`` draws Z, shared by every ε and dataset type of a repetition.
    """
    n, eps = int(params["n"]), float(params["epsilon"])
    kind = str(params["dataset"])
    if kind not in DATASETS:
        raise InvalidParameterError(f"dataset must be one of {DATASETS}; got {kind!r}.")
    alpha, beta = float(params["alpha"]), float(params["beta"])
    k = int(params["k"])
    hyp, ts, prob = _universe(k, float(params["p_a"]), float(params["w"]),
                              float(params["b"]))
    counts = em.sample_counts(prob, n, rng=ctx.rng("dataset", n, scope="repetition"))
    applied = False
    if kind == "boundary":
        counts, applied = boundary_counts(counts, n, eps)
    claimed_eps, claimed_delta = 2.0 * eps, math.exp(-math.sqrt(n))
    # Many small vectorised operations: multi-threaded BLAS would only add contention.
    with threadpool_limits(limits=1):
        audit = em.audit_replace_one(counts, hyp, eps, (eps, claimed_eps), nodes=int(params["nodes"]))
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


STUDY = Study(run_trial=run_trial, version="1")
