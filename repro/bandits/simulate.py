"""Batched simulation: many policies on one context stream with common random numbers.

All policies of one run see the same contexts X[t, k] (one candidate per group per round) and the
same reward noise η_t. Fair-Greedy and Private-Fair-Greedy rank candidates against a window of
*all* arms' past contexts, which does not depend on the actions. Their θ̂ at round t only uses the
rounds before the split (≈ t/2), so the rank policies run in blocks of rounds whose θ̂ are all known
when the block starts: per block, each policy feeds its regression (its own draws in order), then
one product per θ̂ projects the window for every arm and policy at once and the ECDFs of the
block's rounds are counted from it, then each policy picks its arms. Python runs per block and per
θ̂, not per round and policy; the numbers are those of the per-round reference
(:mod:`repro._testing.bandits_reference`).

Spec: seed-001-bandit.md §5 (metrics), §7.3 (compute), §10 D10, D11, D14.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from repro.bandits.environments import BanditEnvironment
from repro.bandits.policies import Policy, RankPolicy, split_indices, tie_tolerance
from repro.errors import InvalidParameterError

__all__ = ["BLOCK", "PolicyTrace", "Stream", "draw_stream", "simulate", "stream_contexts", "within_group_basis"]

#: most rounds of the rank policies decided together (a block's arrays are O(BLOCK·K·C))
BLOCK = 2048
#: θ̂ versions projected by one product (V·C rows per arm), and window rows per product tile (< 256·8,
#: so that a row of a tile's comparisons sums in 64-bit words without a byte carrying)
VERSIONS = 8
TILE = 2040


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

    Policies that do not rank (OFUL, random, oracle) run round by round, each on its own. The rank
    policies run in blocks of rounds (:func:`_rank_rounds`). Every policy must own its generators (no
    generator object shared between two policies or two roles), since a policy's draws are made in its
    own round order, not interleaved with the others'. The actions equal those of the per-round
    reference (:func:`repro._testing.bandits_reference.simulate_reference`).

    Each trace's ``seconds`` is the CPU time (``time.thread_time``) of that policy, plus an even share
    of the rank policies' batched window work, so it does not depend on machine load.

    Returns the traces and the per-round optimum: ``{"exp_max": (T,), "fair_max": (T,),
    "exp": (T, K), "fair": (T, K)}``. Observed reward = ⟨x, θ*⟩ + noise_scale·η_t (D9).

    Spec: seed-001 §5, §7.3.
    """
    T, K, contexts, exp, fair, rewards, rank = rounds_setup(env, policies, stream, noise_scale, contexts)
    _check_own_generators(policies)
    actions = np.zeros((len(policies), T), dtype=np.int64)
    seconds = np.zeros(len(policies))
    for i, p in enumerate(policies):
        if isinstance(p, RankPolicy):
            continue
        t0 = time.thread_time()
        for t in range(1, T + 1):
            ctx = contexts[t - 1]
            a_ = p.select(t, ctx)
            p.update(t, ctx, a_, float(rewards[t - 1, a_]))
            actions[i, t - 1] = a_
        seconds[i] = time.thread_time() - t0
    C = len(rank)
    if C:
        rank_actions, rank_seconds, shared_seconds = _rank_rounds(env, rank, contexts, rewards)
        where = [i for i, p in enumerate(policies) if isinstance(p, RankPolicy)]
        actions[where] = rank_actions
        seconds[where] = rank_seconds + shared_seconds / C
    rows = np.arange(T)
    traces = [PolicyTrace(p.name, actions[i], exp[rows, actions[i]], fair[rows, actions[i]], float(seconds[i]))
              for i, p in enumerate(policies)]
    return traces, {"exp_max": exp.max(axis=1), "fair_max": fair.max(axis=1), "exp": exp, "fair": fair}


def rounds_setup(env: BanditEnvironment, policies: Sequence[Policy], stream: Stream, noise_scale: float,
                 contexts: np.ndarray | None) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                        list[RankPolicy]]:
    """What every simulator of a stream starts from (spec seed-001 §5, D9): T, K, the contexts, the expected
    and fair rewards and the observed ones, and the rank policies (checked: built on these contexts, one
    variant)."""
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
    return T, K, contexts, exp, fair, rewards, rank


def _check_own_generators(policies: Sequence[Policy]) -> None:
    seen: dict[int, str] = {}
    for i, p in enumerate(policies):
        tree = getattr(p, "tree", None)
        for role, g in (("rng", getattr(p, "rng", None)), ("reg_rng", getattr(tree, "rng", None))):
            if g is None:
                continue
            if id(g) in seen:
                raise InvalidParameterError(
                    f"policy {i} ({p.name}) shares its {role} generator with {seen[id(g)]}; give every policy and "
                    "role its own generator (the simulator draws each policy's numbers in its own round order)")
            seen[id(g)] = f"policy {i} ({p.name}) {role}"


def _rank_rounds(env: BanditEnvironment, rank: Sequence[RankPolicy], contexts: np.ndarray, rewards: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, float]:
    """The rank policies' rounds in blocks: (actions (C, T), own CPU seconds (C,), shared CPU seconds).

    θ̂ at round t only uses the history rounds before the split ⌊(t−2)/2⌋ (``paper``: ⌊(t−1)/2⌋), so
    once rounds 1 … t−1 are decided, every θ̂ of rounds t … ≈2t is known. A block is such a run of
    rounds (at most :data:`BLOCK`): each policy first feeds its regression through the block (its own
    draws, in order), then the window ECDFs of all the block's rounds and policies are counted from one
    projection per θ̂ (all arms and policies in one product), then each policy chooses its arms for the
    block (its tie-break draws in round order). The window's projections and comparisons are those of
    the per-round reference; the tie band is :func:`~repro.bandits.policies.tie_tolerance` of the same
    reduced θ̂.
    """
    T, K = contexts.shape[:2]
    C = len(rank)
    variant = rank[0].variant
    bases = [within_group_basis(env.pools[k]) for k in range(K)]
    r_max = max(b.shape[1] for b in bases)
    # Reduced coordinates z = (x − μ_k) B_k, stored (K, r, T) so that each arm's window is a
    # contiguous block of every row.
    ZT = np.zeros((K, r_max, T))
    for k, B in enumerate(bases):
        ZT[k, : B.shape[1]] = ((contexts[:, k] - env.pools[k].mean(axis=0)) @ B).T
    work = (np.empty((K, VERSIONS * C, TILE)), np.zeros((K, VERSIONS, 2, C, TILE), dtype=bool))
    acts = np.zeros((C, T), dtype=np.int64)
    own = np.zeros(C)
    shared = 0.0
    for t in range(1, min(T, 2) + 1):  # warm-up (D12)
        for c, p in enumerate(rank):
            t0 = time.thread_time()
            a_ = p.warmup_arm()
            p.update(t, contexts[t - 1], a_, float(rewards[t - 1, a_]))
            acts[c, t - 1] = a_
            own[c] += time.thread_time() - t0
    t = 3
    while t <= T:
        ts = np.arange(t, min(T, t + BLOCK - 1) + 1)
        splits = split_indices(ts, variant)
        keep = int(np.count_nonzero(splits <= t - 1))  # θ̂ needs rounds up to the split, all before t
        ts, splits = ts[:keep], splits[:keep]
        starts = np.flatnonzero(np.r_[True, splits[1:] != splits[:-1]])
        ends = np.r_[starts[1:], keep]
        G = len(starts)
        phis = np.zeros((G, K, C, r_max))
        tols = np.empty((G, K, C))
        for c, p in enumerate(rank):
            t0 = time.thread_time()
            thetas = p.thetas(ts[starts])
            for g in range(G):
                th = thetas[g]
                for k, B in enumerate(bases):
                    phi = phis[g, k, c]
                    phi[: B.shape[1]] = th @ B
                    tols[g, k, c] = tie_tolerance(phi, p.x_scale)
            own[c] += time.thread_time() - t0
        t0 = time.thread_time()
        ecdf = _window_counts(ZT, phis, tols, splits, ts, starts, ends, work) / (ts - 1 - splits)[:, None, None]
        shared += time.thread_time() - t0
        rows = ts - 1
        for c, p in enumerate(rank):
            t0 = time.thread_time()
            a_ = p.choose_many(ts, ecdf[:, :, c])
            p.update_many(ts, a_, rewards[rows, a_])
            acts[c, rows] = a_
            own[c] += time.thread_time() - t0
        t = int(ts[-1]) + 1
    return acts, own, shared


def _window_counts(ZT: np.ndarray, phis: np.ndarray, tols: np.ndarray, splits: np.ndarray, ts: np.ndarray,
                   starts: np.ndarray, ends: np.ndarray, work: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Window counts (L, K, C) of a block's rounds ``ts``: #{s in [split, t−1): ⟨z_s, φ⟩ ≤ ⟨z_{t−1}, φ⟩ + tol}.

    Group g (rounds ``ts[starts[g]:ends[g]]``, one or two, all with split ``splits[starts[g]]``) has the
    reduced θ̂ ``phis[g]`` (K, C, r) and tie bands ``tols[g]`` (K, C). :data:`VERSIONS` consecutive groups
    are projected by one product per arm over their windows' rows, :data:`TILE` rows at a time from the
    top (the first tile holds the candidates' rows, which give the thresholds), and every round of those
    groups is compared with each tile; rows outside a round's window are masked off in the tiles that hold
    a window's edge. Counts are summed 8 comparisons per 64-bit word (a tile has < 256 words per row, so
    no byte of the word sum carries).
    """
    G, K, C, r = phis.shape
    tile, below = work
    counts = np.zeros((len(ts), K, C), dtype=np.int64)
    for g1 in range(0, G, VERSIONS):
        g2 = min(G, g1 + VERSIONS)
        V = g2 - g1
        A = np.ascontiguousarray(phis[g1:g2].transpose(1, 0, 2, 3)).reshape(K, V * C, r)
        lo = splits[starts[g1:g2]]  # (V,)
        j0, j1 = int(starts[g1]), int(ends[g2 - 1])
        v_of = np.repeat(np.arange(V), ends[g1:g2] - starts[g1:g2])  # each round's group in the batch
        i_of = np.arange(j0, j1) - starts[g1:g2][v_of]  # its slot (0 or 1) in the group
        hi = np.repeat(lo[:, None], 2, axis=1)  # window ends (exclusive); unused slots: empty windows
        hi[v_of, i_of] = ts[j0:j1] - 1
        thr = np.full((K, V, 2, C), -np.inf)  # unused slots count nothing
        acc = np.zeros((K, V, 2, C), dtype=np.int64)
        base, top = int(lo[0]), int(ts[j1 - 1])
        inner_lo, inner_hi = int(lo[-1]), int(ts[j0]) - 1  # rows inside every round's window
        c1 = top
        while c1 > base:
            c0 = max(base, c1 - TILE)
            n = c1 - c0
            n8 = -(-n // 8) * 8
            P = np.matmul(A, ZT[:, :, c0:c1], out=tile[:, : V * C, :n]).reshape(K, V, C, n)
            if c1 == top:  # the candidates: row t−1 of each round
                cand = P[:, v_of, :, hi[v_of, i_of] - c0]  # (R, K, C)
                thr[:, v_of, i_of, :] = (cand + tols[g1 + v_of]).transpose(1, 0, 2)
            cmp = below[:, :V, :, :, :n]
            np.less_equal(P[:, :, None], thr[..., None], out=cmp)
            if c0 < inner_lo or c1 > inner_hi:
                rows = np.arange(c0, c1)
                valid = (rows >= lo[:, None, None]) & (rows < hi[:, :, None])  # (V, 2, n)
                np.logical_and(cmp, valid[None, :, :, None, :], out=cmp)
            below[:, :V, :, :, n:n8] = False
            words = below[:, :V, :, :, :n8].view(np.uint64).sum(axis=-1)  # 8 byte-lane counts per word
            acc += words.view(np.uint8).reshape(K, V, 2, C, 8).sum(axis=-1, dtype=np.int64)
            c1 = c0
        counts[j0:j1] = acc[:, v_of, i_of, :].transpose(1, 0, 2)
    return counts


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
