"""Batched simulation: many policies on one context stream with common random numbers.

All policies of one run see the same contexts X[t, k] (one candidate per group per round) and the
same reward noise η_t. Fair-Greedy and Private-Fair-Greedy rank candidates against a window of
*all* arms' past contexts, which does not depend on the actions, so the window's projections for
every rank policy are computed together as one product (N·K × d) @ (d × C) into a preallocated
buffer; they are recomputed only when some θ̂ changes (every second round) and otherwise extended
by the newest round. Nothing is concatenated per round.

Spec: seed-001-bandit.md §5 (metrics), §7.3 (compute), §10 D10, D11, D14.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from repro.bandits.environments import BanditEnvironment
from repro.bandits.policies import Policy, RankPolicy, tie_tolerance
from repro.errors import InvalidParameterError

__all__ = ["PolicyTrace", "Stream", "draw_stream", "simulate", "stream_contexts", "within_group_basis"]


@dataclass(frozen=True)
class Stream:
    """The common random numbers of one seed: pool indices (T, K) and reward noise (T,)."""

    indices: np.ndarray
    reward_noise: np.ndarray


def draw_stream(env: BanditEnvironment, horizon: int, *, data_rng: np.random.Generator,
                noise_rng: np.random.Generator) -> Stream:
    """Fresh with-replacement draws from each group's *original* pool per seed (D11), and N(0, 1) noise.

    Spec: seed-001 §10 D10, D11.
    """
    idx = data_rng.integers(0, env.n_per_group, size=(horizon, env.n_arms))
    return Stream(idx, noise_rng.standard_normal(horizon))


@dataclass
class PolicyTrace:
    """Per-round record of one policy: actions, expected and fair rewards of the chosen arm."""

    name: str
    actions: np.ndarray
    exp_reward: np.ndarray
    fair_reward: np.ndarray
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


def simulate(env: BanditEnvironment, policies: Sequence[Policy], stream: Stream, *, noise_scale: float = 0.2,
             contexts: np.ndarray | None = None) -> tuple[list[PolicyTrace], dict[str, np.ndarray]]:
    """Run every policy for T = len(stream) rounds on the same stream.

    Each trace's ``seconds`` is the CPU time (``time.thread_time``) of that policy, plus an even share
    of the rank policies' batched window work, so it does not depend on machine load.

    Returns the traces and the per-round optimum: ``{"exp_max": (T,), "fair_max": (T,),
    "exp": (T, K), "fair": (T, K)}``. Observed reward = ⟨x, θ*⟩ + noise_scale·η_t (D9).

    Spec: seed-001 §5, §7.3.
    """
    T, K = stream.indices.shape
    if contexts is None:
        contexts = stream_contexts(env, stream)
    exp = contexts @ env.theta_star
    fair = env.true_ranks(exp)
    rewards = exp + noise_scale * stream.reward_noise[:, None]
    rank = [p for p in policies if isinstance(p, RankPolicy)]
    for p in rank:
        if p.history is not contexts:
            raise InvalidParameterError("rank policies must be built with history=<the simulator's contexts>")
        if p.variant != rank[0].variant:
            raise InvalidParameterError("rank policies of one simulation must share the variant (one window)")
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


def within_group_basis(pool: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis (d × r) of the span of a group's centered pool.

    Every within-group comparison ⟨x_s − x_t, θ̂⟩ only sees this span (the bias column, the constant
    column and the group's own RAC1P one-hots cancel, and one-hot blocks lose a dimension), so
    projecting z = (x − μ)B onto Bᵀθ̂ gives the same ECDF with r ≈ 12 instead of d = 25 columns.
    """
    centered = pool - pool.mean(axis=0)
    _, s, vt = np.linalg.svd(centered, full_matrices=False)
    keep = s > rtol * max(s[0], 1e-300)
    return vt[keep].T


def stream_contexts(env: BanditEnvironment, stream: Stream) -> np.ndarray:
    """The (T, K, d) context array of a stream (preallocated once per seed)."""
    T, K = stream.indices.shape
    out = np.empty((T, K, env.dim))
    for k in range(K):
        out[:, k] = env.pools[k][stream.indices[:, k]]
    return out
