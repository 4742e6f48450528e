"""Exact-rational checks of Theorem 1 of Cummings, Gupta, Kimpara and Morgenstern (2019).

Theorem 1 [P] says no (ε, 0)-DP algorithm (neighbours = ζ-close distributions) can always output a
hypothesis that satisfies equal opportunity (EO) and beats every constant classifier. This module
contains the pure mathematics of the checks C1–C5 of the spec, all in ``fractions.Fraction``:

* C1: the paper's 4-point D and D′ exactly as printed; the proof does not separate them [E-4].
* C2: the counterexample h* = 1[x ∈ {x₁, x₃}] to the literal statement.
* C3: the repaired 8-point construction [X] (ours, not the paper's).
* C4: exact privacy loss and hockey-stick δ(ε) of algorithms that always output an exactly EO,
  non-trivial hypothesis on the repaired inputs; δ(ε) ≥ 1/2 for every ε [X].
* C5: with slack α > 0 a single ζ-step only breaks hypotheses with little slack [X].

Floats appear only where the mathematics is irrational: e^ε in the hockey-stick divergence
(ε > 0), the final logarithm of a privacy-loss ratio, and the weights exp(−β·err) of the example
exponential mechanism (rounded to doubles, then used as exact rationals).

Spec: seed-000-002-compat.md §1.1–§1.4 (definitions), §2.2–§2.5 (constructions and checks).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

__all__ = [
    "COUNTEREXAMPLE",
    "EPSILON_GRID",
    "PAPER_FEATURES",
    "PAPER_POINTS",
    "REPAIRED_FEATURES",
    "REPAIRED_POINTS",
    "REPAIRED_UNIQUE",
    "ExactModel",
    "PrivacyLoss",
    "check_counterexample",
    "check_paper",
    "check_privacy_loss",
    "check_repaired",
    "check_slack",
    "deterministic_hypotheses",
    "exponential_mechanism",
    "hockey_stick_delta",
    "hypothesis_grid",
    "in_s0",
    "in_s1",
    "paper_distribution",
    "paper_identities_hold",
    "paper_neighbour",
    "paper_table",
    "privacy_loss",
    "random_paper_distribution",
    "repaired_distribution",
    "repaired_identities_hold",
    "repaired_neighbour",
    "repaired_table",
    "statistical_distance",
    "uniform_algorithm",
]

Point = tuple[str, int, int]
"""A data point z = (x, a, y)."""
Feature = tuple[str, int]
"""What a hypothesis may read: (x, a) (footnote 1 of the paper)."""
Distribution = dict[Point, Fraction]
Hypothesis = tuple[Fraction, ...]
"""h(x, a) = Pr[predict 1], one value per feature of the universe, in the universe's order."""
OutputDistribution = dict[Hypothesis, Fraction]

ZERO = Fraction(0)
ONE = Fraction(1)
HALF = Fraction(1, 2)
QUARTER = Fraction(1, 4)

PAPER_POINTS: tuple[Point, ...] = (("x0", 0, 0), ("x1", 0, 1), ("x2", 1, 0), ("x3", 1, 1))
PAPER_FEATURES: tuple[Feature, ...] = (("x0", 0), ("x1", 0), ("x2", 1), ("x3", 1))
REPAIRED_FEATURES: tuple[Feature, ...] = (("H", 0), ("L", 0), ("H", 1), ("L", 1))
REPAIRED_POINTS: tuple[Point, ...] = tuple((x, a, y) for (x, a) in REPAIRED_FEATURES for y in (1, 0))
COUNTEREXAMPLE: Hypothesis = (ZERO, ONE, ZERO, ONE)
"""h* = 1[x ∈ {x₁, x₃}] on the paper's universe (spec §2.3)."""
REPAIRED_UNIQUE: Hypothesis = (ONE, ZERO, ONE, ZERO)
"""h = 1[x = H] in the order (H,0), (L,0), (H,1), (L,1) (spec §2.4)."""
EPSILON_GRID: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)


# ---------------------------------------------------------------------------------------------
# The exact model
# ---------------------------------------------------------------------------------------------


def _frac(value: int | str | Fraction) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(value)


def as_hypothesis(values: Iterable[int | str | Fraction]) -> Hypothesis:
    """Exact hypothesis tuple from ints, strings or Fractions, each in [0, 1].

    Spec: §1.1 (randomized h: 𝒳 → [0, 1]).
    """
    h = tuple(_frac(v) for v in values)
    if any(v < 0 or v > 1 for v in h):
        raise ValueError(f"hypothesis values must lie in [0, 1]; got {h}")
    return h


@dataclass(frozen=True)
class ExactModel:
    """A finite distribution over z = (x, a, y) with hypotheses read on (x, a).

    Parameters
    ----------
    features
        The (x, a) pairs of the universe; a hypothesis is a tuple aligned with this order.
    dist
        Probability mass of every point; Fractions summing to exactly 1.

    Spec: §1.1 (γ_ya, err), §1.4 (EO), §2.1 (non-trivial = error below every constant classifier).
    """

    features: tuple[Feature, ...]
    dist: Mapping[Point, Fraction]

    def __post_init__(self) -> None:
        if any(not isinstance(p, Fraction) for p in self.dist.values()):
            raise TypeError("masses must be Fractions")
        if any(p < 0 for p in self.dist.values()):
            raise ValueError("masses must be non-negative")
        if sum(self.dist.values(), ZERO) != 1:
            raise ValueError("masses must sum to exactly 1")
        unknown = {(x, a) for (x, a, _y) in self.dist} - set(self.features)
        if unknown:
            raise ValueError(f"points with features outside the universe: {sorted(unknown)}")

    @cached_property
    def _cells(self) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...], tuple[int, ...]]:
        """Per feature: P[(x,a), y=0], P[(x,a), y=1], and a."""
        idx = {f: i for i, f in enumerate(self.features)}
        m0 = [ZERO] * len(self.features)
        m1 = [ZERO] * len(self.features)
        for (x, a, y), p in self.dist.items():
            (m1 if y == 1 else m0)[idx[(x, a)]] += p
        return tuple(m0), tuple(m1), tuple(a for (_x, a) in self.features)

    def _check(self, h: Hypothesis) -> None:
        if len(h) != len(self.features):
            raise ValueError(f"hypothesis has {len(h)} values, universe has {len(self.features)} features")

    def label_mass(self, y: int) -> Fraction:
        """P[Y = y]."""
        return sum(self._cells[y], ZERO)

    def group_mass(self, y: int, a: int) -> Fraction:
        """P_ya = P[Y = y, A = a]."""
        m, groups = self._cells[y], self._cells[2]
        return sum((p for p, g in zip(m, groups, strict=True) if g == a), ZERO)

    def error(self, h: Hypothesis) -> Fraction:
        """err(h) = E|h(x, a) − y| (spec §1.1)."""
        self._check(h)
        m0, m1, _ = self._cells
        return sum((p0 * v + p1 * (ONE - v) for p0, p1, v in zip(m0, m1, h, strict=True)), ZERO)

    def joint_positive(self, h: Hypothesis, y: int, a: int) -> Fraction:
        """P[h = 1, Y = y, A = a], the *joint* probability (spec §2.3: the paper's "1/4 ∓ ζ")."""
        self._check(h)
        m, groups = self._cells[y], self._cells[2]
        return sum((p * v for p, v, g in zip(m, h, groups, strict=True) if g == a), ZERO)

    def gamma(self, h: Hypothesis, y: int, a: int) -> Fraction:
        """γ_ya(h) = P[h = 1 | Y = y, A = a], the *conditional* rate (spec §1.1)."""
        mass = self._group_masses[(y, a)]
        if mass == 0:
            raise ZeroDivisionError(f"P[Y={y}, A={a}] = 0: γ_{y}{a} is undefined")
        return self.joint_positive(h, y, a) / mass

    @cached_property
    def _group_masses(self) -> dict[tuple[int, int], Fraction]:
        return {(y, a): self.group_mass(y, a) for y in (0, 1) for a in (0, 1)}

    def eo_gap(self, h: Hypothesis) -> Fraction:
        """γ₁₀(h) − γ₁₁(h); zero iff h satisfies equal opportunity (spec §1.4)."""
        return self.gamma(h, 1, 0) - self.gamma(h, 1, 1)

    def is_eo(self, h: Hypothesis) -> bool:
        """Exact equal opportunity γ₁₀ = γ₁₁ (spec §1.4)."""
        return self.eo_gap(h) == 0

    @cached_property
    def _constant_error(self) -> Fraction:
        return min(self.label_mass(0), self.label_mass(1))

    def constant_error(self) -> Fraction:
        """Best error of a constant classifier, min(P[y=0], P[y=1]) (spec §2.1)."""
        return self._constant_error

    def is_nontrivial(self, h: Hypothesis) -> bool:
        """err(h) strictly below every constant classifier (spec §2.1)."""
        return self.error(h) < self.constant_error()

    def is_fair_nontrivial(self, h: Hypothesis) -> bool:
        """EO and non-trivial: what Theorem 1's algorithm must output (spec §2.1)."""
        return self.is_eo(h) and self.is_nontrivial(h)


def statistical_distance(d1: Mapping[Point, Fraction], d2: Mapping[Point, Fraction]) -> Fraction:
    """‖D − D′‖_SD = ½ Σ_z |D(z) − D′(z)| (spec §1.2, Def. 2 of the paper)."""
    points = set(d1) | set(d2)
    return HALF * sum((abs(d1.get(z, ZERO) - d2.get(z, ZERO)) for z in points), ZERO)


def deterministic_hypotheses(n_features: int = 4) -> list[Hypothesis]:
    """All 2^n deterministic hypotheses, in lexicographic order (spec §2.3, §2.5 C1/C3)."""
    return [tuple(Fraction(v) for v in bits) for bits in itertools.product((0, 1), repeat=n_features)]


def hypothesis_grid(step: Fraction, n_features: int = 4) -> list[Hypothesis]:
    """Randomized hypotheses on the rational grid {0, step, 2·step, …, 1}^n (spec §2.5 C3).

    Raises
    ------
    ValueError
        If 1/step is not a positive integer.
    """
    step = _frac(step)
    if step <= 0 or (1 / step).denominator != 1:
        raise ValueError(f"grid step must be 1/k for a positive integer k; got {step}")
    values = [k * step for k in range(int(1 / step) + 1)]
    return list(itertools.product(values, repeat=n_features))


def format_hypothesis(h: Hypothesis) -> str:
    """Stable text form, e.g. ``(0,1,0,1)`` or ``(1/2,0,1,1)``."""
    return "(" + ",".join(str(v) for v in h) + ")"


# ---------------------------------------------------------------------------------------------
# C1: the paper's construction exactly as printed
# ---------------------------------------------------------------------------------------------


def paper_distribution() -> Distribution:
    """The paper's D: uniform 1/4 on z₀ … z₃ with distinct x (spec §2.2, DEC-2)."""
    return {z: QUARTER for z in PAPER_POINTS}


def paper_neighbour(zeta: Fraction) -> Distribution:
    """The paper's D′: ζ more mass on z₃ = (x₃,1,1), ζ less on z₁ = (x₁,0,1) (spec §2.2).

    Raises
    ------
    ValueError
        Unless 0 < ζ < 1/4 (so that D′ has full support).
    """
    zeta = _frac(zeta)
    if not 0 < zeta < QUARTER:
        raise ValueError(f"ζ must lie in (0, 1/4); got {zeta}")
    dist = paper_distribution()
    dist[("x1", 0, 1)] -= zeta
    dist[("x3", 1, 1)] += zeta
    return dist


def paper_table(zeta: Fraction) -> list[dict[str, object]]:
    """The spec §2.3 table for all 16 deterministic h on the paper's D and D′.

    Columns: ``h``, ``err_D``, ``gamma10_D``, ``gamma11_D``, ``gamma10_Dprime``,
    ``gamma11_Dprime``, ``err_Dprime``, ``joint10_Dprime`` (= P_{D′}[h=1, Y=1, A=0]),
    ``joint11_Dprime``, ``eo_D``, ``nontrivial_D``, ``eo_Dprime``, ``nontrivial_Dprime`` and
    ``witness`` (EO and non-trivial on D but not EO on D′: what the proof needs for every
    EO non-trivial h). Values are Fractions and bools.

    Spec: §2.3 (table, E-4), §2.5 C1.
    """
    model_d = ExactModel(PAPER_FEATURES, paper_distribution())
    model_p = ExactModel(PAPER_FEATURES, paper_neighbour(zeta))
    rows: list[dict[str, object]] = []
    for h in deterministic_hypotheses(4):
        fair_d = model_d.is_fair_nontrivial(h)
        rows.append(
            {
                "h": h,
                "err_D": model_d.error(h),
                "gamma10_D": model_d.gamma(h, 1, 0),
                "gamma11_D": model_d.gamma(h, 1, 1),
                "gamma10_Dprime": model_p.gamma(h, 1, 0),
                "gamma11_Dprime": model_p.gamma(h, 1, 1),
                "err_Dprime": model_p.error(h),
                "joint10_Dprime": model_p.joint_positive(h, 1, 0),
                "joint11_Dprime": model_p.joint_positive(h, 1, 1),
                "eo_D": model_d.is_eo(h),
                "nontrivial_D": model_d.is_nontrivial(h),
                "eo_Dprime": model_p.is_eo(h),
                "nontrivial_Dprime": model_p.is_nontrivial(h),
                "witness": fair_d and not model_p.is_eo(h),
            }
        )
    return rows


def paper_identities_hold(zetas: Sequence[Fraction], step: Fraction) -> bool:
    """Randomized-h identities on the paper's D′ for every grid h and every ζ (spec §2.3, C1).

    Checks exactly, for h = (h₀, h₁, h₂, h₃) on the grid:
    γ₁₀^{D′} = h₁ and γ₁₁^{D′} = h₃ (no ζ), err_D(h) = ½ + ¼(h₀ + h₂ − h₁ − h₃),
    err_{D′}(h) = err_D(h) + ζ(h₁ − h₃), P_{D′}[h=1,Y=1,A=0] = h₁(¼ − ζ) and
    P_{D′}[h=1,Y=1,A=1] = h₃(¼ + ζ).
    """
    model_d = ExactModel(PAPER_FEATURES, paper_distribution())
    models = [(Fraction(z), ExactModel(PAPER_FEATURES, paper_neighbour(Fraction(z)))) for z in zetas]
    for h in hypothesis_grid(step, 4):
        h0, h1, h2, h3 = h
        err_d = model_d.error(h)
        if err_d != HALF + QUARTER * (h0 + h2 - h1 - h3):
            return False
        for zeta, model_p in models:
            if model_p.gamma(h, 1, 0) != h1 or model_p.gamma(h, 1, 1) != h3:
                return False
            if model_p.error(h) != err_d + zeta * (h1 - h3):
                return False
            if model_p.joint_positive(h, 1, 0) != h1 * (QUARTER - zeta):
                return False
            if model_p.joint_positive(h, 1, 1) != h3 * (QUARTER + zeta):
                return False
    return True


@dataclass(frozen=True)
class PaperCheck:
    """Summary of C1 at one ζ (spec §2.5 C1).

    Attributes
    ----------
    eo_nontrivial_on_D, still_fair_on_Dprime, witnesses
        Counts over the 16 deterministic h (expected 3, 3, 0).
    separates
        Whether every EO non-trivial deterministic h on D fails EO on D′ (and there is one):
        what the printed proof claims. Expected False.
    grid_eo_nontrivial, grid_witnesses
        The same two counts over the randomized grid (expected ≥ 1 and 0).
    identities_hold
        :func:`paper_identities_hold` on the grid.
    statistical_distance
        SD(D, D′), equal to ζ.
    """

    zeta: Fraction
    rows: list[dict[str, object]]
    eo_nontrivial_on_D: int
    still_fair_on_Dprime: int
    witnesses: int
    separates: bool
    grid_eo_nontrivial: int
    grid_witnesses: int
    identities_hold: bool
    statistical_distance: Fraction
    constant_error_D: Fraction


def check_paper(zeta: Fraction, step: Fraction = Fraction(1, 10)) -> PaperCheck:
    """Run C1: the printed construction, deterministic table and randomized grid (spec §2.5 C1)."""
    zeta = _frac(zeta)
    rows = paper_table(zeta)
    fair = [r for r in rows if r["eo_D"] and r["nontrivial_D"]]
    still = [r for r in fair if r["eo_Dprime"] and r["nontrivial_Dprime"]]
    witnesses = [r for r in fair if r["witness"]]
    model_d = ExactModel(PAPER_FEATURES, paper_distribution())
    model_p = ExactModel(PAPER_FEATURES, paper_neighbour(zeta))
    grid_fair = [h for h in hypothesis_grid(step, 4) if model_d.is_fair_nontrivial(h)]
    grid_witnesses = sum(1 for h in grid_fair if not model_p.is_eo(h))
    return PaperCheck(
        zeta=zeta,
        rows=rows,
        eo_nontrivial_on_D=len(fair),
        still_fair_on_Dprime=len(still),
        witnesses=len(witnesses),
        separates=bool(fair) and len(witnesses) == len(fair),
        grid_eo_nontrivial=len(grid_fair),
        grid_witnesses=grid_witnesses,
        identities_hold=paper_identities_hold([zeta], step),
        statistical_distance=statistical_distance(paper_distribution(), paper_neighbour(zeta)),
        constant_error_D=model_d.constant_error(),
    )


# ---------------------------------------------------------------------------------------------
# C2: the counterexample h* = (0, 1, 0, 1)
# ---------------------------------------------------------------------------------------------


def random_paper_distribution(rng: np.random.Generator, resolution: int = 10**6) -> Distribution:
    """A random full-support distribution on the paper's 4 points, exact once drawn (spec §2.5 C2).

    Draws p ~ Dirichlet(1, 1, 1, 1), rounds to integer weights k_i = max(1, round(p_i·resolution))
    and returns k_i / Σk (exact Fractions, every mass > 0).
    """
    p = rng.dirichlet(np.ones(len(PAPER_POINTS)))
    weights = [max(1, round(float(v) * resolution)) for v in p]
    total = sum(weights)
    return {z: Fraction(k, total) for z, k in zip(PAPER_POINTS, weights, strict=True)}


@dataclass(frozen=True)
class CounterexampleCheck:
    """Summary of C2 (spec §2.5 C2).

    Attributes
    ----------
    n_distributions, n_holds
        Random full-support D drawn, and how many of them have h* EO with γ₁₀ = γ₁₁ = 1 and
        err 0 < min(P[y=0], P[y=1]).
    max_privacy_loss, delta_at_zero
        Of the data-independent algorithm A ≡ h* between consecutive random inputs and between
        the paper's D and D′(ζ): 0 and exactly 0.
    """

    n_distributions: int
    n_holds: int
    max_privacy_loss: float
    delta_at_zero: Fraction
    holds_on_paper_pair: bool


def counterexample_holds(dist: Mapping[Point, Fraction]) -> bool:
    """h* is EO with γ = 1 and has error 0 < min(P[y=0], P[y=1]) on ``dist`` (spec §2.3)."""
    model = ExactModel(PAPER_FEATURES, dict(dist))
    h = COUNTEREXAMPLE
    return (
        model.gamma(h, 1, 0) == 1
        and model.gamma(h, 1, 1) == 1
        and model.error(h) == 0
        and model.constant_error() > 0
        and model.is_fair_nontrivial(h)
    )


def check_counterexample(rng: np.random.Generator, n_distributions: int, zeta: Fraction) -> CounterexampleCheck:
    """Run C2 on ``n_distributions`` random D and on the paper's (D, D′(ζ)) (spec §2.5 C2).

    The algorithm A ≡ h* ignores its input, so its output distribution {h*: 1} is the same on every
    input: privacy loss 0 and δ(0) = 0, i.e. 0-DP, while always EO and error 0.
    """
    dists = [random_paper_distribution(rng) for _ in range(n_distributions)]
    n_holds = sum(1 for d in dists if counterexample_holds(d))
    inputs = [*dists, paper_distribution(), paper_neighbour(_frac(zeta))]
    outputs = [constant_algorithm(COUNTEREXAMPLE, d) for d in inputs]
    losses = [privacy_loss(p, q) for p, q in itertools.pairwise(outputs)]
    losses += [privacy_loss(q, p) for p, q in itertools.pairwise(outputs)]
    return CounterexampleCheck(
        n_distributions=n_distributions,
        n_holds=n_holds,
        max_privacy_loss=max((loss.max_log_ratio for loss in losses), default=0.0),
        delta_at_zero=max((hockey_stick_delta(p, q, 0.0) for p, q in itertools.pairwise(outputs)), default=ZERO),
        holds_on_paper_pair=counterexample_holds(paper_distribution())
        and counterexample_holds(paper_neighbour(_frac(zeta))),
    )


# ---------------------------------------------------------------------------------------------
# C3: the repaired 8-point construction [X] (ours, not the paper's)
# ---------------------------------------------------------------------------------------------


def repaired_distribution() -> Distribution:
    """The repaired D [X]: a ~ Bern(½), x ~ Unif{H, L}, P[y=1 | H] = ¾, P[y=1 | L] = ¼ (spec §2.4)."""
    masses = {("H", 1): Fraction(3, 16), ("H", 0): Fraction(1, 16), ("L", 1): Fraction(1, 16), ("L", 0): Fraction(3, 16)}
    return {(x, a, y): masses[(x, y)] for (x, a, y) in REPAIRED_POINTS}


def repaired_neighbour(a: int, zeta: Fraction) -> Distribution:
    """D′_a [X]: move ζ of mass from (H, a, 1) to (L, a, 1) (spec §2.4).

    Raises
    ------
    ValueError
        Unless a ∈ {0, 1} and 0 < ζ ≤ 3/16.
    """
    zeta = _frac(zeta)
    if a not in (0, 1):
        raise ValueError(f"a must be 0 or 1; got {a}")
    if not 0 < zeta <= Fraction(3, 16):
        raise ValueError(f"ζ must lie in (0, 3/16]; got {zeta}")
    dist = repaired_distribution()
    dist[("H", a, 1)] -= zeta
    dist[("L", a, 1)] += zeta
    return dist


def in_s0(h: Hypothesis) -> bool:
    """S₀ = {h : h(H,0) ≠ h(L,0)} (spec §2.4 proof)."""
    return h[0] != h[1]


def in_s1(h: Hypothesis) -> bool:
    """S₁ = {h : h(H,0) = h(L,0), h(H,1) ≠ h(L,1)} (spec §2.4 proof)."""
    return h[0] == h[1] and h[2] != h[3]


def repaired_table(zeta: Fraction) -> list[dict[str, object]]:
    """All 16 deterministic h on the repaired D, D′₀, D′₁ [X] (spec §2.4, §2.5 C3).

    ``witness`` is True when h is EO and non-trivial on D and fails EO on D′_a for the a with
    h ∈ S_a (the set-based proof of spec §2.4).
    """
    model_d = ExactModel(REPAIRED_FEATURES, repaired_distribution())
    model_0 = ExactModel(REPAIRED_FEATURES, repaired_neighbour(0, zeta))
    model_1 = ExactModel(REPAIRED_FEATURES, repaired_neighbour(1, zeta))
    rows: list[dict[str, object]] = []
    for h in deterministic_hypotheses(4):
        fair = model_d.is_fair_nontrivial(h)
        broken = (in_s0(h) and not model_0.is_eo(h)) or (in_s1(h) and not model_1.is_eo(h))
        rows.append(
            {
                "h": h,
                "err_D": model_d.error(h),
                "gamma10_D": model_d.gamma(h, 1, 0),
                "gamma11_D": model_d.gamma(h, 1, 1),
                "eo_D": model_d.is_eo(h),
                "nontrivial_D": model_d.is_nontrivial(h),
                "in_S0": in_s0(h),
                "in_S1": in_s1(h),
                "gamma10_Dprime0": model_0.gamma(h, 1, 0),
                "gamma11_Dprime0": model_0.gamma(h, 1, 1),
                "eo_Dprime0": model_0.is_eo(h),
                "gamma10_Dprime1": model_1.gamma(h, 1, 0),
                "gamma11_Dprime1": model_1.gamma(h, 1, 1),
                "eo_Dprime1": model_1.is_eo(h),
                "witness": fair and broken,
            }
        )
    return rows


def repaired_identities_hold(zeta: Fraction, step: Fraction) -> bool:
    """Exact identities of spec §2.4 on every grid h [X].

    For h = (h(H,0), h(L,0), h(H,1), h(L,1)): err_D = ½ − [h(H,0) + h(H,1) − h(L,0) − h(L,1)]/8;
    γ₁ₐ^D = ¾h(H,a) + ¼h(L,a); γ₁ₐ^{D′_a} − γ₁ₐ^D = 4ζ(h(L,a) − h(H,a)) while γ₁,₁₋ₐ is unchanged,
    i.e. (γ₁₀ − γ₁₁)^{D′₀} − (γ₁₀ − γ₁₁)^D = 4ζ(h(L,0) − h(H,0)) and
    (γ₁₀ − γ₁₁)^{D′₁} − (γ₁₀ − γ₁₁)^D = −4ζ(h(L,1) − h(H,1)); err_{D′_a} = err_D + ζ(h(H,a) − h(L,a));
    and SD(D, D′_a) = ζ.
    """
    zeta = _frac(zeta)
    dist = repaired_distribution()
    neighbours = {a: repaired_neighbour(a, zeta) for a in (0, 1)}
    if any(statistical_distance(dist, n) != zeta for n in neighbours.values()):
        return False
    model_d = ExactModel(REPAIRED_FEATURES, dist)
    models = {a: ExactModel(REPAIRED_FEATURES, n) for a, n in neighbours.items()}
    three_q = Fraction(3, 4)
    for h in hypothesis_grid(step, 4):
        hh = {(0, "H"): h[0], (0, "L"): h[1], (1, "H"): h[2], (1, "L"): h[3]}
        err_d = model_d.error(h)
        if err_d != HALF - (h[0] + h[2] - h[1] - h[3]) / 8:
            return False
        g = {a: model_d.gamma(h, 1, a) for a in (0, 1)}
        if any(g[a] != three_q * hh[(a, "H")] + QUARTER * hh[(a, "L")] for a in (0, 1)):
            return False
        for a, model in models.items():
            shift = 4 * zeta * (hh[(a, "L")] - hh[(a, "H")])
            if model.gamma(h, 1, a) - g[a] != shift or model.gamma(h, 1, 1 - a) != g[1 - a]:
                return False
            sign = 1 if a == 0 else -1
            if model.eo_gap(h) - model_d.eo_gap(h) != sign * shift:
                return False
            if model.error(h) != err_d + zeta * (hh[(a, "H")] - hh[(a, "L")]):
                return False
    return True


@dataclass(frozen=True)
class RepairedCheck:
    """Summary of C3 at one ζ [X] (spec §2.5 C3).

    Attributes
    ----------
    eo_nontrivial_on_D, witnesses, separates
        Over the 16 deterministic h: expected 1, 1, True.
    unique_h
        The unique EO non-trivial deterministic h (expected 1[x = H]), or None.
    gamma10_Dprime0, gamma11_Dprime0
        γ₁₀, γ₁₁ of 1[x = H] on D′₀ (¾ − 4ζ and ¾).
    grid_eo_nontrivial, grid_witnesses, grid_in_s0_s1
        Over the randomized grid: EO non-trivial h on D, how many fail EO on D′_a for their S_a,
        and how many lie in S₀ ∪ S₁ (all three equal when the repaired theorem's argument holds).
    """

    zeta: Fraction
    rows: list[dict[str, object]]
    eo_nontrivial_on_D: int
    witnesses: int
    separates: bool
    unique_h: Hypothesis | None
    gamma10_Dprime0: Fraction
    gamma11_Dprime0: Fraction
    statistical_distance: Fraction
    grid_eo_nontrivial: int
    grid_witnesses: int
    grid_in_s0_s1: int
    identities_hold: bool


def check_repaired(zeta: Fraction, step: Fraction = Fraction(1, 10)) -> RepairedCheck:
    """Run C3 [X]: enumeration, identities and the randomized grid (spec §2.5 C3)."""
    zeta = _frac(zeta)
    rows = repaired_table(zeta)
    fair = [r for r in rows if r["eo_D"] and r["nontrivial_D"]]
    witnesses = [r for r in fair if r["witness"]]
    model_d = ExactModel(REPAIRED_FEATURES, repaired_distribution())
    models = {a: ExactModel(REPAIRED_FEATURES, repaired_neighbour(a, zeta)) for a in (0, 1)}
    grid_fair = [h for h in hypothesis_grid(step, 4) if model_d.is_fair_nontrivial(h)]
    in_sets = [h for h in grid_fair if in_s0(h) or in_s1(h)]
    grid_witnesses = [h for h in in_sets if not models[0 if in_s0(h) else 1].is_eo(h)]
    return RepairedCheck(
        zeta=zeta,
        rows=rows,
        eo_nontrivial_on_D=len(fair),
        witnesses=len(witnesses),
        separates=bool(fair) and len(witnesses) == len(fair),
        unique_h=fair[0]["h"] if len(fair) == 1 else None,  # type: ignore[arg-type]
        gamma10_Dprime0=models[0].gamma(REPAIRED_UNIQUE, 1, 0),
        gamma11_Dprime0=models[0].gamma(REPAIRED_UNIQUE, 1, 1),
        statistical_distance=statistical_distance(repaired_distribution(), repaired_neighbour(0, zeta)),
        grid_eo_nontrivial=len(grid_fair),
        grid_witnesses=len(grid_witnesses),
        grid_in_s0_s1=len(in_sets),
        identities_hold=repaired_identities_hold(zeta, step),
    )


# ---------------------------------------------------------------------------------------------
# C4: privacy loss of algorithms that always output an exactly fair, non-trivial h
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivacyLoss:
    """Privacy loss of output distribution P against Q (spec §2.5 C4, §1.3).

    Attributes
    ----------
    max_ratio
        max_h P(h)/Q(h) over h with P(h) > 0 (exact), or None when some such h has Q(h) = 0.
        This equals max_S P(S)/Q(S) for discrete outputs.
    impossible_mass
        P(h : Q(h) = 0), exact: a lower bound on δ(ε) for every ε, attained as ε → ∞.
    """

    max_ratio: Fraction | None
    impossible_mass: Fraction

    @property
    def max_log_ratio(self) -> float:
        """ln of :attr:`max_ratio` (float at this final step; +inf when unbounded)."""
        return math.inf if self.max_ratio is None else math.log(self.max_ratio)


def privacy_loss(p: Mapping[Hypothesis, Fraction], q: Mapping[Hypothesis, Fraction]) -> PrivacyLoss:
    """Exact privacy loss of P against Q (spec §2.5 C4)."""
    ratios = [pv / q[h] for h, pv in p.items() if pv > 0 and q.get(h, ZERO) > 0]
    impossible = sum((pv for h, pv in p.items() if pv > 0 and q.get(h, ZERO) == 0), ZERO)
    if impossible > 0:
        return PrivacyLoss(None, impossible)
    return PrivacyLoss(max(ratios, default=ONE), ZERO)


def hockey_stick_delta(p: Mapping[Hypothesis, Fraction], q: Mapping[Hypothesis, Fraction], epsilon: float) -> Fraction:
    """Smallest δ with P(S) ≤ e^ε Q(S) + δ for all S: Σ_h max(0, P(h) − e^ε Q(h)) (spec §2.5 C4).

    Exact for ε = 0 (then it is the total variation distance). For ε > 0, e^ε is irrational and is
    used as the double ``math.exp(ε)`` converted exactly to a Fraction; everything else is exact,
    so the only rounding is that of e^ε. Terms with Q(h) = 0 contribute P(h) exactly.
    """
    if epsilon < 0:
        raise ValueError("ε must be non-negative")
    factor = ONE if epsilon == 0 else Fraction(math.exp(epsilon))
    return sum((max(ZERO, pv - factor * q.get(h, ZERO)) for h, pv in p.items()), ZERO)


def constant_algorithm(h: Hypothesis, dist: Mapping[Point, Fraction]) -> OutputDistribution:
    """The data-independent algorithm A ≡ h: output distribution {h: 1} on every input (spec §2.3)."""
    del dist
    return {h: ONE}


def uniform_algorithm(candidates: Iterable[Hypothesis], feasible: Callable[[Hypothesis], bool]) -> OutputDistribution:
    """Uniform output distribution over the feasible candidates (spec §2.5 C4 example).

    Raises
    ------
    ValueError
        If no candidate is feasible.
    """
    chosen = [h for h in candidates if feasible(h)]
    if not chosen:
        raise ValueError("no feasible hypothesis")
    mass = Fraction(1, len(chosen))
    return dict.fromkeys(chosen, mass)


def exponential_mechanism(
    candidates: Iterable[Hypothesis],
    feasible: Callable[[Hypothesis], bool],
    loss: Callable[[Hypothesis], Fraction],
    beta: float,
) -> OutputDistribution:
    """Exponential mechanism restricted to the feasible set: Pr[h] ∝ exp(−β·loss(h)) (spec §2.5 C4).

    The weights exp(−β·loss) are irrational; they are rounded to doubles and then converted
    exactly to Fractions and normalised exactly, so the output distribution is an exact rational
    distribution (the analysed algorithm is this rounded mechanism) and its support is exactly
    the feasible set.
    """
    chosen = [h for h in candidates if feasible(h)]
    if not chosen:
        raise ValueError("no feasible hypothesis")
    losses = [loss(h) for h in chosen]
    low = min(losses)
    weights = [Fraction(math.exp(-beta * float(v - low))) for v in losses]
    total = sum(weights, ZERO)
    return {h: w / total for h, w in zip(chosen, weights, strict=True)}


@dataclass(frozen=True)
class PrivacyLossCheck:
    """Summary of C4 at one ζ [X] (spec §2.5 C4, repaired theorem of §2.4).

    Attributes
    ----------
    rows
        One row per (algorithm, neighbour, direction, ε): ``delta`` (Fraction; exact at ε = 0,
        e^ε rounded otherwise), ``max_log_ratio`` (float, may be inf), ``impossible_mass``.
    delta_floor
        min over algorithms of max over neighbours/directions of the exact impossible mass: the
        ε → ∞ limit of the required δ. ≥ ½ by the repaired theorem.
    min_delta_bound
        min over algorithms and the ε grid of the worst-neighbour δ(ε).
    max_log_ratio
        min over algorithms of the worst-case privacy loss (+inf for both examples).
    s_masses
        Per algorithm, (P_D[S₀], P_D[S₁]) exactly; they sum to 1.
    """

    zeta: Fraction
    rows: list[dict[str, object]]
    delta_floor: Fraction
    min_delta_bound: Fraction
    max_log_ratio: float
    s_masses: dict[str, tuple[Fraction, Fraction]]
    n_feasible: dict[str, int]


def _repaired_algorithms(
    zeta: Fraction, step: Fraction, beta: float
) -> dict[str, dict[str, OutputDistribution]]:
    """Output distributions of the two example algorithms on D, D′₀, D′₁ [X] (spec §2.5 C4)."""
    grid = hypothesis_grid(step, 4)
    inputs = {
        "D": ExactModel(REPAIRED_FEATURES, repaired_distribution()),
        "D'_0": ExactModel(REPAIRED_FEATURES, repaired_neighbour(0, zeta)),
        "D'_1": ExactModel(REPAIRED_FEATURES, repaired_neighbour(1, zeta)),
    }
    return {
        "uniform-feasible": {
            name: uniform_algorithm(grid, model.is_fair_nontrivial) for name, model in inputs.items()
        },
        "exp-mech-feasible": {
            name: exponential_mechanism(grid, model.is_fair_nontrivial, model.error, beta)
            for name, model in inputs.items()
        },
    }


def check_privacy_loss(
    zeta: Fraction,
    step: Fraction = Fraction(1, 10),
    epsilons: Sequence[float] = EPSILON_GRID,
    beta: float = 10.0,
) -> PrivacyLossCheck:
    """Run C4 [X]: privacy loss and δ(ε) of always-EO, non-trivial algorithms (spec §2.5 C4).

    Algorithms (each outputs, on every input among D, D′₀, D′₁, a grid hypothesis that is EO and
    non-trivial *with respect to that input*): ``uniform-feasible`` (uniform over the feasible grid
    points) and ``exp-mech-feasible`` (exponential mechanism on the error, weight exp(−β·err),
    restricted to the feasible grid points).
    """
    zeta = _frac(zeta)
    outputs = _repaired_algorithms(zeta, _frac(step), beta)
    rows: list[dict[str, object]] = []
    floors: list[Fraction] = []
    min_bounds: list[Fraction] = []
    log_ratios: list[float] = []  # per algorithm: worst over neighbours and directions
    s_masses: dict[str, tuple[Fraction, Fraction]] = {}
    n_feasible: dict[str, int] = {}
    for algorithm, out in outputs.items():
        p_d = out["D"]
        s_masses[algorithm] = (
            sum((v for h, v in p_d.items() if in_s0(h)), ZERO),
            sum((v for h, v in p_d.items() if in_s1(h)), ZERO),
        )
        n_feasible[algorithm] = len(p_d)
        worst_floor = ZERO
        worst_log_ratio = 0.0
        worst_by_eps = {eps: ZERO for eps in epsilons}
        for neighbour in ("D'_0", "D'_1"):
            for direction, (p, q) in (("D->D'", (p_d, out[neighbour])), ("D'->D", (out[neighbour], p_d))):
                loss = privacy_loss(p, q)
                worst_floor = max(worst_floor, loss.impossible_mass)
                worst_log_ratio = max(worst_log_ratio, loss.max_log_ratio)
                for eps in epsilons:
                    delta = hockey_stick_delta(p, q, eps)
                    worst_by_eps[eps] = max(worst_by_eps[eps], delta)
                    rows.append(
                        {
                            "zeta": zeta,
                            "algorithm": algorithm,
                            "neighbour": neighbour,
                            "direction": direction,
                            "epsilon": eps,
                            "delta": delta,
                            "max_log_ratio": loss.max_log_ratio,
                            "impossible_mass": loss.impossible_mass,
                        }
                    )
        floors.append(worst_floor)
        log_ratios.append(worst_log_ratio)
        min_bounds.append(min(worst_by_eps.values()))
    return PrivacyLossCheck(
        zeta=zeta,
        rows=rows,
        delta_floor=min(floors),
        min_delta_bound=min(min_bounds),
        max_log_ratio=min(log_ratios),
        s_masses=s_masses,
        n_feasible=n_feasible,
    )


def paper_uniform_privacy(zeta: Fraction, step: Fraction = Fraction(1, 10)) -> PrivacyLoss:
    """Uniform-over-feasible algorithm on the *paper's* D vs D′: identical outputs (spec §2.3).

    Because γ^{D′} = γ^D and err_{D′} = err_D for every EO h, the feasible sets coincide and the
    privacy loss is 0 in both directions; the returned loss is the worse direction.
    """
    grid = hypothesis_grid(_frac(step), 4)
    model_d = ExactModel(PAPER_FEATURES, paper_distribution())
    model_p = ExactModel(PAPER_FEATURES, paper_neighbour(_frac(zeta)))
    p = uniform_algorithm(grid, model_d.is_fair_nontrivial)
    q = uniform_algorithm(grid, model_p.is_fair_nontrivial)
    forward, backward = privacy_loss(p, q), privacy_loss(q, p)
    return forward if forward.max_log_ratio >= backward.max_log_ratio else backward


# ---------------------------------------------------------------------------------------------
# C5 (optional): slack α > 0 [X]
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlackCheck:
    """Summary of C5 at one (ζ, α) [X] (spec §2.4 generalisation, §2.5 C5).

    Attributes
    ----------
    n_fair
        Grid h that are α-discriminatory (|γ₁₀ − γ₁₁| ≤ α) and non-trivial on D.
    n_broken
        Of those, how many fail α-discrimination on D′₀ or D′₁.
    rule_holds
        Every h broken on D′_a has slack α − |γ₁₀ − γ₁₁|^D < 4ζ|h(L,a) − h(H,a)|.
    surviving_fraction
        Fraction of the n_fair h that stay α-discriminatory and non-trivial on both D′₀ and D′₁.
    delta_floor
        Worst-neighbour impossible mass of the uniform algorithm over α-discriminatory,
        non-trivial grid points: the single-step argument's δ lower bound (below ½ for small ζ).
    """

    zeta: Fraction
    alpha: Fraction
    rows: list[dict[str, object]]
    n_fair: int
    n_broken: int
    rule_holds: bool
    surviving_fraction: Fraction
    delta_floor: Fraction


def check_slack(zeta: Fraction, alpha: Fraction, step: Fraction = Fraction(1, 10)) -> SlackCheck:
    """Run C5 [X]: which α-fair h does a single ζ-step break? (spec §2.5 C5)."""
    zeta, alpha = _frac(zeta), _frac(alpha)
    if alpha <= 0:
        raise ValueError("α must be positive")
    grid = hypothesis_grid(_frac(step), 4)
    model_d = ExactModel(REPAIRED_FEATURES, repaired_distribution())
    models = {a: ExactModel(REPAIRED_FEATURES, repaired_neighbour(a, zeta)) for a in (0, 1)}

    def feasible(model: ExactModel) -> Callable[[Hypothesis], bool]:
        return lambda h: abs(model.eo_gap(h)) <= alpha and model.is_nontrivial(h)

    fair = [h for h in grid if feasible(model_d)(h)]
    rule = True
    broken_any: set[Hypothesis] = set()
    rows: list[dict[str, object]] = []
    for a, model in models.items():
        broken = [h for h in fair if abs(model.eo_gap(h)) > alpha]
        for h in broken:
            slack = alpha - abs(model_d.eo_gap(h))
            dh = abs(h[2 * a + 1] - h[2 * a])
            rule = rule and slack < 4 * zeta * dh
        broken_any.update(broken)
        rows.append(
            {"zeta": zeta, "alpha": alpha, "neighbour": f"D'_{a}", "n_fair_D": len(fair), "n_broken": len(broken)}
        )
    surviving = [h for h in fair if all(feasible(m)(h) for m in models.values())]
    p_d = uniform_algorithm(grid, feasible(model_d))
    floor = ZERO
    for model in models.values():
        q = uniform_algorithm(grid, feasible(model))
        floor = max(floor, privacy_loss(p_d, q).impossible_mass, privacy_loss(q, p_d).impossible_mass)
    return SlackCheck(
        zeta=zeta,
        alpha=alpha,
        rows=rows,
        n_fair=len(fair),
        n_broken=len(broken_any),
        rule_holds=rule,
        surviving_fraction=Fraction(len(surviving), len(fair)) if fair else ZERO,
        delta_floor=floor,
    )
