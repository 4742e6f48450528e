"""Private-FairNR (Cummings et al. 2019, Algorithms 2–3): FTPL with noisy cumulative losses vs an auditor.

The data are aggregated into *types* (records with equal features, group and label): ``counts[j]``,
``y[j]``, ``g[j]`` (g = 1[a = 1], the single group 𝒢 = {1[a=1]}), and a finite hypothesis class is a
prediction matrix ``pred[h, j] = h(type j) ∈ {0, 1}``. Everything is linear in the per-record losses,
so the per-record Laplace noise of FTPL* enters only through its per-type sums, which we sample
exactly: a sum of k i.i.d. Lap(b) is Gamma(k, b) − Gamma(k, b).

The game (FP form, spec §5.2–§5.3), for a record i and dual λ = λ⁺ − λ⁻ ∈ [−C, C]:

    ℓ_i(λ) = (1 − 2y_i)/n + 1[y_i = 0]·λ·(q − g_i)/n,   q = n_{g0}/n₀,
    U(h, λ) = Σ_i h_i ℓ_i(λ) + #{y = 1}/n = err(h) + λ·Φ₊(h),
    Φ₊(h) = A_FP·(FP(h) − FP(h, g)) = (1/n) Σ_{y_i=0} h_i (q − g_i).

Equal opportunity (FN rates) is obtained by the label flip of spec §5.1 / DEC-19: train h′ on
y′ = 1 − y over the complemented class and output h = 1 − h′.

Modes (spec §5.7):

- ``"paper"`` [P]: reading (a) of LC (cumulative FTPL loss, DEC-11), Laplace scale 1/ε′ with the
  paper's ε′ = ε/(((2+C)/n)√(mT ln(1/δ))) for every round, and the noiseless auditor (argmax).
- ``"corrected"`` [X] (ours): each learner sample is an exponential mechanism over H at ε₀ on the
  score ⟨LC, h(Z)⟩ (:func:`ftpl_exp_mech_probabilities`), whose replace-one sensitivity is the ℓ₁
  sensitivity Δ₁(t) of the cumulative loss vector at round t (it grows like t:
  :func:`cumulative_loss_sensitivity`), and an exponential-mechanism auditor at ε₀; the m·T + T
  pure ε₀-DP steps (:func:`corrected_k_steps`, round 1 included) are composed exactly (optimal
  homogeneous composition, :func:`composition_delta`), and ε₀ is calibrated to the target (ε, δ).
  (Issue 14, defect 2: an earlier version summed per-record Laplace noise over the records each h
  predicts 1 on; which hypotheses receive a record's noise depends on its private type, so that
  step was not DP — a hypothesis could move from probability 0 to > 0 between neighbours.)
- ``"nonprivate"``: no noise, argmax auditor (FTPL with zero noise is follow-the-leader).

Spec: seed-000-002-compat.md §4 (Alg. 2, Lemma 4), §5.1–§5.7, §8 (DEC-10 … DEC-19, DEC-23, DEC-26).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from repro.errors import InvalidParameterError
from repro.privacy.guarantee import NON_PRIVATE, Guarantee, Label, Neighbouring

__all__ = [
    "guarantee",
    "MODES",
    "TypeData",
    "flip_labels",
    "per_round_loss",
    "cumulative_loss",
    "per_round_sensitivity",
    "cumulative_loss_sensitivity",
    "fp_violation_sensitivity",
    "laplace_type_sums",
    "ftpl_oracle",
    "ftpl_exp_mech_probabilities",
    "corrected_k_steps",
    "errors",
    "fp_violations",
    "auditor_best_response",
    "auditor_exp_mech",
    "FairNRRun",
    "private_fairnr",
    "lp_opt",
    "game_value",
]


def guarantee(mode: str, epsilon: float, delta: float) -> Guarantee:
    """What a Private-FairNR run of ``mode`` promises at the target (ε, δ) (module docstring, spec §5.7).

    ``corrected``: m·T + T exponential-mechanism steps at ε₀, replace one record, composed exactly (optimal
    homogeneous composition): *accounted*. ``paper``: the paper's ε′ schedule, whose privacy proof has gaps
    (spec §2 item 4): *nominal*. ``nonprivate``: none."""
    if mode == "corrected":
        return Guarantee(epsilon, delta, Label.ACCOUNTED, Neighbouring.REPLACE_ONE,
                         accountant="optimal homogeneous composition of pure exponential-mechanism steps")
    if mode == "paper":
        return Guarantee(epsilon, delta, Label.NOMINAL, Neighbouring.REPLACE_ONE, accountant="paper formula (Eq. 2)",
                         caveat="the paper's epsilon' schedule; its privacy proof has gaps (spec §2 item 4)")
    if mode == "nonprivate":
        return NON_PRIVATE
    raise InvalidParameterError(f"mode must be one of {MODES}; got {mode!r}.")

MODES = ("nonprivate", "paper", "corrected")


@dataclass(frozen=True)
class TypeData:
    """A dataset aggregated into types: ``counts[j]`` records with label ``y[j]`` and group ``g[j]``."""

    counts: np.ndarray
    y: np.ndarray
    g: np.ndarray

    def __post_init__(self) -> None:
        c, y, g = (np.asarray(v) for v in (self.counts, self.y, self.g))
        if not (c.shape == y.shape == g.shape) or c.ndim != 1:
            raise InvalidParameterError(f"counts, y and g must be 1-D of equal length; got {c.shape}, {y.shape}, {g.shape}.")
        if np.any(c < 0) or not set(np.unique(y)) <= {0, 1} or not set(np.unique(g)) <= {0, 1}:
            raise InvalidParameterError("counts must be >= 0 and y, g binary.")
        if self.n0 < 2 or self.ng0 < 1 or self.ng0 >= self.n0:
            raise InvalidParameterError(
                f"need at least one negative (y = 0) record in each group; got n₀ = {self.n0}, n_g0 = {self.ng0}.")

    @property
    def n(self) -> int:
        return int(np.sum(self.counts))

    @property
    def n0(self) -> int:
        return int(np.sum(self.counts[self.y == 0]))

    @property
    def ng0(self) -> int:
        return int(np.sum(self.counts[(self.y == 0) & (self.g == 1)]))

    @property
    def q(self) -> float:
        """q = n_{g0}/n₀ = Pr[g = 1 | y = 0] on the sample."""
        return self.ng0 / self.n0


def flip_labels(data: TypeData, pred: np.ndarray) -> tuple[TypeData, np.ndarray]:
    """EO via FP (spec §5.1, DEC-19): y′ = 1 − y and the complemented class h′ = 1 − h."""
    return TypeData(data.counts, 1 - np.asarray(data.y), data.g), 1 - np.asarray(pred)


def per_round_loss(data: TypeData, lam: float) -> np.ndarray:
    """Per-record loss ℓ_j(λ) of each type for one round's dual λ ∈ [−C, C] (spec §5.3)."""
    y, g = np.asarray(data.y), np.asarray(data.g)
    return ((1 - 2 * y) + (y == 0) * lam * (data.q - g)) / data.n


def cumulative_loss(data: TypeData, rounds: int, lam_sum: float) -> np.ndarray:
    """LC of reading (a): Σ_{r<t} ℓ(λ^r) = (t−1)(1−2y)/n + 1[y=0]·(Σλ^r)(q − g)/n, with rounds = t − 1."""
    y, g = np.asarray(data.y), np.asarray(data.g)
    return (rounds * (1 - 2 * y) + (y == 0) * lam_sum * (data.q - g)) / data.n


def per_round_sensitivity(n: int, C: float) -> float:
    """ℓ₁ sensitivity of one round's loss vector under replace-one: (max(2 + C, 2C) + C)/n.

    The replaced record's coordinate moves within {−1/n} ∪ [(1−C)/n, (1+C)/n] (width max(2+C, 2C)/n,
    E-15), and the change of q = n_{g0}/n₀ moves every other y = 0 coordinate by |λ||Δq|/n with
    Σ ≤ C/n. The paper uses (2 + C)/n. Spec: §5.3.
    """
    return (max(2.0 + C, 2.0 * C) + C) / n


def cumulative_loss_sensitivity(n: int, rounds: int, lam_abs_sum: float) -> float:
    """ℓ₁ sensitivity of the cumulative loss LC at round t (rounds = t − 1, Λ = |Σ_{r<t} λ^r| public).

    (max(2(t−1) + Λ, 2Λ) + Λ)/n ≤ (t−1)·per-round sensitivity. Spec: §5.3 (reading (a)), §5.7.
    """
    lam = abs(lam_abs_sum)
    return (max(2.0 * rounds + lam, 2.0 * lam) + lam) / n


def fp_violation_sensitivity(n: int) -> float:
    """Sensitivity of Φ₊(h) (and of any average over fixed hypotheses) under replace-one: 2/n. Spec: §5.7."""
    return 2.0 / n


def laplace_type_sums(counts: np.ndarray, scale: float, *, rng: np.random.Generator) -> np.ndarray:
    """Per-type sums of ``counts[j]`` i.i.d. Lap(scale) draws, exactly: Gamma(k, b) − Gamma(k, b)."""
    counts = np.asarray(counts, dtype=float)
    if scale == 0:
        return np.zeros_like(counts)
    k = np.maximum(counts, 1e-300)
    s = rng.gamma(k, scale) - rng.gamma(k, scale)
    return np.where(counts > 0, s, 0.0)


def ftpl_oracle(pred: np.ndarray, data: TypeData, cum_loss: np.ndarray, scale: float, *,
                rng: np.random.Generator) -> int:
    """One FTPL* step: argmin_h ⟨LC + ξ, h⟩ with ξ_i ~ Lap(scale) per record (CSC(H) by enumeration).

    Ties go to the lowest index (DEC-26). With ``scale = 0`` this is follow-the-leader.
    Spec: §4.1, §5.4.
    """
    total = np.asarray(data.counts) * cum_loss + laplace_type_sums(data.counts, scale, rng=rng)
    return int(np.argmin(pred @ total))


def ftpl_exp_mech_probabilities(pred: np.ndarray, data: TypeData, cum_loss: np.ndarray, sensitivity: float,
                                epsilon: float) -> np.ndarray:
    """Output law of one private FTPL step [X]: Pr[h] ∝ exp(−ε·⟨LC, h(Z)⟩ / (2Δ)).

    The score ⟨LC, h(Z)⟩ = Σ_i h(x_i)·LC_i moves by at most Δ = the ℓ₁ sensitivity of the per-record
    cumulative loss vector under replace-one (h ∈ {0, 1}), so sampling from this law is ε-DP
    (McSherry & Talwar 2007); it is report-noisy-min with one Gumbel(2Δ/ε) draw per hypothesis.
    With Δ = 0 (round 1, LC = 0) the law is uniform and data-independent. Spec: §5.4, §5.7 (issue 14).
    """
    score = pred @ (np.asarray(data.counts, dtype=float) * cum_loss)
    if sensitivity <= 0:
        if np.ptp(score) > 0:
            raise InvalidParameterError("sensitivity 0 with data-dependent scores; pass the score's sensitivity.")
        return np.full(pred.shape[0], 1.0 / pred.shape[0])
    logits = -epsilon * score / (2.0 * sensitivity)
    return np.exp(logits - special.logsumexp(logits))


def corrected_k_steps(T: int, m: int) -> int:
    """Number of ε₀-DP steps composed by the corrected mode: m learner samples and one auditor per round.

    Round 1's m samples are counted although under the exponential mechanism they are uniform (LC = 0),
    which only over-states ε. Spec: §5.7 (issue 14, defect 2).
    """
    return m * T + T


def errors(pred: np.ndarray, data: TypeData) -> np.ndarray:
    """Sample error err(h) of every h (0-1 loss)."""
    y = np.asarray(data.y)
    wrong = np.where(y[None, :] == 1, 1 - pred, pred)
    return wrong @ np.asarray(data.counts) / data.n


def fp_violations(pred: np.ndarray, data: TypeData) -> np.ndarray:
    """Φ₊(h) = A_FP(g)·(FP(h) − FP(h, g)) = (1/n) Σ_{y=0} h_i (q − g_i) for every h (spec §5.3)."""
    y, g = np.asarray(data.y), np.asarray(data.g)
    w = np.asarray(data.counts) * (y == 0) * (data.q - g) / data.n
    return pred @ w


def auditor_best_response(v: float, C: float, slack: float = 0.0) -> float:
    """Noiseless auditor: λ = +C if Φ₊ is the larger violation, −C otherwise; 0 if max(±v) ≤ slack > 0.

    Ties go to +C (DEC-26). Spec: §5.4 ("Auditor best response"), DEC-10.
    """
    if slack > 0 and max(v, -v) <= slack:
        return 0.0
    return C if v >= -v else -C


def auditor_exp_mech(v: float, C: float, slack: float, epsilon: float, n: int, *,
                     rng: np.random.Generator) -> float:
    """Private auditor [X]: exponential mechanism over λ ∈ {+C, −C} (and 0 if slack > 0).

    Scores are the payoffs C(σv − slack) (0 for λ = 0), each of sensitivity C·2/n; sampling
    ∝ exp(ε·score/(2·sensitivity)) is ε-DP. Spec: §5.5 (E-17 fix), DEC-13.
    """
    options = [C, -C] + ([0.0] if slack > 0 else [])
    scores = np.array([C * (v - slack), C * (-v - slack)] + ([0.0] if slack > 0 else []))
    logits = epsilon * scores / (2.0 * C * fp_violation_sensitivity(n))
    p = np.exp(logits - special.logsumexp(logits))
    return float(options[int(rng.choice(len(options), p=p))])


@dataclass
class FairNRRun:
    """Trajectory of one run: sampled hypotheses per round, duals, noise scales."""

    samples: np.ndarray  # (T, m) hypothesis indices
    lambdas: np.ndarray  # (T,)
    scales: np.ndarray  # (T,) per-record Laplace scale (paper) or exp.-mechanism Gumbel scale 2Δ/ε₀ (corrected)
    mode: str
    info: dict[str, float] = field(default_factory=dict)

    def mixture(self, upto: int | None = None) -> np.ndarray:
        """Weights over H of the uniform mixture of all m·t sampled hypotheses (DEC-17)."""
        s = self.samples[: (upto or len(self.samples))].ravel()
        return np.bincount(s, minlength=int(self.info["n_hypotheses"])) / s.size


def private_fairnr(pred: np.ndarray, data: TypeData, *, T: int, m: int, C: float, mode: str,
                   rng: np.random.Generator, eps_prime: float | None = None, eps_step: float | None = None,
                   slack: float = 0.0) -> FairNRRun:
    """Run Algorithm 3 (FP form) for T rounds of m FTPL samples each.

    Parameters
    ----------
    pred, data
        Prediction matrix (|H| × types) and aggregated data (already label-flipped for EO).
    T, m, C
        Rounds, learner samples per round, dual bound (C = 1/α by default upstream, DEC-20).
    mode
        ``nonprivate``, ``paper`` (needs ``eps_prime``) or ``corrected`` (needs ``eps_step``).
    slack
        Kearns-style slack ξ of the auditor (DEC-10; 0 = paper-literal).

    Spec: §5.4, §5.7.
    """
    if mode not in MODES:
        raise InvalidParameterError(f"mode must be one of {MODES}; got {mode!r}.")
    if T < 1 or m < 1 or not C > 0:
        raise InvalidParameterError(f"need T >= 1, m >= 1 and C > 0; got T={T}, m={m}, C={C}.")
    if mode == "paper" and not (eps_prime and eps_prime > 0):
        raise InvalidParameterError("mode 'paper' needs eps_prime > 0 (the paper's ε′).")
    if mode == "corrected" and not (eps_step and eps_step > 0):
        raise InvalidParameterError("mode 'corrected' needs eps_step > 0 (the calibrated per-step ε₀).")
    n = data.n
    samples = np.empty((T, m), dtype=np.int64)
    lambdas = np.empty(T)
    scales = np.empty(T)
    phi = fp_violations(pred, data)
    lam_sum = 0.0
    for t in range(T):
        cum = cumulative_loss(data, t, lam_sum)
        if mode == "nonprivate":
            scale = 0.0
        elif mode == "paper":
            scale = 1.0 / eps_prime
        else:
            # Exponential mechanism on ⟨LC, h(Z)⟩; "scale" is its Gumbel scale 2Δ/ε₀ (0 at t = 1: uniform).
            sens = cumulative_loss_sensitivity(n, t, lam_sum)
            scale = 2.0 * sens / eps_step
        scales[t] = scale
        if mode == "corrected":
            law = ftpl_exp_mech_probabilities(pred, data, cum, sens, eps_step)
            samples[t] = rng.choice(pred.shape[0], size=m, p=law)
        else:
            for s in range(m):
                samples[t, s] = ftpl_oracle(pred, data, cum, scale, rng=rng)
        v = float(phi[samples[t]].mean())
        if mode == "corrected":
            lam = auditor_exp_mech(v, C, slack, eps_step, n, rng=rng)
        else:
            lam = auditor_best_response(v, C, slack)
        lambdas[t] = lam
        lam_sum += lam
    return FairNRRun(samples=samples, lambdas=lambdas, scales=scales, mode=mode,
                     info={"n_hypotheses": float(pred.shape[0])})


# --------------------------------------------------------------------------- benchmarks: LP optimum


def lp_opt(pred: np.ndarray, data: TypeData, gamma: float = 0.0) -> float:
    """min over distributions p on H of err(p) s.t. |Φ₊(p)| ≤ γ (the fair ERM LP, spec §5.2)."""
    err, phi = errors(pred, data), fp_violations(pred, data)
    k = len(err)
    res = optimize.linprog(err, A_ub=np.vstack([phi, -phi]), b_ub=[gamma, gamma],
                           A_eq=np.ones((1, k)), b_eq=[1.0], bounds=[(0, None)] * k, method="highs")
    if not res.success:
        raise InvalidParameterError(f"fair ERM LP infeasible at γ = {gamma}: {res.message}")
    return float(res.fun)


def game_value(pred: np.ndarray, data: TypeData, C: float) -> tuple[float, np.ndarray]:
    """Value and a minimiser of the Lagrangian game: min_p max_{|λ|≤C} err(p) + λΦ₊(p) = min_p err(p) + C|Φ₊(p)|.

    Returns (value, weights over H). Spec: §5.2 (the game the dynamics approximate).
    """
    err, phi = errors(pred, data), fp_violations(pred, data)
    k = len(err)
    # Variables (p, z): minimise err·p + C z with z ≥ ±phi·p.
    c = np.concatenate([err, [C]])
    a_ub = np.vstack([np.concatenate([phi, [-1.0]]), np.concatenate([-phi, [-1.0]])])
    res = optimize.linprog(c, A_ub=a_ub, b_ub=[0.0, 0.0], A_eq=np.concatenate([np.ones(k), [0.0]])[None, :],
                           b_eq=[1.0], bounds=[(0, None)] * (k + 1), method="highs")
    weights = np.clip(res.x[:k], 0.0, None)
    return float(res.fun), weights / weights.sum()
