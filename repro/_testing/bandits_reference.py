"""The per-round bandit simulator as it was before the block simulator (issue 34), kept as the test reference.

:func:`simulate_reference` runs the rounds one by one (Python per round); the production
:func:`repro.bandits.simulate.simulate` computes the same rounds in blocks and must give the same actions.

Spec: seed-001-bandit.md §5, §7.3, §10 D10, D11, D14.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from repro.bandits.environments import BanditEnvironment
from repro.bandits.policies import Policy, RankPolicy, tie_tolerance
from repro.bandits.simulate import PolicyTrace, Stream, rounds_setup, within_group_basis

__all__ = ["simulate_reference"]


def simulate_reference(env: BanditEnvironment, policies: Sequence[Policy], stream: Stream, *, noise_scale: float = 0.2,
             contexts: np.ndarray | None = None) -> tuple[list[PolicyTrace], dict[str, np.ndarray]]:
    """Today's per-round simulator, kept as the reference :func:`repro.bandits.simulate.simulate` is tested
    against: every round in turn, each rank policy's θ̂, the window projections and the ECDF recomputed in the
    round (spec seed-001 §5, §7.3). Same arguments and results.

    Original docstring: run every policy for T = len(stream) rounds on the same stream.

    Each trace's ``seconds`` is the CPU time (``time.thread_time``) of that policy, plus an even share
    of the rank policies' batched window work, so it does not depend on machine load.

    Returns the traces and the per-round optimum: ``{"exp_max": (T,), "fair_max": (T,),
    "exp": (T, K), "fair": (T, K)}``. Observed reward = ⟨x, θ*⟩ + noise_scale·η_t (D9).

    Spec: seed-001 §5, §7.3.
    """
    T, K, contexts, exp, fair, rewards, rank = rounds_setup(env, policies, stream, noise_scale, contexts)
    C = len(rank)
    bases = [within_group_basis(env.pools[k]) for k in range(K)] if C else []
    ranks_ = [b.shape[1] for b in bases]
    r_max = max(ranks_, default=1)
    # Reduced coordinates z = (x − μ_k) B_k, stored (K, r, T) so that each arm's window is a
    # contiguous block of every row; projections are kept in P (K, C, T).
    ZT = np.zeros((K, r_max, T))
    for k, B in enumerate(bases):
        ZT[k, : B.shape[1]] = ((contexts[:, k] - env.pools[k].mean(axis=0)) @ B).T
    P = np.empty((K, max(C, 1), T))
    Phi = np.zeros((K, max(C, 1), r_max))
    versions = [-1] * C
    proj_lo, proj_hi = 0, 0
    actions = np.zeros((len(policies), T), dtype=np.int64)
    seconds = np.zeros(len(policies))
    shared_seconds = 0.0
    for t in range(1, T + 1):
        ctx = contexts[t - 1]
        ecdf = None
        if C and not rank[0].is_warmup(t):
            t0 = time.thread_time()
            lo, hi = rank[0].window(t)
            changed = False
            for c, p in enumerate(rank):
                th = p.theta(t)
                if p.theta_version != versions[c]:
                    for k, B in enumerate(bases):
                        Phi[k, c, : B.shape[1]] = th @ B
                    versions[c] = p.theta_version
                    changed = True
            # rows [a, b) to (re)project: the whole window if some θ̂ changed or the window's start
            # moved, else only the rounds added since the last call; always the current round.
            a = lo if (changed or lo != proj_lo) else proj_hi
            b = hi + 1
            for k in range(K):
                np.matmul(Phi[k], ZT[k, :, a:b], out=P[k, :, a:b])
            proj_lo, proj_hi = lo, b
            r = P[:, :, hi]  # (K, C): the candidates' own projections
            tol = np.array([[tie_tolerance(Phi[k, c], rank[c].x_scale) for c in range(C)] for k in range(K)])
            counts = np.count_nonzero(P[:, :, lo:hi] <= (r + tol)[:, :, None], axis=2)
            ecdf = counts / (hi - lo)  # (K, C)
            shared_seconds += time.thread_time() - t0
        c = 0
        for i, p in enumerate(policies):
            t0 = time.thread_time()
            if isinstance(p, RankPolicy):
                a_ = p.warmup_arm() if ecdf is None else p.choose(t, ecdf[:, c])
                c += 1
            else:
                a_ = p.select(t, ctx)
            p.update(t, ctx, a_, float(rewards[t - 1, a_]))
            actions[i, t - 1] = a_
            seconds[i] += time.thread_time() - t0
    rows = np.arange(T)
    traces = []
    for i, p in enumerate(policies):
        a = actions[i]
        share = shared_seconds / C if isinstance(p, RankPolicy) and C else 0.0
        traces.append(PolicyTrace(p.name, a, exp[rows, a], fair[rows, a], seconds[i] + share))
    return traces, {"exp_max": exp.max(axis=1), "fair_max": fair.max(axis=1), "exp": exp, "fair": fair}
