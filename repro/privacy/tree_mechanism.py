"""Binary (tree) mechanism for continual release of prefix sums of symmetric matrices, and the
zCDP Gaussian calibration of Private-Fair-Greedy's rank estimates.

The tree mechanism of [CSS11] Alg. 2 / [SS18] §4.2 releases, after each of at most ``n_max``
updates, a noisy prefix sum of the matrices seen so far. Update i (1-based) creates the node at
the level of the lowest set bit of i, which holds the exact sum of the last 2^level items plus
fresh symmetric Gaussian noise; the released prefix sum adds the nodes of the set bits of i, so it
combines popcount(i) ≤ m noisy nodes and each item enters at most m nodes, with
m = 1 + ⌈log₂ n_max⌉.

Noise per node: Z = (Z′ + Z′ᵀ)/√2 with Z′_ij ~ N(0, σ²) i.i.d., so off-diagonal entries have
variance σ² and diagonal entries 2σ². σ = 4 L̃² √m ln(4/δ)/ε (Private-Fair-Greedy §4.1). The PSD
shift 2Γ·I uses Γ = σ √(2m) (4√d + 2 ln(A)), with A = 2T in the paper and A = 2·(T/2)·T in the
authors' code, where the shift is added inside every node (so the release carries 2Γ·popcount·I).

Spec: seed-001-bandit.md §3.2 (tree mechanism, σ, Γ, reference-code behaviour), §3.3 (rank noise,
ρ), §3.5 (derived numbers), §9 items 1–5, §10 D1, D4, D17.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import dp_accounting
import numpy as np

from repro.errors import InvalidParameterError
from repro.privacy.guarantee import Guarantee, Label, Neighbouring

__all__ = [
    "rank_guarantee",
    "guarantee",
    "TreeMechanism",
    "gaussian_tree_sigma",
    "nodes_per_prefix",
    "psd_shift_gamma",
    "rank_dp_event",
    "rank_noise_constant",
    "rank_noise_sigma",
    "rdp_epsilon",
    "symmetric_gaussian",
    "tree_dp_event",
    "tree_height",
    "zcdp_rho",
    "zcdp_to_dp_epsilon",
]


def guarantee(epsilon: float, delta: float) -> Guarantee:
    """Private-Fair-Greedy's regression statistics (tree mechanism at :func:`gaussian_tree_sigma`) at (ε, δ),
    replace one user's context and reward (spec §3.2). Public-statistics caveat: σ is calibrated to L̃, the
    data's largest ‖[x; y]‖, which is a statistic of the private data; the policy clips every observed [x; y]
    to it, so the sensitivity the σ assumes holds (issue 21;
    ``repro.bandits.environments``, ``repro.bandits.policies``)."""
    return Guarantee(epsilon, delta, Label.PUBLIC_STATISTICS, Neighbouring.REPLACE_ONE,
                     protects="each user's context and reward", accountant="Gaussian tree mechanism (paper's sigma)",
                     caveat="the norm bound L-tilde is the data's largest norm (treated as public); observations "
                            "are clipped to it")


def rank_guarantee(epsilon: float, delta: float) -> Guarantee:
    """Private-Rank-Estimation's releases at (ε_rank, δ_rank), replace one user's context and reward (spec §3.3,
    Lemma 4.2): each rank estimate is an ECDF over N_t earlier candidates, so one user moves it by at most
    1/N_t by construction (no clipping needed), the Gaussian noise σ_t = √(T/(2ρ))/N_t makes each release
    ρ/T-zCDP, T releases compose to ρ-zCDP and ρ + 2√(ρ log(1/δ)) = ε (BS16). Joint DP: a user's own
    round is not protected from the user. *Accounted* (:func:`rank_dp_event` gives the same releases to
    dp-accounting's RDP accountant; the audit checks it)."""
    return Guarantee(epsilon, delta, Label.ACCOUNTED, Neighbouring.REPLACE_ONE,
                     protects="each user's context and reward (joint DP: the ranks other rounds see)",
                     accountant="zCDP of T Gaussian releases (BS16)")


def _check_eps_delta(epsilon: float, delta: float) -> None:
    if not epsilon > 0:
        raise InvalidParameterError(f"`epsilon` must be > 0; got {epsilon}. Pass a positive privacy budget.")
    if not 0 < delta < 1:
        raise InvalidParameterError(f"`delta` must lie in (0, 1); got {delta}. Pass e.g. delta=0.01.")


def tree_height(n_max: float) -> int:
    """m = 1 + ⌈log₂ n_max⌉: the most nodes a prefix sum combines (16 for n_max = 25,000).

    Spec: seed-001 §3.2 ("m = 1 + ⌈log₂(T/2)⌉"), §9 item 4.
    """
    if not n_max >= 1:
        raise InvalidParameterError(f"`n_max` (the stream length) must be >= 1; got {n_max}.")
    return 1 + max(0, math.ceil(math.log2(n_max)))


def nodes_per_prefix(i: int) -> int:
    """Number of tree nodes summed in the i-th released prefix sum: popcount(i).

    Spec: seed-001 §9 item 4.
    """
    return int(i).bit_count()


def gaussian_tree_sigma(L_tilde: float, m: int, epsilon: float, delta: float) -> float:
    """σ_noise = 4 L̃² √m ln(4/δ)/ε (per-node noise scale of the Gaussian tree mechanism).

    Spec: seed-001 §3.2, §3.5 table, §9 item 5.
    """
    _check_eps_delta(epsilon, delta)
    if not L_tilde > 0:
        raise InvalidParameterError(f"`L_tilde` (bound on ‖[x; y]‖) must be > 0; got {L_tilde}.")
    return 4.0 * L_tilde**2 * math.sqrt(m) * math.log(4.0 / delta) / epsilon


def psd_shift_gamma(sigma: float, m: int, d: int, log_argument: float) -> float:
    """Γ = σ √(2m) (4√d + 2 ln(log_argument)); the release is shifted by 2Γ·I.

    ``log_argument`` is 2T in the paper and 2·(T/2)/α with α = 1/T (i.e. T²) in the authors' code.

    Spec: seed-001 §3.2, §3.5 table.
    """
    return sigma * math.sqrt(2 * m) * (4.0 * math.sqrt(d) + 2.0 * math.log(log_argument))


def symmetric_gaussian(dim: int, sigma: float, *, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    """Z = (Z′ + Z′ᵀ)/√2 with Z′ ~ N(0, σ²)^{dim×dim}: off-diagonal variance σ², diagonal 2σ².

    With ``size`` returns ``size`` independent matrices, shape (size, dim, dim).

    Spec: seed-001 §3.2, §9 item 4.
    """
    shape = (dim, dim) if size is None else (size, dim, dim)
    z = rng.normal(0.0, sigma, size=shape)
    return (z + np.swapaxes(z, -1, -2)) / math.sqrt(2.0)


#: the last few chunks of standard normals drawn by trees, keyed by their generator's state before the draw
_RECENT_NORMALS: dict[tuple, tuple[np.ndarray, dict]] = {}
_RECENT_MAX = 4


def _standard_normals(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """``rng.standard_normal(shape)``; if a generator in the same state drew the same shape lately, its
    numbers are returned and ``rng`` is moved to the state that drawing them would leave it in (exact:
    the same state gives the same stream)."""
    state = rng.bit_generator.state
    key = (repr(state), shape)
    hit = _RECENT_NORMALS.get(key)
    if hit is not None:
        rng.bit_generator.state = hit[1]
        return hit[0]
    out = rng.standard_normal(shape)
    out.flags.writeable = False
    if len(_RECENT_NORMALS) >= _RECENT_MAX:
        _RECENT_NORMALS.pop(next(iter(_RECENT_NORMALS)))
    _RECENT_NORMALS[key] = (out, rng.bit_generator.state)
    return out


@dataclass
class TreeMechanism:
    """Continual release of noisy prefix sums of ``dim × dim`` symmetric matrices.

    Parameters
    ----------
    dim
        Matrix side (d + 1 for M = Σ [x; y][x; y]ᵀ).
    n_max
        Largest number of updates (T/2 in Private-Fair-Greedy); more raise an error.
    sigma
        Per-node noise scale σ (0 gives the exact prefix sums).
    shift
        The PSD shift 2Γ (not Γ).
    shift_per_node
        True: add ``shift``·I inside every node's noise, as the authors' code does (the release
        carries shift·popcount(i)·I). False: add ``shift``·I once to every release (the paper).
    rng
        Noise generator (keyword-only in spirit: pass ``rng=``).
    prefetch
        Draw the node noise of up to this many updates in one call (never past ``planned``): the same
        normals in the same order as one draw per update, with less per-update overhead. 1 = draw per update.
    planned
        Most updates this mechanism will see (default ``n_max``); prefetching never draws past it, so the
        generator is left where per-update drawing would leave it after ``planned`` updates.

    Spec: seed-001 §3.2; [CSS11] Alg. 2.
    """

    dim: int
    n_max: float
    sigma: float
    shift: float = 0.0
    shift_per_node: bool = False
    rng: np.random.Generator | None = None
    prefetch: int = 1
    planned: int | None = None
    count: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.sigma < 0:
            raise InvalidParameterError(f"`sigma` must be >= 0; got {self.sigma}.")
        if self.sigma > 0 and self.rng is None:
            raise InvalidParameterError("a noisy TreeMechanism needs `rng=` (a numpy Generator).")
        self.m = tree_height(self.n_max)
        self._alpha = np.zeros((self.m, self.dim, self.dim))
        self._noisy = np.zeros((self.m, self.dim, self.dim))
        self._eye = np.eye(self.dim)
        if self.prefetch < 1:
            raise InvalidParameterError(f"`prefetch` must be >= 1; got {self.prefetch}.")
        self._planned = int(self.n_max) if self.planned is None else int(self.planned)
        self._buffer = np.zeros((0, self.dim, self.dim))
        self._drawn = 0  # updates whose noise has been drawn (buffer covers updates drawn-len+1 .. drawn)

    def _node_noise(self) -> np.ndarray:
        if self.sigma > 0:
            if self.count > self._drawn:  # the buffer is used up: draw the next chunk (same order as one by one)
                n = max(1, min(self.prefetch, self._planned - self._drawn))
                if self.prefetch > 1:
                    # N(0, σ²) is 0 + σ·N(0, 1) in numpy's generator, element by element, so this is the same
                    # array as symmetric_gaussian(..., size=n); trees whose generators are in the same state
                    # (common random numbers) share the standard normals instead of drawing them again
                    z = self.sigma * _standard_normals(self.rng, (n, self.dim, self.dim)) + 0.0
                    self._buffer = (z + np.swapaxes(z, -1, -2)) / math.sqrt(2.0)
                else:
                    self._buffer = symmetric_gaussian(self.dim, self.sigma, rng=self.rng, size=n)
                self._drawn += n
            noise = self._buffer[self.count - self._drawn + len(self._buffer) - 1]
        else:
            noise = np.zeros((self.dim, self.dim))
        if self.shift_per_node and self.shift:
            noise = noise + self.shift * self._eye
        return noise

    def update(self, item: np.ndarray) -> np.ndarray:
        """Add ``item`` (a dim×dim matrix) and return the noisy prefix sum of all items so far."""
        if self.count + 1 > self.n_max:
            raise InvalidParameterError(
                f"the tree mechanism was built for at most n_max={self.n_max} updates; update "
                f"{self.count + 1} exceeds it. Build it with a larger n_max.")
        self.count += 1
        i = self.count
        level = (i & -i).bit_length() - 1
        self._alpha[level] = item + self._alpha[:level].sum(axis=0)
        self._alpha[:level] = 0.0
        self._noisy[:level] = 0.0
        self._noisy[level] = self._alpha[level] + self._node_noise()
        return self.release()

    def release(self) -> np.ndarray:
        """The current noisy prefix sum: the noisy nodes of the set bits of the update count."""
        i = self.count
        bits = [j for j in range(self.m) if (i >> j) & 1]
        out = self._noisy[bits].sum(axis=0) if bits else np.zeros((self.dim, self.dim))
        if not self.shift_per_node and self.shift:
            out = out + self.shift * self._eye
        return out


# --------------------------------------------------------------------------- privacy accounting


def tree_dp_event(sigma: float, L_tilde: float, m: int, *, replace_one: bool = True) -> dp_accounting.DpEvent:
    """The tree mechanism's privacy cost as a dp-accounting event (m Gaussian releases per item).

    One item a = [x; y] with ‖a‖ ≤ L̃ enters at most m nodes. Writing a node's upper triangle as
    the vector (M_ii/√2, M_ij for i<j), every coordinate gets N(0, σ²) noise and its L2 norm is
    ‖M‖_F/√2; replacing a by a′ moves M by ‖aaᵀ − a′a′ᵀ‖_F ≤ √2 L̃², i.e. sensitivity L̃² (add/remove:
    L̃²/√2). So the item's view is m compositions of a Gaussian mechanism with noise multiplier
    σ/sensitivity. (Our derivation [I]; the paper's calibration uses advanced composition.)

    Spec: seed-001 §3.2 (per-node privacy), §9 item 5.
    """
    sensitivity = L_tilde**2 if replace_one else L_tilde**2 / math.sqrt(2.0)
    return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma / sensitivity), m)


def zcdp_rho(epsilon: float, delta: float) -> float:
    """ρ = (√(ln(1/δ) + ε) − √(ln(1/δ)))², the zCDP level whose [BS16] conversion gives exactly ε.

    Spec: seed-001 §3.3, §9 item 1.
    """
    _check_eps_delta(epsilon, delta)
    v = math.log(1.0 / delta)
    return (math.sqrt(v + epsilon) - math.sqrt(v)) ** 2


def zcdp_to_dp_epsilon(rho: float, delta: float) -> float:
    """[BS16] Prop 1.3: ρ-zCDP ⇒ (ρ + 2√(ρ ln(1/δ)), δ)-DP.

    Spec: seed-001 §3.3 step 4.
    """
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def rank_noise_constant(T: int, rho: float) -> float:
    """c = √(T/(2ρ)), so the rank noise at window size N_t is σ_t = c/N_t.

    Spec: seed-001 §3.3, §3.5 (column c).
    """
    if not rho > 0:
        raise InvalidParameterError(f"`rho` must be > 0; got {rho}.")
    return math.sqrt(T / (2.0 * rho))


def rank_noise_sigma(T: int, n_window: int | np.ndarray, rho: float) -> float | np.ndarray:
    """σ_t = √(T/(2 N_t² ρ)): each release (sensitivity 1/N_t) is then (ρ/T)-zCDP.

    Spec: seed-001 §3.3 (Eq. (1)), §9 item 2.
    """
    return rank_noise_constant(T, rho) / np.asarray(n_window, dtype=float)


def rank_dp_event(T: int, rho: float) -> dp_accounting.DpEvent:
    """The rank releases as a dp-accounting event: T Gaussian releases with noise multiplier
    σ_t/(1/N_t) = √(T/(2ρ)) (parallel composition over arms).

    Spec: seed-001 §3.3 (Lemma 4.2 steps 1–3).
    """
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(rank_noise_constant(T, rho)), int(T))


def rdp_epsilon(event: dp_accounting.DpEvent, delta: float) -> float:
    """ε at ``delta`` of ``event`` by dp-accounting's RDP accountant (a tighter conversion than BS16)."""
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))
