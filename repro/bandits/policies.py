"""Bandit policies with one interface: ``select(t, contexts) -> arm`` and ``update(t, contexts, arm, reward)``.

Rounds t are 1-based; ``contexts`` is the round's (K, d) array (one candidate per group). Policies
that rank candidates with an empirical CDF over a window of past rounds (Fair-Greedy and
Private-Fair-Greedy) also expose the pieces the batched simulator uses to share one projection
of the window among many policies: :meth:`RankPolicy.window`, :meth:`RankPolicy.theta` (with a
version counter that changes when θ̂ does) and :meth:`RankPolicy.choose` (arm from the window
ECDF values). Their own :meth:`~RankPolicy.select` computes the ECDF with a plain loop, which the
tests compare with the batched path.

Variants (spec §10 D1):

``reference``
    The authors' code: split t0 = ⌊(t−2)/2⌋, warm-up rounds 1–2 pick uniformly from arms
    0..K−2, ties go to the first index, the private regression runs at the *total* (ε, δ) with
    the 2Γ shift added in every tree node and Γ with ln(2·(T/2)·T).
``paper``
    The corrected Algorithm 1: t̃ = ⌊(t−1)/2⌋, warm-up rounds 1–2 uniform over all arms, ties
    broken uniformly at random, regression at (ε_reg, δ_reg) = (α_ε ε, α_δ δ), one 2Γ·I shift
    with Γ = σ√(2m)(4√d + 2 ln 2T), ranks at (ε − ε_reg, δ − δ_reg).

Known, documented omission: the reference adds 1e−8/(d√t)·N(0, I) to Fair-Greedy's θ̂ each round;
it can only reorder two *distinct* contexts whose projections coincide to ~1e−8, so it is left out.

Spec: seed-001-bandit.md §2 (Fair-Greedy), §3 (Private-Fair-Greedy), §4 (OFUL), §5 (oracle and
random anchors), §10 D1–D3, D6, D7, D12, D17.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from repro.errors import InvalidParameterError
from repro.privacy.guarantee import Guarantee, Label, compose
from repro.privacy.tree_mechanism import (
    TreeMechanism,
    gaussian_tree_sigma,
    psd_shift_gamma,
    rank_guarantee,
    rank_noise_constant,
    tree_height,
    zcdp_rho,
)
from repro.privacy.tree_mechanism import guarantee as tree_guarantee

__all__ = [
    "pfg_guarantee",
    "VARIANTS",
    "BudgetSplit",
    "FairGreedy",
    "GMFOracle",
    "OFUL",
    "Policy",
    "PrivateFairGreedy",
    "RankPolicy",
    "UniformRandom",
    "budget_split",
    "split_index",
    "split_indices",
    "tie_tolerance",
]

VARIANTS = ("reference", "paper")
TIE_RTOL = 1e-12


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise InvalidParameterError(f"`variant` must be one of {VARIANTS}; got {variant!r}.")


def split_index(t: int, variant: str) -> int:
    """Number of history rounds given to the regression at round t (1-based).

    reference: t0 = ⌊(t−2)/2⌋ (the code's effective split); paper: t̃ = ⌊(t−1)/2⌋. The ECDF window is
    rounds t0+1 … t−1, of size N_t = t−1−t0.

    Spec: seed-001 §2.1, §2.2 ("Effective split at selection time").
    """
    return max(0, (t - 2) // 2) if variant == "reference" else max(0, (t - 1) // 2)


def split_indices(ts: np.ndarray, variant: str) -> np.ndarray:
    """:func:`split_index` of every round in ``ts`` (an integer array)."""
    ts = np.asarray(ts, dtype=np.int64)
    return np.maximum(0, (ts - 2) // 2 if variant == "reference" else (ts - 1) // 2)


def tie_tolerance(theta: np.ndarray, x_scale: float) -> float:
    """Projections within 1e−12·‖θ̂‖·max‖x‖ of the candidate's count as ties (≤).

    Identical contexts must tie, but a BLAS product may round the same row differently by one
    ulp depending on its position (the reference code has this defect); the band is ~300× the
    worst rounding error of a 25-term dot product and far below any real gap.
    """
    x = np.ravel(theta)  # np.linalg.norm's own computation of a vector's 2-norm, without its checks
    return TIE_RTOL * math.sqrt(float(x.dot(x))) * x_scale


@dataclass(frozen=True)
class BudgetSplit:
    """Privacy budgets of Private-Fair-Greedy (spec §3.1 with the typo fixed, D1, D2)."""

    epsilon_reg: float
    delta_reg: float
    epsilon_rank: float
    delta_rank: float
    epsilon_spent: float
    delta_spent: float


def budget_split(epsilon: float, delta: float, alpha_eps: float, alpha_delta: float, variant: str) -> BudgetSplit:
    """ε_reg = α_ε ε, ε_rank = ε − ε_reg (same for δ). The reference code gives the regression the
    total (ε, δ), so it spends (ε(2−α_ε), δ(2−α_δ)).

    Spec: seed-001 §3.1, §3.2 (BUG), §9 item 3.
    """
    _check_variant(variant)
    if not (0 < alpha_eps < 1 and 0 < alpha_delta < 1):
        raise InvalidParameterError(
            f"`alpha_eps` and `alpha_delta` must lie in (0, 1); got {alpha_eps}, {alpha_delta}.")
    if not epsilon > 0 or not 0 < delta < 1:
        raise InvalidParameterError(f"need epsilon > 0 and delta in (0, 1); got {epsilon}, {delta}.")
    e_rank, d_rank = epsilon - alpha_eps * epsilon, delta - alpha_delta * delta
    if variant == "paper":
        e_reg, d_reg = alpha_eps * epsilon, alpha_delta * delta
    else:
        e_reg, d_reg = epsilon, delta
    return BudgetSplit(e_reg, d_reg, e_rank, d_rank, e_reg + e_rank, d_reg + d_rank)


def pfg_guarantee(epsilon: float, delta: float, alpha_eps: float, alpha_delta: float, variant: str) -> Guarantee:
    """What Private-Fair-Greedy's stated (ε, δ) promises (spec §3.1–§3.4, D1): the regression's tree
    mechanism at (ε_reg, δ_reg) (*public-statistics caveat*: L̃) composed with the rank releases at
    (ε_rank, δ_rank) (accounted, joint DP), basic composition ([HSV25] Thm 1.2 as in the paper). ``paper``:
    the parts sum to the stated (ε, δ). ``reference`` (the authors' code): the regression gets the whole
    (ε, δ) and the ranks come on top, so the stated ε is *nominal* and the code spends ``epsilon_spent``."""
    s = budget_split(epsilon, delta, alpha_eps, alpha_delta, variant)
    spent = compose(tree_guarantee(s.epsilon_reg, s.delta_reg), rank_guarantee(s.epsilon_rank, s.delta_rank))
    if variant == "paper":
        return spent
    return Guarantee(epsilon, delta, Label.NOMINAL, spent.relation, protects=spent.protects,
                     accountant=spent.accountant,
                     caveat=f"the reference code gives the regression the whole (ε, δ) and the ranks come on top: it "
                            f"spends (ε, δ) = ({s.epsilon_spent:g}, {s.delta_spent:g}); {spent.caveat}")


class Policy:
    """Common interface. ``select`` returns an arm index; ``update`` feeds the observed reward."""

    name = "policy"

    def select(self, t: int, contexts: np.ndarray) -> int:
        raise NotImplementedError

    def update(self, t: int, contexts: np.ndarray, action: int, reward: float) -> None:
        return None


class UniformRandom(Policy):
    """Uniformly random arm (sanity anchor: expected fair regret K/(K+1) − 1/2 = 0.3 per round for K = 4).

    Spec: seed-001 §5 anchors, §9 item 7.
    """

    name = "Random"

    def __init__(self, n_arms: int, *, rng: np.random.Generator) -> None:
        self.n_arms, self.rng = n_arms, rng

    def select(self, t: int, contexts: np.ndarray) -> int:
        return int(self.rng.integers(self.n_arms))


class GMFOracle(Policy):
    """The GMF policy k*_t = argmax_k F_k(⟨X_k,t, θ*⟩) with the true group CDFs (fair regret 0).

    Spec: seed-001 §1 Definition 1, §5, §9 items 6–7.
    """

    name = "Oracle"

    def __init__(self, theta_star: np.ndarray, true_ranks) -> None:
        self.theta_star, self.true_ranks = theta_star, true_ranks

    def select(self, t: int, contexts: np.ndarray) -> int:
        return int(np.argmax(self.true_ranks(contexts @ self.theta_star)))


class OFUL(Policy):
    """OFUL as in the authors' code: UCB_k = x_kᵀθ̂ + c β √(x_kᵀV⁻¹x_k · log t), β = √(2 log(det V/det λI)).

    V = λI + Σ xxᵀ over chosen arms (updated every round), t = updates + 1, first-index ties.

    Spec: seed-001 §4.
    """

    name = "OFUL"

    def __init__(self, dim: int, *, reg: float = 0.01, coef: float = 0.01) -> None:
        self.reg, self.coef = reg, coef
        self.V = reg * np.eye(dim)
        self.V_inv = np.eye(dim) / reg
        self.b = np.zeros(dim)
        self.theta_hat = np.zeros(dim)
        self.updates = 0
        self.beta = 0.0
        self._logdet0 = dim * math.log(reg)

    def select(self, t: int, contexts: np.ndarray) -> int:
        if self.beta == 0.0 or self.updates == 0:
            return int(np.argmax(contexts @ self.theta_hat))
        width = ((contexts @ self.V_inv) * contexts).sum(axis=1)
        bonus = (self.coef * self.beta * math.sqrt(math.log(self.updates + 1))) * np.sqrt(np.maximum(width, 0.0))
        return int(np.argmax(contexts @ self.theta_hat + bonus))

    def update(self, t: int, contexts: np.ndarray, action: int, reward: float) -> None:
        x = contexts[action]
        vx = self.V_inv @ x
        xx = np.outer(x, x)
        self.V_inv -= np.outer(vx, vx) / (1.0 + x @ vx)  # Sherman–Morrison
        self.V += xx
        self.b += reward * x
        self.theta_hat = self.V_inv @ self.b
        self.updates += 1
        sign, logdet = np.linalg.slogdet(self.V)
        self.beta = math.sqrt(max(0.0, 2.0 * (logdet - self._logdet0)))


class RankPolicy(Policy):
    """Shared machinery of Fair-Greedy and Private-Fair-Greedy.

    Parameters
    ----------
    n_arms, dim, horizon
        K, d and T.
    variant
        ``reference`` or ``paper`` (module docstring).
    rng
        Warm-up and tie-break stream.
    history
        Optional (T, K, d) array holding every round's contexts (the simulator passes its own,
        pre-filled stream; only rows of past rounds are ever read). Default: an own buffer filled
        by :meth:`update`.
    x_scale
        max ‖x‖ over the candidate pools, for :func:`tie_tolerance`.
    """

    def __init__(self, n_arms: int, dim: int, horizon: int, *, variant: str, rng: np.random.Generator,
                 history: np.ndarray | None = None, x_scale: float = 1.0) -> None:
        _check_variant(variant)
        self.K, self.d, self.T, self.variant, self.rng = n_arms, dim, horizon, variant, rng
        self._own_history = history is None
        self.history = np.zeros((horizon, n_arms, dim)) if history is None else history
        self.x_scale = x_scale
        self.actions = np.zeros(horizon, dtype=np.int64)
        self.rewards = np.zeros(horizon)
        self.n_fed = 0
        self.theta_hat = np.zeros(dim)
        self.theta_version = 0

    # -- pieces used by the batched simulator
    def window(self, t: int) -> tuple[int, int]:
        """0-based half-open row range [t0, t−1) of the ECDF window at round t."""
        return split_index(t, self.variant), t - 1

    def is_warmup(self, t: int) -> bool:
        """Rounds 1–2 pick a random arm (D12); the reference draws from arms 0..K−2 (its bug)."""
        return t <= 2

    def warmup_arm(self) -> int:
        high = self.K - 1 if self.variant == "reference" else self.K
        return int(self.rng.integers(0, high))

    def theta(self, t: int) -> np.ndarray:
        """θ̂ for round t: feed the regression every history round up to the split, then return it."""
        fed = self.n_fed
        self._absorb_until(t)
        if self.n_fed > fed:
            self.theta_hat = np.linalg.solve(*self._system())
        return self.theta_hat

    def _absorb_until(self, t: int) -> None:
        """Feed the regression every history round up to round t's split, in order."""
        target = split_index(t, self.variant)
        while self.n_fed < target:
            s = self.n_fed
            self._absorb(self.history[s, self.actions[s]], self.rewards[s])
            self.n_fed += 1
            self.theta_version += 1

    def thetas(self, ts: np.ndarray) -> np.ndarray:
        """θ̂ of rounds ``ts`` (increasing), (len(ts), d): the regression fed in order as :meth:`theta` feeds it,
        and the linear systems of all rounds solved by one call (LAPACK solves each system of a stack as it
        solves it alone: the same bits as :meth:`theta` round by round)."""
        d = self.d
        A, b = np.empty((len(ts), d, d)), np.empty((len(ts), d, 1))
        solved = np.zeros(len(ts), dtype=bool)
        for i, t in enumerate(ts):
            self._absorb_until(int(t))
            if self.n_fed:  # before the first item θ̂ is the initial zeros, never solved for
                A[i], b[i, :, 0] = self._system()
                solved[i] = True
        out = np.zeros((len(ts), d))
        if solved.any():
            out[solved] = np.linalg.solve(A[solved], b[solved])[..., 0]
        if len(ts) and solved[-1]:
            self.theta_hat = out[-1].copy()
        return out

    def _feed(self, x: np.ndarray, y: float) -> None:
        """Add one history item to the regression and solve for θ̂."""
        self._absorb(x, y)
        self.theta_hat = np.linalg.solve(*self._system())

    def _absorb(self, x: np.ndarray, y: float) -> None:
        raise NotImplementedError

    def _system(self) -> tuple[np.ndarray, np.ndarray]:
        """(A, b) of the regression so far: θ̂ solves A θ̂ = b."""
        raise NotImplementedError

    def scores(self, t: int, ecdf: np.ndarray) -> np.ndarray:
        """Rank estimates from the window ECDF (Private-Fair-Greedy adds noise)."""
        return ecdf

    def choose(self, t: int, ecdf: np.ndarray) -> int:
        """Arm for round t from the window ECDF values (K,)."""
        v = self.scores(t, ecdf)
        if self.variant == "reference":
            return int(np.argmax(v))
        best = np.flatnonzero(v == v.max())
        return int(best[0]) if best.size == 1 else int(self.rng.choice(best))

    def scores_many(self, ts: np.ndarray, ecdf: np.ndarray) -> np.ndarray:
        """:meth:`scores` of rounds ``ts`` (L,) at once from their ECDF values (L, K), elementwise the same."""
        return ecdf

    def choose_many(self, ts: np.ndarray, ecdf: np.ndarray) -> np.ndarray:
        """:meth:`choose` of rounds ``ts`` (increasing) at once: the same arms, and the same tie-break draws from
        ``rng`` in round order (only rounds with a tie draw, as :meth:`choose` does)."""
        v = self.scores_many(ts, ecdf)
        if self.variant == "reference":
            return np.argmax(v, axis=1)
        best = v == v.max(axis=1, keepdims=True)
        arms = np.argmax(best, axis=1)
        for i in np.flatnonzero(best.sum(axis=1) > 1):
            arms[i] = int(self.rng.choice(np.flatnonzero(best[i])))
        return arms

    # -- plain interface
    def window_ecdf(self, t: int, contexts: np.ndarray) -> np.ndarray:
        """ECDF of each candidate over the window, by a plain loop (the reference's formula)."""
        theta = self.theta(t)
        lo, hi = self.window(t)
        tol = tie_tolerance(theta, self.x_scale)
        counts = np.zeros(self.K)
        for k in range(self.K):
            r = float(contexts[k] @ theta)
            for s in range(lo, hi):
                counts[k] += float(self.history[s, k] @ theta) <= r + tol
        return counts / max(hi - lo, 1)

    def select(self, t: int, contexts: np.ndarray) -> int:
        if self.is_warmup(t):
            return self.warmup_arm()
        return self.choose(t, self.window_ecdf(t, contexts))

    def update(self, t: int, contexts: np.ndarray, action: int, reward: float) -> None:
        if self._own_history:
            self.history[t - 1] = contexts
        self.actions[t - 1] = action
        self.rewards[t - 1] = reward

    def update_many(self, ts: np.ndarray, actions: np.ndarray, rewards: np.ndarray) -> None:
        """:meth:`update` of rounds ``ts`` at once (the history must be the simulator's, already filled)."""
        if self._own_history:
            raise InvalidParameterError("update_many needs history=<the simulator's contexts>")
        self.actions[ts - 1] = actions
        self.rewards[ts - 1] = rewards


class FairGreedy(RankPolicy):
    """Fair-Greedy [GAF+22]: ridge (λ = 0.01) on the first part of the history, ECDF over the rest, argmax.

    Spec: seed-001 §2, D3.
    """

    name = "FairGreedy"

    def __init__(self, n_arms: int, dim: int, horizon: int, *, reg: float = 0.01, **kw) -> None:
        super().__init__(n_arms, dim, horizon, **kw)
        self.A = reg * np.eye(dim)
        self.b = np.zeros(dim)

    def _absorb(self, x: np.ndarray, y: float) -> None:
        self.A += np.outer(x, x)
        self.b += y * x

    def _system(self) -> tuple[np.ndarray, np.ndarray]:
        return self.A, self.b


class PrivateFairGreedy(RankPolicy):
    """Private-Fair-Greedy (Algorithm 1): tree-mechanism regression + zCDP Gaussian rank noise.

    Parameters
    ----------
    epsilon, delta, alpha_eps, alpha_delta
        Total budget and split (spec §3.1).
    L_tilde
        Bound on ‖[x; y]‖ used to calibrate the tree noise, enforced: every observed [x; y] longer than
        L̃ is scaled to norm L̃ before it enters the tree (the authors' code does not clip; ``clipped``
        counts how often it fires). L̃ itself is the data's max norm by default (a public-statistics
        caveat, :func:`repro.privacy.tree_mechanism.guarantee`).
    rank_normals
        Optional (T, K) standard normals for the rank noise (common random numbers across
        configurations); default: drawn from ``rank_rng``.
    reg_rng, rank_rng
        Regression-noise and rank-noise streams (D10).

    Spec: seed-001 §3.1–§3.3, §3.5, D1, D5–D7, D17.
    """

    name = "PrivateFairGreedy"

    def __init__(self, n_arms: int, dim: int, horizon: int, *, epsilon: float, delta: float, alpha_eps: float,
                 alpha_delta: float, L_tilde: float, reg_rng: np.random.Generator,
                 rank_rng: np.random.Generator | None = None, rank_normals: np.ndarray | None = None, **kw) -> None:
        super().__init__(n_arms, dim, horizon, **kw)
        self.split = budget_split(epsilon, delta, alpha_eps, alpha_delta, self.variant)
        n_max = horizon / 2
        self.m = tree_height(n_max)
        if not L_tilde > 0:
            raise InvalidParameterError(f"L_tilde must be > 0; got {L_tilde}.")
        self.L_tilde = float(L_tilde)
        self.clipped = 0
        self.sigma_noise = gaussian_tree_sigma(L_tilde, self.m, self.split.epsilon_reg, self.split.delta_reg)
        log_arg = 2.0 * n_max * horizon if self.variant == "reference" else 2.0 * horizon
        self.gamma = psd_shift_gamma(self.sigma_noise, self.m, dim, log_arg)
        # the regression sees split_index(T) items at most; their node noise is drawn in chunks (same order)
        self.tree = TreeMechanism(dim + 1, n_max, self.sigma_noise, shift=2.0 * self.gamma,
                                  shift_per_node=self.variant == "reference", rng=reg_rng, prefetch=512,
                                  planned=min(int(n_max), split_index(horizon, self.variant)))
        self.rho_rank = zcdp_rho(self.split.epsilon_rank, self.split.delta_rank)
        self.rank_c = rank_noise_constant(horizon, self.rho_rank)
        if rank_normals is None:
            if rank_rng is None:
                raise InvalidParameterError("PrivateFairGreedy needs `rank_rng=` or `rank_normals=`.")
            rank_normals = rank_rng.standard_normal((horizon, n_arms))
        self.rank_normals = rank_normals

    def _absorb(self, x: np.ndarray, y: float) -> None:
        a = np.append(x, y)
        norm = float(np.sqrt(a @ a))
        if norm > self.L_tilde:  # the sensitivity the tree's σ is calibrated to (spec §3.2): enforce it
            a = a * (self.L_tilde / norm)
            self.clipped += 1
        self._released = self.tree.update(np.outer(a, a))

    def _system(self) -> tuple[np.ndarray, np.ndarray]:
        # D17: with the 2Γ shift ≫ the noise the block is positive definite; solve, never invert.
        M, d = self._released, self.d
        return M[:d, :d], M[:d, d]

    def scores(self, t: int, ecdf: np.ndarray) -> np.ndarray:
        lo, hi = self.window(t)
        sigma_t = self.rank_c / (hi - lo)
        return ecdf + sigma_t * self.rank_normals[t - 1]

    def scores_many(self, ts: np.ndarray, ecdf: np.ndarray) -> np.ndarray:
        ts = np.asarray(ts, dtype=np.int64)
        n = ts - 1 - split_indices(ts, self.variant)
        return ecdf + (self.rank_c / n)[:, None] * self.rank_normals[ts - 1]
