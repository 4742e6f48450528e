"""The audited mechanisms: worst-case neighbours, the attack, and the three numbers (issue 21, item 3).

Every audit returns an :class:`AuditResult` with the **claimed** ε (the project's own accounting at
the audit's setting, labelled accounted / nominal / public-statistics caveat), the **achievable** ε
(the implemented mechanism's exact ε on the audited neighbours, and how it was computed) and the
**audited** ε (a 1 − α lower bound of an attack, or exact). Each audited instance is calibrated by
the project's own accountant, so that achievable ≈ claimed and the audit can fail.

``broken=True`` runs the *broken-mechanism control*: the same attack on the same mechanism with 2×
too little noise (statistical audits; for DP-FERMI ``strict`` the old amplified accounting of
defect 1) or a deliberately wrong sensitivity / budget (exact audits), while the claim stays the
correct one: the DP-SGD and DP-FERMI audits configure their instance through the learner unit
(``configure``) and run the control as a named deviation of that ``Configured``
(``with_noise_multiplier``, ``dp_fermi_unit.amplified_accounting``), whose claim is the calibrated one.
The control must be flagged (audited > claimed); a control that is not flagged shows
an audit that cannot fail.

Mechanisms and their specs: Algorithm 2's Laplace step (seed-003 §2.4), DP-SGD (seed-003 §2.7),
DP-FERMI ``strict`` / ``strict-all`` (seed-004 §4.4), the LDP matrices (seed-003 §5.1–§5.5),
Private-Fair-Greedy's tree mechanism and rank noise (seed-001 §3.2, §3.3), Algorithm 1 of Cummings
et al. and one FairNR ``corrected`` FTPL step (seed-000-002 §3.7, §5.7), and the nominal baselines
Tran 2021a and PF-LD.

The DP-SGD and DP-FERMI audits train their runs through the compiled learner units
(:mod:`repro.learners.dp_sgd_unit`, :mod:`repro.learners.dp_fermi_compiled`), :data:`AUDIT_CHUNK` runs per
program, with the draws of the numpy reference engines in their order (``engine="numpy"`` runs those engines;
the tests compare the two).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from scipy import stats
from scipy.special import expit

from repro.bandits.policies import PrivateFairGreedy, pfg_guarantee
from repro.errors import InvalidParameterError
from repro.fairness.private_postprocessing import private_group_rates, step_guarantee
from repro.learners import dp_fermi as fermi
from repro.learners import dp_fermi_compiled, dp_fermi_unit, dp_sgd_unit
from repro.learners.baselines import pf_ld, train_pf_ld, train_tran_2021a, tran_2021a
from repro.learners.dp_fermi import STRICT_ALL_FEATURES, STRICT_SENSITIVE, prepare_dp_fermi
from repro.learners.dp_sgd import train_dp_sgd_logistic
from repro.learners.logistic import torch_linear_init
from repro.privacy import ldp_mechanisms as ldp
from repro.privacy import tree_mechanism
from repro.privacy.accounting import laplace_event
from repro.privacy.guarantee import Guarantee, Label, fails_when_violated, is_nominal
from repro.privacy.profile import PrivacyProfile, gaussian_profile, pld_profile, point_profile, strict_profile
from repro.privacy.tree_mechanism import TreeMechanism, gaussian_tree_sigma, tree_height
from repro.studies.audit.bounds import (
    exact_epsilon,
    gaussian_epsilon,
    gaussian_mu,
    threshold_audit,
)
from repro.studies.audit.tradeoff import TradeoffAudit, profile_audit
from repro.theory import expmech_learner as em
from repro.theory import fairnr as fnr

__all__ = ["AuditResult", "MECHANISMS", "GROUPS", "Mechanism", "audit", "fails_when_violated", "is_nominal"]

T_ = TypeVar("T_")

#: share of the runs that choose the threshold (a law fitted to them); the rest evaluate it
SELECT = 0.2
#: DP-FERMI strict audit: smallest |W₀[g, 1] − W₀[g, 0]| of a kept init (its sensitive part is then clipped)
W_GAP = 0.3
#: DP-FERMI strict audit: the canary's x, and the band of its initial prediction F₀ = σ(θ₀x + b₀) of a kept init
#: (F near 1 puts most of its W part's norm in one column; F(1 − F) large enough keeps its θ part clipped)
STRICT_X, STRICT_F_BAND = 10.0, (0.9, 0.96)
#: DP-FERMI and DP-SGD audits: runs trained by one compiled program of the learner unit (their draws are held until it runs:
#: ≈ 25 KB a run)
AUDIT_CHUNK = 1_000
#: the Algorithm 1 control runs at this multiple of ε
CONTROL_FACTOR_ALG1 = 10


def _peek(rng: np.random.Generator, draw: Callable[[np.random.Generator], T_]) -> T_:
    """What ``draw(rng)`` gives, without advancing ``rng`` (the same draws as from a deep copy of it, at a
    fraction of the cost per run): the next trainer run from ``rng`` draws it again."""
    state = rng.bit_generator.state
    out = draw(rng)
    rng.bit_generator.state = state
    return out


def _peek_init(d: int, rng: np.random.Generator) -> np.ndarray:
    """The init weights w₀ that a trainer drawing ``torch_linear_init(d)`` from ``rng`` next will draw."""
    return _peek(rng, lambda r: torch_linear_init(d, rng=r))[0]


@dataclass(frozen=True)
class AuditResult:
    """One audited instance: the claim (the mechanism's declared :class:`Guarantee` at the audited (ε, δ),
    whose label it carries), achievable ε (and how), audited ε, verdict."""

    mechanism: str
    claim: Guarantee
    achievable_epsilon: float
    achievable_how: str
    audited_epsilon: float
    confidence: float
    runs_per_side: int
    method: str = "clopper-pearson"
    broken: bool = False
    note: str = ""
    #: the claimed privacy profile δ(ε) (issue 38): the accountant's, or the claim's (ε, δ) point alone
    profile: PrivacyProfile | None = None
    #: statistical audits: the empirical trade-off and its verdict over ``profile``
    tradeoff: TradeoffAudit | None = None

    @property
    def claimed_epsilon(self) -> float:
        """The claimed ε (the declared guarantee's)."""
        return self.claim.epsilon

    @property
    def delta(self) -> float:
        """The claimed δ."""
        return self.claim.delta

    @property
    def label(self) -> Label:
        """The declared guarantee's label."""
        return self.claim.label

    @property
    def exceeded(self) -> bool:
        """The claim is beaten: statistical audits with a claimed profile by the profile rule (an empirical
        point's upper corner below the claimed trade-off curve, :mod:`repro.studies.audit.tradeoff`);
        otherwise the audited lower bound (or exact ε) is above the claimed ε, which for an exact audit is the
        same rule (a law pair is (ε, δ)-DP iff its trade-off curve is above f_{ε,δ})."""
        if self.tradeoff is not None:
            return self.tradeoff.violated
        return self.audited_epsilon > self.claimed_epsilon * (1 + 1e-9) + 1e-12

    @property
    def best_delta(self) -> float:
        """The δ where the audit has the most power (the claimed δ for exact audits; NaN without a profile)."""
        if self.tradeoff is not None:
            return self.tradeoff.best_delta
        return self.delta if self.profile is not None else math.nan

    @property
    def claimed_at_best(self) -> float:
        """The claimed ε(δ) at :attr:`best_delta`."""
        if self.tradeoff is not None:
            return self.tradeoff.claimed_at_best
        return self.claimed_epsilon if self.profile is not None else math.nan

    @property
    def audited_at_best(self) -> float:
        """The audited lower bound (or exact ε) at :attr:`best_delta`."""
        if self.tradeoff is not None:
            return self.tradeoff.audited_at_best
        return self.audited_epsilon if self.profile is not None else math.nan

    @property
    def ratio_at_best(self) -> float:
        """audited / claimed ε at :attr:`best_delta`."""
        return self.audited_at_best / self.claimed_at_best if self.claimed_at_best > 0 else math.nan

    @property
    def ratio(self) -> float:
        """audited / claimed."""
        return self.audited_epsilon / self.claimed_epsilon

    @property
    def verdict(self) -> str:
        """Claimed instance: "violated" (accounted / public-statistics claim beaten), "nominal: exceeded"
        or "no violation found". Broken control: "control flagged" or "CONTROL NOT FLAGGED"."""
        if self.broken:
            return "control flagged" if self.exceeded else "CONTROL NOT FLAGGED"
        if not self.exceeded:
            return "no violation found"
        return "violated" if fails_when_violated(self.label) else "nominal: exceeded"


# ------------------------------------------------------------------------------------------ Algorithm 2


def audit_laplace_step(runs: int, rng: np.random.Generator, *, broken: bool = False, eps0: float = 1.0,
                       n0: int = 20, alpha: float = 0.05) -> AuditResult:
    """Algorithm 2's noisy rate (one group's step: claim ε₀ of Algorithm 2's declared guarantee) α̃ = clip(ᾱ + Lap(1/(n₀ε₀))) (thesis §2.4): D has h = 0 on half of group 0,
    D′ flips one of them to 1 (sensitivity 1/n₀). Threshold from Laplace fits to 20% of the runs;
    control: the noise scale halved (ε₀ passed as 2ε₀)."""
    a = np.r_[np.zeros(n0, dtype=int), np.ones(n0, dtype=int)]
    h = np.r_[np.zeros(n0 // 2), np.ones(n0 - n0 // 2), np.zeros(n0)].astype(int)
    h1 = h.copy()
    h1[0] = 1
    eff = 2 * eps0 if broken else eps0

    def draws(hh: np.ndarray) -> np.ndarray:
        return np.array([private_group_rates(hh, a, eff, 1.0, rng=rng).alpha_tilde for _ in range(runs)])

    out_d, out_d1 = draws(h), draws(h1)
    lb = threshold_audit(out_d, out_d1, 0.0, alpha, model="laplace", select=SELECT)
    profile = pld_profile(laplace_event(eps0), "PLD of the Laplace event (dp_accounting)")
    tr = profile_audit(out_d, out_d1, profile, eps0, alpha=alpha, select=SELECT, model="laplace")
    return AuditResult("laplace-step", step_guarantee(eps0), eff, "exact: Laplace shift 1/n₀ over scale 1/(n₀ε₀)", lb,
                       1 - alpha, runs, broken=broken, profile=profile, tradeoff=tr,
                       note=f"replace one h in group 0 (n0={n0}); threshold from a Laplace fit to 20% of the runs")


# ------------------------------------------------------------------------------------------ DP-SGD


def audit_dp_sgd(runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 1.0,
                 delta: float = 1e-3, n: int = 999, epochs: int = 2, clip: float = 0.01, x_canary: float = 5.0,
                 alpha: float = 0.05, engine: str = "compiled") -> AuditResult:
    """DP-SGD (``learners.dp_sgd``, Opacus semantics) under add/remove of a canary, q = 1 (B = n + 1).

    The n others have x = 0, y = 1 (no gradient in column 0); the canary has x = 5, y = 1, so its
    clipped gradient is C·x/√(x² + 1) along column 0 at every step (|F − 1|·√26 ≥ C = 0.01 for every
    init in [−1, 1]). With q = 1 DP-SGD is T Gaussian mechanisms, so the PLD accountant's ε is exact for
    add/remove; z is calibrated to ε = 1 at δ = 1e-3. The statistic is column 0's total update
    (w_T − w_0)/lr (the init is data-independent: the attacker subtracts it), exactly Gaussian; the
    threshold comes from Gaussian fits to 20% of the runs. The expected-batch divisor is n on D and n + 1 on D′
    (Opacus; treated as public, as the accountant does). Control: the trainer runs at z/2.
    """
    B, lr = n + 1, 1.0
    c = dp_sgd_unit.configure(n=n, epsilon=epsilon, delta=delta, clip_norm=clip, lr=lr, batch_size=B, epochs=epochs)
    c1 = dp_sgd_unit.configure(n=n + 1, epsilon=epsilon, delta=delta, clip_norm=clip, lr=lr, batch_size=B,
                               epochs=epochs)
    q, T, z = c.sampling_probability, c.steps, c.noise_multiplier
    if (q, T) != (1.0, epochs) or (c1.sampling_probability, c1.steps) != (q, T):
        raise InvalidParameterError(f"the DP-SGD audit needs q = 1 on n and n + 1 records; got {(q, T)}, "
                                    f"{(c1.sampling_probability, c1.steps)}")
    run = c.with_noise_multiplier(z / 2, "half the calibrated noise") if broken else c
    z_run = run.noise_multiplier
    X0, y0 = np.zeros((n, 1)), np.ones(n)
    X1, y1 = np.vstack([X0, [[x_canary]]]), np.r_[y0, 1.0]

    cfg = run.config

    def draws(X: np.ndarray, y: np.ndarray) -> np.ndarray:
        out = np.empty(runs)
        if engine == "numpy":   # the reference engine (the tests compare the two to 1e-9)
            for r in range(runs):
                w0 = _peek_init(1, rng)
                res = train_dp_sgd_logistic(X, y, noise_multiplier=z_run, clip_norm=clip, lr=lr, batch_size=B,
                                            epochs=epochs, rng=rng)
                out[r] = (res.model.w[0] - w0[0]) / lr
            return out
        for start in range(0, runs, AUDIT_CHUNK):     # the learner unit: one program per chunk of runs
            chunk = [dp_sgd_unit.draw_trial(X, y, cfg, rng) for _ in range(min(AUDIT_CHUNK, runs - start))]
            for tr in chunk[1:]:
                tr.data = chunk[0].data
            for r, (tr, res) in enumerate(zip(chunk, dp_sgd_unit.fit_drawn(chunk), strict=True), start=start):
                out[r] = (res.model.w[0] - tr.arrays["w"][0]) / lr
        return out

    out_d, out_d1 = draws(X0, y0), draws(X1, y1)
    lb = threshold_audit(out_d, out_d1, delta, alpha, model="gaussian", select=SELECT)
    profile = pld_profile(c.event, "PLD accountant that calibrated z (dp_accounting)")
    tr = profile_audit(out_d, out_d1, profile, epsilon, alpha=alpha, select=SELECT, model="gaussian")
    return AuditResult("dp-sgd", c.guarantee.with_epsilon(epsilon, delta), run.epsilon(delta),
                       "PLD accountant at q = 1 (T Gaussian mechanisms: exact for add/remove)", lb, 1 - alpha,
                       runs, broken=broken, profile=profile, tradeoff=tr,
                       note=f"add/remove canary; z={z:.3f} (run at {z_run:.3f}), q=1, T={T}, C={clip}, n={n}; "
                            f"column-0 view carries {x_canary / math.sqrt(x_canary**2 + 1):.3f} of the shift")


# ------------------------------------------------------------------------------------------ DP-FERMI


def _fermi_canary_data(n: int, d: int, x_canary: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n records, d columns: record 0 is the canary (x = ``x_canary`` in column 0, y = 0), records 1 and 2
    (groups 0 and 1, columns 1 and 2) keep both groups non-empty; the rest (group 2) have x = 0."""
    X = np.zeros((n, d))
    X[0, 0], X[1, 1], X[2, 2] = x_canary, x_canary, x_canary
    s = np.full(n, 2)
    s[:3] = [0, 0, 1]
    return X, np.zeros(n), s


def _fermi_iterates(X: np.ndarray, y: np.ndarray, s: np.ndarray, cfg: fermi.DPFermiConfig, runs: int,
                    rng: np.random.Generator, accept: Callable[[np.random.Generator], bool], *,
                    engine: str = "compiled") -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every iterate of ``runs`` DP-FERMI trainings of ``cfg`` (one model) on (X, y, s), one after the other
    from ``rng``: per run θ (T + 1, d), b (T + 1,) and W (T + 1, a, c), the initial iterate first (what the
    attacker observes). Before each run ``accept(rng)`` draws a candidate init as the trainer would; an
    accepted one is drawn again by the trainer (the stream is rewound), a rejected one stays drawn.

    ``engine="compiled"``: the learner unit (:mod:`repro.learners.dp_fermi_compiled`), :data:`AUDIT_CHUNK`
    runs per program, draws on the host in the reference engine's order; ``"numpy"``: the reference engine
    with its ``on_step`` observer (the tests compare the two to 1e-9)."""
    if engine not in ("compiled", "numpy"):
        raise InvalidParameterError(f"engine must be 'compiled' or 'numpy'; got {engine!r}.")

    def next_accepted() -> None:
        while True:
            state = rng.bit_generator.state
            if accept(rng):
                rng.bit_generator.state = state
                return

    plan = dp_fermi_compiled.plan_trial(X, y, s, [cfg])            # inputs checked once for every run
    reference = prepare_dp_fermi(X, y, s, [cfg]) if engine == "numpy" else None
    pending: list[dp_fermi_compiled.DrawnTrial] = []
    for r in range(runs):
        next_accepted()
        if reference is not None:
            init = _peek(rng, plan.draw).arrays
            steps = [(init["Th"][:, 0, 0], init["b"][0, 0], init["W"][0, 0])]
            reference.train(rng=rng, on_step=lambda t, Th, b, Ws, steps=steps: steps.append(
                (Th[:, 0, 0].copy(), float(b[0, 0]), Ws[None][0].copy())))
            yield (np.stack([v[0] for v in steps]), np.array([v[1] for v in steps]),
                   np.stack([v[2] for v in steps]))
            continue
        pending.append(plan.draw(rng))                 # the runs of a chunk share the plan's data: one program
        if len(pending) == AUDIT_CHUNK or r == runs - 1:
            for it in dp_fermi_compiled.iterates(pending):
                yield it.theta[:, :, 0, 0], it.b[:, 0, 0], it.W[:, 0, 0]
            pending = []


def strict_init_filter(x_canary: float, f_band: tuple[float, float] | None) -> Callable[[np.random.Generator], bool]:
    """The strict audit's test of a candidate init, drawn from the generator as the trainer draws it
    (θ₀, b₀ as ``torch_linear_init(3)``, then W₀ ~ N(0, 1)^(3×2)): keep it when W₀'s rows 0 and 1 have gaps of
    opposite sign, both larger than :data:`W_GAP`, and the canary's F₀ = σ(θ₀[0]·x + b₀) lies in ``f_band``.

    About 33 candidates are drawn per kept one (a million per full-profile audit), so the test reads the
    uniforms as the doubles they are made of (numpy's ``uniform(lo, hi)`` is ``lo + (hi − lo)·random()``),
    with the same draws, values and decisions as ``torch_linear_init`` (tests/studies/audit/test_audit.py)."""
    low = -1.0 / np.sqrt(3)
    width = -low - low

    def accept(r: np.random.Generator) -> bool:
        u = r.random(4)                                  # θ₀ (3 doubles), then b₀
        w = r.standard_normal(6)                         # W₀ row by row
        d0, d1 = w[1] - w[0], w[3] - w[2]
        if not (d0 * d1 < 0 and min(abs(d0), abs(d1)) > W_GAP):
            return False
        if f_band is None:
            return True
        f0 = float(expit((low + width * u[0]) * x_canary + (low + width * u[3])))
        return bool(f_band[0] <= f0 <= f_band[1])

    return accept


def strict_oracle_bound(z: float, q: float, T: int, delta: float, runs: int, rng: np.random.Generator, *,
                        alpha: float = 0.05) -> float:
    """What the best attack can certify with ``runs`` per side against the exact strict accountant's worst
    case: the sampled count K ~ Bin(T, q) is revealed, each sampled step a Gaussian with μ = 1/z, so the
    privacy-loss statistic is N(∓Kμ²/2, Kμ²) on D / D′; the same threshold audit as the attack's."""
    mu = 1.0 / z

    def loss(sign: float) -> np.ndarray:
        k = rng.binomial(T, q, size=runs)
        return sign * k * mu**2 / 2 + np.sqrt(k) * mu * rng.standard_normal(runs)

    return threshold_audit(loss(-1.0), loss(1.0), delta, alpha, select=0.5)


def audit_dp_fermi_strict(runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 3.0,
                          n: int = 40, batch_size: int = 10, epochs: int = 1, lam: float = 0.01,
                          alpha: float = 0.05, model: str | None = None, x_canary: float = STRICT_X,
                          f_band: tuple[float, float] | None = STRICT_F_BAND, lr_theta: float = 0.01,
                          engine: str = "compiled") -> AuditResult:
    """DP-FERMI ``strict`` (STRICT_SENSITIVE, seed-004 §4.4) under replace-one of the canary's s (0 ↔ 1).

    Calibrated with the exact strict accountant (:mod:`repro.privacy.strict_accountant`) at
    (q, T) from the unit (:func:`repro.learners.dp_fermi_unit.configure`), δ = 1/n². The canary (record 0, x = ``x_canary`` = 10 in its
    own column, y = 0) has a large unclipped non-sensitive θ part c (its BCE gradient), so its θ column
    reveals at which steps it was sampled (the bit the exact accountant reveals too). W starts from N(0, 1)
    (``w_init="normal"``, data-independent, known to the attacker); only runs whose W₀ has rows 0 and 1
    of opposite sign (|W₀[g, 1] − W₀[g, 0]| > 0.3) and whose canary prediction F₀ = σ(θ₀x + b₀) lies in
    ``f_band`` = [0.9, 0.96] are kept (the others are skipped before training): the canary's clipped
    sensitive θ part then flips sign with s (the largest change the clipping allows), and F near 1 puts
    most of its W part's norm in one column; ``lr_theta`` = 0.01 keeps F near F₀. The attacker observes every iterate and sums, over the steps where the
    canary was sampled, the Gaussian log-likelihood ratio of D′ vs D of the canary's θ column and of W's
    rows 0 and 1 (W's row g is skipped at a step where record g + 1, the other member of group g, was
    sampled too, seen in its own θ column: its part depends on p̂_S, which the claim treats as public). Groups 0 and 1 hold two
    records on one side and one on the other, so the noise levels are the same on D and D′ (P̂_S public
    caveat).

    Design (issue 38 item 4): q = 1/4, T = 4 (n = 40, B = 10, one epoch) and ε = 3 at δ = 1/n², so that the
    profile audit has power at its best δ (at q = 1/20, T = 20, ε = 1 the claimed ε lives in rare
    multi-sample events) while q < 1 keeps the old amplified accounting apart from the exact one (here
    z = 0.94 instead of the exact 1.48, whose true ε at δ is 5.48).

    Control (defect-1 regression, issue 14): z calibrated by the old amplified accounting (PLD of the
    Poisson-subsampled Gaussian at q), which the unclipped part breaks.
    """
    delta = 1.0 / n**2
    cfg0 = STRICT_SENSITIVE.with_(lam=lam, batch_size=batch_size, epochs=epochs, w_init="normal",
                                  lr_theta=lr_theta, lr_w=1e-3)
    claimed = dp_fermi_unit.configure(cfg0, n=n, epsilon=epsilon, delta=delta)
    run = dp_fermi_unit.amplified_accounting(claimed) if broken else claimed
    q, T, z_exact, z, cfg = claimed.sampling_probability, claimed.steps, claimed.noise_multiplier, \
        run.noise_multiplier, run.config
    X, y, s0 = _fermi_canary_data(n, 3, x_canary)
    s1 = s0.copy()
    s1[0] = 1
    denom = max(int(n * q), 1)
    C = cfg.clip_norm
    isp_c = math.sqrt(n / 2)
    delta_w = 2 * math.sqrt(n / 1 + n / 2)
    sd_th, sd_w = lam * math.sqrt(2) * z * 2 * C, math.sqrt(2) * z * delta_w

    xt_norm = float(np.linalg.norm(np.array([X[0, 0], 1.0])))     # the canary's ‖x̃‖ (the same at every step)

    def canary_theta_parts(th: np.ndarray, bb: float, W: np.ndarray) -> tuple[float, float, float]:
        """(c, clipped sensitive part under s = 0, under s = 1) in column 0 of the canary's gradient."""
        F = float(expit(th[0] * X[0, 0] + bb))
        dF = F * (1 - F)
        col_sq = np.sum(W * W, axis=0)
        c = (F - y[0] + lam * dF * (-col_sq[1] + col_sq[0])) * X[0, 0]
        out = []
        for g in (0, 1):
            se = dF * 2 * isp_c * (W[g, 1] - W[g, 0])
            norm = abs(se) * xt_norm
            out.append(lam * se * min(1.0, C / (norm + 1e-12)) * X[0, 0])
        return c, out[0], out[1]

    accept = strict_init_filter(x_canary, f_band)

    def llr(s: np.ndarray) -> np.ndarray:
        stat = np.empty(runs)
        for r, (th_it, b_it, W_it) in enumerate(_fermi_iterates(X, y, s, cfg, runs, rng, accept, engine=engine)):
            it = list(zip(th_it, b_it, W_it, strict=True))
            total = 0.0
            for (th_a, b_a, W_a), (th_b, _, W_b) in zip(it[:-1], it[1:], strict=True):
                g = -(th_b - th_a) * denom / cfg.lr_theta
                c, m0, m1 = canary_theta_parts(th_a, b_a, W_a)
                if abs(g[0] - c) > abs(g[0]) or abs(g[0] - c - m0) > 6 * sd_th + abs(m0 - m1):
                    continue                                         # canary not sampled at this step
                r0 = g[0] - c
                total += ((r0 - m0) ** 2 - (r0 - m1) ** 2) / (2 * sd_th**2)
                # W row g also gets record g+1's part (groups 0 and 1) when it was sampled: use the clean rows only
                clean = [abs(g[1]) <= 6 * sd_th, abs(g[2]) <= 6 * sd_th]
                if not any(clean):
                    continue
                gw = (W_b - W_a) * denom / cfg.lr_w
                Fc = float(expit(th_a[0] * X[0, 0] + b_a))
                f = np.array([1 - Fc, Fc])
                mu0 = np.zeros((2, 2))
                mu0[0] = 2 * isp_c * f
                mu1 = mu0[::-1]
                v = gw[:2][clean]
                total += (np.sum((v - mu0[clean]) ** 2) - np.sum((v - mu1[clean]) ** 2)) / (2 * sd_w**2)
            stat[r] = total
        return stat

    out_d, out_d1 = llr(s0), llr(s1)
    select = 0.5 if model is None else SELECT
    lb = threshold_audit(out_d, out_d1, delta, alpha, model=model, select=select)
    profile = strict_profile(z_exact, q, T)
    tr = profile_audit(out_d, out_d1, profile, epsilon, alpha=alpha, select=select, model=model)
    oracle = strict_oracle_bound(z, q, T, delta, runs, rng, alpha=alpha)
    how = "exact strict accountant (sampled-bit revealed; Binomial mixture of Gaussian compositions)"
    return AuditResult("dp-fermi-strict", claimed.guarantee, run.epsilon(delta), how,
                       lb, 1 - alpha, runs, broken=broken, profile=profile, tradeoff=tr,
                       note=f"replace-one s of a canary with an unclipped part; z={z:.3f}"
                            f"{' (old amplified accounting, defect 1)' if broken else ''}, exact-accountant "
                            f"z={z_exact:.3f}, q={q:.3g}, T={T}, eps={epsilon:g} at delta=1/n^2; an oracle attack that "
                            f"sees the exact privacy loss reaches {oracle:.3f} (one-point bound) at the same runs")


def audit_dp_fermi_strict_all(runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 1.0,
                              delta: float = 1e-3, n: int = 999, epochs: int = 2, lam: float = 0.01,
                              x_canary: float = 100.0, alpha: float = 0.05, engine: str = "compiled") -> AuditResult:
    """DP-FERMI ``strict-all`` (STRICT_ALL_FEATURES: per-record clip of the joint (θ, W) gradient to C, Poisson
    sampling; seed-004 §4.4) under add/remove of a canary, DP-SGD-style: q = 1 (B = n + 1), so the PLD
    accountant's ε is that of T Gaussian mechanisms, exact for add/remove; z is calibrated to (ε, δ).

    d = 1: the n others have x = 0 (no θ gradient), groups and labels alternate (both groups and labels
    present); the canary has x = 100, y = 0 (group 0). Only inits with θ₀ ≥ 0 are kept (the init is
    data-independent; the DP guarantee holds given any init), so the canary's prediction F ≥ σ(b₀) and its
    BCE gradient F·x ≥ 27 ≫ C: it is clipped to C at every step, with the share
    x/√(x² + 1 + ‖∇_W‖²/coef²) ≥ 0.99 of its norm in θ₀ (its W part is ≤ 2/√p̂_S). At q = 1 every step
    carries that same-sign shift, so the attacker observes every iterate (``on_step``) and sums the θ₀
    updates, each ×(n + 1)/lr (the likelihood-ratio statistic up to that share; exactly Gaussian). The
    expected-batch divisor is n on D and n + 1 on D′ (as the accountant, public). Control: z/2.
    """
    B = n + 1
    hyper = dict(lam=lam, batch_size=B, epochs=epochs, lr_theta=0.1, lr_w=0.01)
    claimed = dp_fermi_unit.configure(STRICT_ALL_FEATURES, n=n, epsilon=epsilon, delta=delta, **hyper)
    q, T, z = claimed.sampling_probability, claimed.steps, claimed.noise_multiplier
    on_more = dp_fermi_unit.configure(STRICT_ALL_FEATURES, n=n + 1, epsilon=epsilon, delta=delta, **hyper)
    if (q, T) != (1.0, epochs) or (q, T) != (on_more.sampling_probability, on_more.steps):
        raise InvalidParameterError(f"the strict-all audit needs q = 1 on n and n + 1 records; got {(q, T)}")
    run = claimed.with_noise_multiplier(z / 2, "half the calibrated noise") if broken else claimed
    z_run, cfg = run.noise_multiplier, run.config
    X0 = np.zeros((n, 1))
    s0 = np.arange(n) % 2
    y0 = (np.arange(n) // 2) % 2
    X1 = np.vstack([[[x_canary]], X0])
    s1, y1 = np.r_[0, s0], np.r_[0, y0]

    def accept(r: np.random.Generator) -> bool:
        """Keep inits with θ₀ ≥ 0 (data-independent): the canary's gradient is then clipped."""
        return bool(torch_linear_init(1, rng=r)[0][0] >= 0)

    def draws(X: np.ndarray, yy: np.ndarray, ss: np.ndarray) -> np.ndarray:
        out = np.empty(runs)
        for r, (th_it, _, _) in enumerate(_fermi_iterates(X, yy, ss, cfg, runs, rng, accept, engine=engine)):
            out[r] = -float(np.sum(np.diff(th_it[:, 0]))) * B / cfg.lr_theta
        return out

    out_d, out_d1 = draws(X0, y0, s0), draws(X1, y1, s1)
    lb = threshold_audit(out_d, out_d1, delta, alpha, model="gaussian", select=SELECT)
    profile = pld_profile(claimed.event, "PLD accountant that calibrated z (dp_accounting)")
    tr = profile_audit(out_d, out_d1, profile, epsilon, alpha=alpha, select=SELECT, model="gaussian")
    return AuditResult("dp-fermi-strict-all", claimed.guarantee, run.epsilon(delta),
                       "PLD accountant at q = 1 (T Gaussian mechanisms: exact for add/remove)", lb, 1 - alpha, runs,
                       broken=broken, profile=profile, tradeoff=tr,
                       note=f"add/remove canary, every iterate observed; z={z:.3f} (run at {z_run:.3f}), q=1, "
                            f"T={T}, C={cfg.clip_norm}, n={n}")


# ------------------------------------------------------------------------------------------ LDP matrices


def _ldp_exact(Q: np.ndarray) -> float:
    """max over outputs z and input pairs of ln(Q[a, z] / Q[a′, z]) (ε-LDP is a per-output ratio bound)."""
    Q = np.asarray(Q, dtype=float)
    with np.errstate(divide="ignore"):
        lq = np.log(Q)
    return float(np.max(lq.max(axis=0) - lq.min(axis=0)))


def sampler_check(samples: np.ndarray, row: np.ndarray, alpha: float) -> bool:
    """Every output frequency inside its two-sided Bonferroni Clopper–Pearson interval around the matrix row."""
    n, k = samples.size, row.size
    counts = np.bincount(samples, minlength=k)
    lo = stats.beta.ppf(alpha / (2 * k), counts, n - counts + 1)
    hi = stats.beta.ppf(1 - alpha / (2 * k), counts + 1, n - counts)
    lo, hi = np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)
    return bool(np.all((row >= lo - 1e-12) & (row <= hi + 1e-12)))


_LDP_P = np.array([0.5, 0.3, 0.15, 0.05])
_LDP_P1 = np.array([0.3, 0.5, 0.6, 0.2])


def _ldp_matrix(name: str, eps: float) -> np.ndarray:
    if name == "ldp-grr":
        return ldp.grr_matrix(4, eps)
    if name == "ldp-binary-thm14":
        return ldp.optimal_binary_matrix(eps, 1)
    if name == "ldp-subset-selection":
        return ldp.subset_selection_matrix(6, eps)[0]
    return ldp.optimal_nonbinary_matrix(_LDP_P, _LDP_P1, eps).matrix


def _ldp_guarantee(name: str, epsilon: float) -> Guarantee:
    """The matrix's declared guarantee; the §5.5.9 matrix is built from the (group, label) distribution."""
    stats_used = "the (group, label) distribution p, p′" if name == "ldp-optimal-5.5.9" else ""
    return ldp.guarantee(epsilon, statistics=stats_used)


def _audit_ldp(name: str, runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 1.0,
               alpha: float = 1e-6) -> AuditResult:
    """Exact ε of one LDP matrix (thesis Part II, seed-003 §5.1–§5.5) vs its claimed ε, and a sampling check
    (``runs`` draws per input value, Bonferroni level ``alpha``) that the sampler follows the matrix; a
    failed check counts as ε = ∞. Control: the matrix built with 2ε (a wrong budget) under the claim ε."""
    eps_built = 2 * epsilon if broken else epsilon
    Q = _ldp_matrix(name, eps_built)
    k = Q.shape[0]
    ok = True
    if name == "ldp-subset-selection":
        index = {sub: i for i, sub in enumerate(ldp.subset_selection_matrix(6, eps_built)[1])}
        for a in range(k):
            hot = ldp.subset_selection(np.full(runs, a), k, eps_built, rng=rng)
            ok &= sampler_check(np.array([index[tuple(np.flatnonzero(h))] for h in hot]), Q[a], alpha / k)
    else:
        for a in range(k):
            ok &= sampler_check(ldp.perturb(np.full(runs, a), Q, rng=rng), Q[a], alpha / k)
    exact = _ldp_exact(Q) if ok else math.inf
    return AuditResult(name, _ldp_guarantee(name, epsilon), exact, "exact: max log-ratio of the matrix", exact, 1.0, runs,
                       method="exact", broken=broken, profile=point_profile(epsilon, 0.0),
                       note="sampler follows the matrix" if ok else "SAMPLER DOES NOT FOLLOW THE MATRIX")


# ------------------------------------------------------------------------------------------ Private-Fair-Greedy


def _tree_statistic(neighbour: bool, runs: int, n_max: int, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """The tree audit's likelihood-ratio statistic over ``runs`` trees of ``n_max`` items (d = 1) at σ: item 1 is
    (1, 1)/√2 on D and (1, −1)/√2 on D′ (``neighbour``), the others zero; the attacker recovers every node on
    item 1's path from the released prefix sums and sums their off-diagonal entries, negated (mean −m/2 on D,
    m/2 on D′, variance m·σ²)."""
    m = tree_height(n_max)
    path = [i for i in range(1, n_max + 1) if i - (i & -i) < 1]
    if len(path) != m:
        raise InvalidParameterError(f"n_max = {n_max} must be a power of two (item 1 then enters all m nodes)")
    a = np.array([1.0, -1.0 if neighbour else 1.0]) / math.sqrt(2)
    zero = np.zeros((2, 2))
    out = np.empty(runs)
    for r in range(runs):
        tree = TreeMechanism(2, n_max, sigma, rng=rng)
        rel = [zero] + [tree.update(np.outer(a, a) if i == 1 else zero) for i in range(1, n_max + 1)]
        out[r] = -sum(rel[i][0, 1] - rel[i - (i & -i)][0, 1] for i in path)
    return out


def audit_tree_mechanism(runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 1.0,
                         delta: float = 1e-2, n_max: int = 8, alpha: float = 0.05) -> AuditResult:
    """Tree mechanism of Private-Fair-Greedy (seed-001 §3.2) at the *accountant's* σ: streams of ``n_max``
    items a = [x; y] (d = 1), all zero except item 1, (1, 1)/√2 on D and (1, −1)/√2 on D′ (‖a‖ = L̃ = 1;
    replace-one moves every node's off-diagonal entry by 1, noise N(0, σ²)). Item 1 enters all m nodes
    of its path, so the view is a Gaussian shift with μ = √m/σ; σ = √m/μ(ε, δ) makes it exactly (ε, δ)
    (``tree_dp_event``'s accounting, tight here). The attacker recovers every node from the released
    prefix sums and sums the off-diagonal entries of the nodes that contain item 1 (the likelihood-ratio
    statistic, exactly N(0, mσ²) vs N(m, mσ²); :func:`_tree_statistic`). Control: σ/2."""
    m = tree_height(n_max)
    sigma = math.sqrt(m) / gaussian_mu(epsilon, delta)
    sigma_run = sigma / 2 if broken else sigma
    sigma_paper = gaussian_tree_sigma(1.0, m, epsilon, delta)
    out_d, out_d1 = _tree_statistic(False, runs, n_max, sigma_run, rng), _tree_statistic(True, runs, n_max, sigma_run,
                                                                                         rng)
    lb = threshold_audit(out_d, out_d1, delta, alpha, model="gaussian", select=SELECT)
    profile = gaussian_profile(math.sqrt(m) / sigma, "closed form: Gaussian shift μ = √m/σ at the accountant's σ")
    tr = profile_audit(out_d, out_d1, profile, epsilon, alpha=alpha, select=SELECT, model="gaussian")
    return AuditResult("pfg-tree-mechanism", tree_mechanism.guarantee(epsilon, delta), gaussian_epsilon(math.sqrt(m) / sigma_run, delta),
                       "exact: Gaussian shift μ = √m/σ (Balle–Wang)", lb, 1 - alpha, runs, broken=broken,
                       profile=profile, tradeoff=tr,
                       note=f"sigma={sigma:.3g} (accountant; run at {sigma_run:.3g}); the paper's sigma "
                            f"{sigma_paper:.3g} gives eps {gaussian_epsilon(math.sqrt(m) / sigma_paper, delta):.3g}; "
                            f"m={m}")


def _rank_rounds(pol: PrivateFairGreedy) -> list[int]:
    """The rounds whose scores are rank releases (rounds 1–2 are warm-up)."""
    return [t for t in range(1, pol.T + 1) if not pol.is_warmup(t)]


def _rank_statistic(pol: PrivateFairGreedy, shift: float, runs: int, rng: np.random.Generator) -> np.ndarray:
    """The rank audit's likelihood-ratio statistic Σ_t N_t·(score_t − ECDF_t) through the policy's own ``scores``
    (one policy, ``runs`` arms, fresh normals per side): every release's ECDF is 1/2 on D and moved by ``shift``
    times its sensitivity 1/N_t on D′."""
    pol.rank_normals = rng.standard_normal((pol.T, runs))   # fresh, independent draws per side
    total = np.zeros(runs)
    for t in _rank_rounds(pol):
        lo, hi = pol.window(t)
        n_t = hi - lo
        ecdf = np.full(runs, 0.5) + shift / n_t
        total += n_t * (pol.scores(t, ecdf) - 0.5)
    return total


def audit_rank_noise(runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 1.0,
                     delta: float = 1e-2, horizon: int = 20, alpha: float = 0.05) -> AuditResult:
    """Rank noise of Private-Fair-Greedy (seed-001 §3.3), by the policy's own ``scores``: one policy with
    ``runs`` arms (each arm one run) releases ECDF + (c/N_t)·N(0, 1) at every non-warm-up round t; on D′
    the ECDF moves by its sensitivity 1/N_t at every round (the worst case the accounting assumes). The
    claim is (ε_rank, δ_rank) of ``budget_split``; c is set to the accountant's value (T Gaussian releases
    with noise multiplier c, exact: c = √T/μ(ε_rank, δ_rank)) instead of the zCDP conversion's. Statistic:
    Σ_t N_t·(score_t − ECDF_t) (likelihood ratio). Achievable: the T − 2 releases actually made (rounds
    1–2 are warm-up). Control: c/2."""
    pol = PrivateFairGreedy(runs, 1, horizon, epsilon=2 * epsilon, delta=2 * delta, alpha_eps=0.5, alpha_delta=0.5,
                            L_tilde=1.0, reg_rng=rng, rank_normals=np.zeros((horizon, runs)),
                            variant="paper", rng=rng)
    e_rank, d_rank = pol.split.epsilon_rank, pol.split.delta_rank
    c_paper = pol.rank_c
    c = math.sqrt(horizon) / gaussian_mu(e_rank, d_rank)
    pol.rank_c = c / 2 if broken else c
    out_d, out_d1 = _rank_statistic(pol, 0.0, runs, rng), _rank_statistic(pol, 1.0, runs, rng)
    k = len(_rank_rounds(pol))
    lb = threshold_audit(out_d, out_d1, d_rank, alpha, model="gaussian", select=SELECT)
    profile = gaussian_profile(math.sqrt(horizon) / c, f"closed form: {horizon} Gaussian releases at the accountant's c")
    tr = profile_audit(out_d, out_d1, profile, e_rank, alpha=alpha, select=SELECT, model="gaussian")
    return AuditResult("pfg-rank-noise", tree_mechanism.rank_guarantee(e_rank, d_rank), gaussian_epsilon(math.sqrt(k) / pol.rank_c, d_rank),
                       f"exact: {k} Gaussian releases, μ = √{k}/c", lb, 1 - alpha, runs, broken=broken,
                       profile=profile, tradeoff=tr,
                       note=f"policy's scores(); c={c:.3g} (accountant; run at {pol.rank_c:.3g}), zCDP c={c_paper:.3g}, "
                            f"T={horizon}")


def audit_pfg_policy(runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 2.0,
                     delta: float = 2e-2, n_max: int = 8, horizon: int = 20, alpha: float = 0.05) -> AuditResult:
    """Private-Fair-Greedy's two releases composed in one run (seed-001 §3.1–§3.4): one record moves both the tree's
    prefix sums (its item in the regression, :func:`_tree_statistic`) and every rank release after it (its context
    in each window's ECDF, :func:`_rank_statistic`, through one policy's own ``scores``). The policy's (ε, δ) is
    split by its own ``budget_split`` (``paper``, α_ε = α_δ = 1/2) and each part runs at the accountant's noise for
    its share (σ = √m/μ(ε_reg, δ_reg), c = √T/μ(ε_rank, δ_rank)), where an attack has power. The statistic is the
    composition's likelihood ratio μ₁Z₁ + μ₂Z₂ of the two standardised statistics (at the claimed σ and c). Claim:
    the policy's :func:`~repro.bandits.policies.pfg_guarantee` (basic composition of the parts); its profile: the
    exact composition of the two Gaussian releases, μ = √(μ₁² + μ₂²) (Dong, Roth & Su 2022). The policy's actions
    are a post-processing of its rank releases and the public contexts, so what bounds these releases bounds the
    actions. Control: σ and c halved."""
    pol = PrivateFairGreedy(runs, 1, horizon, epsilon=epsilon, delta=delta, alpha_eps=0.5, alpha_delta=0.5,
                            L_tilde=1.0, reg_rng=rng, rank_normals=np.zeros((horizon, runs)), variant="paper", rng=rng)
    split, m, k = pol.split, tree_height(n_max), len(_rank_rounds(pol))
    sigma = math.sqrt(m) / gaussian_mu(split.epsilon_reg, split.delta_reg)
    c = math.sqrt(horizon) / gaussian_mu(split.epsilon_rank, split.delta_rank)
    sigma_run, pol.rank_c = (sigma / 2, c / 2) if broken else (sigma, c)
    mu_tree, mu_rank = math.sqrt(m) / sigma, math.sqrt(k) / c

    def side(neighbour: bool) -> np.ndarray:
        z_tree = (_tree_statistic(neighbour, runs, n_max, sigma_run, rng) + m / 2) / (math.sqrt(m) * sigma)
        z_rank = _rank_statistic(pol, float(neighbour), runs, rng) / (math.sqrt(k) * c)
        return mu_tree * z_tree + mu_rank * z_rank

    out_d, out_d1 = side(False), side(True)
    claim = pfg_guarantee(epsilon, delta, 0.5, 0.5, "paper")
    profile = gaussian_profile(math.hypot(mu_tree, math.sqrt(horizon) / c),
                               "exact composition of the tree's and the T rank releases at the accountant's σ and c")
    lb = threshold_audit(out_d, out_d1, claim.delta, alpha, model="gaussian", select=SELECT)
    tr = profile_audit(out_d, out_d1, profile, claim.epsilon, alpha=alpha, select=SELECT, model="gaussian")
    achievable = gaussian_epsilon(math.hypot(math.sqrt(m) / sigma_run, math.sqrt(k) / pol.rank_c), claim.delta)
    return AuditResult("pfg-policy", claim, achievable, f"exact: the tree's m = {m} nodes and {k} rank releases "
                       "composed, μ = √(m/σ² + k/c²)", lb, 1 - alpha, runs, broken=broken, profile=profile, tradeoff=tr,
                       note=f"one record in the regression and every window; (eps_reg, eps_rank) = "
                            f"({split.epsilon_reg:g}, {split.epsilon_rank:g}); sigma={sigma:.3g}, c={c:.3g} "
                            f"(accountant; run at {sigma_run:.3g}, {pol.rank_c:.3g}); T={horizon}")


# ------------------------------------------------------------------------------------------ exponential mechanisms


#: Algorithm 1's constructed dataset: 64 positive records, 16 of each (x, a) type (K = 2), so that
#: min_a |Z₁ₐ| = 32 is as large as n allows (the private bound Δ is then closest to the true sensitivity)
ALG1_CONSTRUCTED = np.array([[[0, 16], [0, 16]], [[0, 16], [0, 16]]])


def _alg1_worst(counts: np.ndarray, hyp: np.ndarray, eps_run: float,
                delta: float) -> tuple[float, float, float]:
    """Over every replace-one neighbour: (exact ε at δ, max_h |Δu_h|, max spread max_h,h′ |Δu_h − Δu_h′|)."""
    base = em.alg1_output_distribution(counts, hyp, eps_run)
    u = em.sample_scores(counts, hyp)["u"]
    worst, sens, spread = 0.0, 0.0, 0.0
    for _, _, nb in em.replace_one_neighbours(counts):
        worst = max(worst, exact_epsilon(base.log_probs, em.alg1_output_distribution(nb, hyp, eps_run).log_probs,
                                         delta))
        du = u - em.sample_scores(nb, hyp)["u"]
        sens, spread = max(sens, float(np.max(np.abs(du)))), max(spread, float(np.ptp(du)))
    return worst, sens, spread


def audit_expmech(runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 1.0, n: int = 64,
                  k: int = 2) -> AuditResult:
    """Algorithm 1 of Cummings et al. (seed-000-002 §3.7), exactly: output laws on a dataset and on every
    replace-one neighbour (:mod:`repro.theory.expmech_learner`); audited = achievable = the exact ε at the
    claimed δ = e^{−√n} (claim: 2ε, Theorem 2), the larger over a sampled dataset and the constructed one
    (:data:`ALG1_CONSTRUCTED`). Sensitivity check: the exponential mechanism at Δ is at most
    ε·spread/(2Δ)-DP (spread = max_h,h′ |Δu_h − Δu_h′| over the neighbours), and Δ = 2/(M − 1) + 1/n ≥
    2/(c − 1) + 1/n whenever M ≤ c = min_a |Z₁ₐ| (M ≈ c − √n/ε; the note gives max_h |Δu_h| and the spread over 2/(c − 1) + 1/n); the Laplace release of M is never output,
    so the realised ε stays well below 2ε (the theorem's bound is loose at this n). Control: the mechanism
    run at 10ε (its Laplace scale and exp-mech sensitivity 10× too small) under the claim 2ε; the realised ε
    is about 0.1–0.16 × 2ε here, so a 2× error stays below it. ``runs`` is unused."""
    hyp, _ = em.threshold_class(k)
    sampled = em.sample_counts(em.logistic_population(k), n, rng=rng)
    claim = em.guarantee(epsilon, n)
    eps_run = CONTROL_FACTOR_ALG1 * epsilon if broken else epsilon
    parts = []
    for name, counts in (("sampled", sampled), ("constructed", ALG1_CONSTRUCTED)):
        worst, sens, spread = _alg1_worst(counts, hyp, eps_run, claim.delta)
        c = int(counts[:, :, 1].sum(axis=0).min())
        bound = 2 / (c - 1) + 1 / n
        parts.append((worst, name, sens / bound, spread / bound))
    worst = max(p[0] for p in parts)
    checks = "; ".join(f"{name}: ε {w:.3f}, max |Δu| / (2/(c−1) + 1/n) = {a:.3f}, spread / it = {b:.3f}"
                       for w, name, a, b in parts)
    return AuditResult("cummings-alg1-expmech", claim, worst, "exact: output laws by quadrature", worst,
                       1.0, 0, method="exact", broken=broken, profile=point_profile(claim.epsilon, claim.delta),
                       note=f"all replace-one neighbours of a sampled and a constructed dataset, n={n}, K={k} "
                            f"({checks})")


def _type_data(counts: np.ndarray, hyp: np.ndarray) -> tuple[fnr.TypeData, np.ndarray]:
    types = list(np.ndindex(counts.shape))
    c = np.array([counts[t] for t in types])
    pred = np.array([[hyp[h, x, a] for x, a, _ in types] for h in range(hyp.shape[0])])
    return fnr.TypeData(c, np.array([t[2] for t in types]), np.array([t[1] for t in types])), pred


def audit_fairnr_step(runs: int, rng: np.random.Generator, *, broken: bool = False, eps_step: float = 0.5,
                      n: int = 12, k: int = 2, C: float = 2.0) -> AuditResult:
    """One FTPL step of Private-FairNR ``corrected`` (seed-000-002 §5.7), exactly: the output law
    (:func:`repro.theory.fairnr.ftpl_exp_mech_probabilities`) on a dataset and on each replace-one
    neighbour (both groups keep a negative record), at rounds t = 2, 3, 5 and public dual sums
    Σλ ∈ {−C(t−1), 0, C(t−1)}; audited = achievable = the max log-ratio, claim ε₀. The note gives the
    exact sensitivity check: the largest score change over the neighbours against the Δ used.
    Control: Δ/4 (a wrong sensitivity; the realised ε is about 0.36 ε₀, so Δ/2 stays below the claim).
    ``runs`` is unused."""
    hyp, _ = em.threshold_class(k)
    counts = em.sample_counts(em.logistic_population(k), n, rng=rng)
    counts[0, :, 0] += 2
    nn = int(counts.sum())
    worst, worst_sens, worst_spread = 0.0, 0.0, 0.0
    nbs = [nb for _, _, nb in em.replace_one_neighbours(counts)]
    data, pred = _type_data(counts, hyp)
    for t in (2, 3, 5):
        for lam_sum in (-C * (t - 1), 0.0, C * (t - 1)):
            sens = fnr.cumulative_loss_sensitivity(nn, t - 1, lam_sum)
            sens_run = sens / 4 if broken else sens
            cum = fnr.cumulative_loss(data, t - 1, lam_sum)
            score = pred @ (np.asarray(data.counts, dtype=float) * cum)
            law = fnr.ftpl_exp_mech_probabilities(pred, data, cum, sens_run, eps_step)
            for nb in nbs:
                try:
                    d1, _ = _type_data(nb, hyp)
                except InvalidParameterError:
                    continue
                cum1 = fnr.cumulative_loss(d1, t - 1, lam_sum)
                score1 = pred @ (np.asarray(d1.counts, dtype=float) * cum1)
                worst_sens = max(worst_sens, float(np.max(np.abs(score - score1))) / sens)
                worst_spread = max(worst_spread, float(np.ptp(score - score1)) / sens)
                law1 = fnr.ftpl_exp_mech_probabilities(pred, d1, cum1, sens_run, eps_step)
                worst = max(worst, exact_epsilon(np.log(law), np.log(law1), 0.0))
    return AuditResult("fairnr-corrected-ftpl-step", fnr.guarantee("corrected", eps_step, 0.0), worst, "exact: output laws", worst, 1.0, 0,
                       method="exact", broken=broken, profile=point_profile(eps_step, 0.0),
                       note=f"n={nn}, |H|={pred.shape[0]}; sensitivity check: max score change / Δ = "
                            f"{worst_sens:.3f} (≤ 1 required); spread check: max over neighbours of "
                            f"max_h,h′ |Δs_h − Δs_h′| / Δ = {worst_spread:.3f}, so the exact ceiling of this "
                            f"law is ε₀·{worst_spread:.3f}/2 = {eps_step * worst_spread / 2:.3f}")


# ------------------------------------------------------------------------------------------ baselines (nominal)


def _baseline_canary(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Replace-one of the canary's group: n − 1 records in group 0 with x = (1, 0), y = 1; the canary
    (x = (0, 0), y = 1) is in group 0 on D and alone in group 1 on D′."""
    X = np.zeros((n, 2))
    X[1:, 0] = 1.0
    y = np.ones(n)
    s0 = np.zeros(n, dtype=int)
    s1 = s0.copy()
    s1[0] = 1
    return X, y, s0, s1


def _baseline_audit(name: str, declared: Callable[[float, float], Guarantee], train: Callable[..., float], runs: int,
                    rng: np.random.Generator, epsilon: float, n: int, alpha: float) -> AuditResult:
    delta = 1.0 / n**2
    X, y, s0, s1 = _baseline_canary(n)

    def draws(s: np.ndarray) -> np.ndarray:
        out = np.empty(runs)
        for r in range(runs):
            w0 = _peek_init(2, rng)
            w = train(X, y, s, rng)
            out[r] = -(w - w0[0]) * np.sign(w0[0])
        return out

    d2 = (1 + math.exp(epsilon)) * delta
    lb = threshold_audit(draws(s0), draws(s1), d2, alpha)
    claim = declared(epsilon, delta).with_epsilon(2 * epsilon, d2)      # group privacy: replace = add + remove
    return AuditResult(name, claim, math.nan, "unknown: the nominal claim has no accountant", lb, 1 - alpha, runs,
                       note="replace-one of the canary's group; claim 2ε from add/remove ε (group privacy)")


def audit_tran_2021a(runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 1.0,
                     n: int = 20, gamma: float = 5.0, alpha: float = 0.05) -> AuditResult:
    """Tran 2021a (``learners.baselines``, γ = 5, the largest of the figures' grid), 2 epochs (nominal)."""
    def train(X, y, s, r):
        res = train_tran_2021a(X, y, s, gammas=[gamma], epsilon=epsilon, delta=1.0 / n**2, epochs=2,
                               batch_size=10, rng=r)
        return res.models[0].w[0]

    return _baseline_audit("tran-2021a", tran_2021a.guarantee, train, runs, rng, epsilon, n, alpha)


def audit_pf_ld(runs: int, rng: np.random.Generator, *, broken: bool = False, epsilon: float = 1.0, n: int = 20,
                alpha: float = 0.05) -> AuditResult:
    """PF-LD (``learners.baselines``), 3 epochs (the dual multipliers act from epoch 2) (nominal)."""
    def train(X, y, s, r):
        return train_pf_ld(X, y, s, epsilon=epsilon, delta=1.0 / n**2, epochs=3, batch_size=10, rng=r).model.w[0]

    return _baseline_audit("pf-ld", pf_ld.guarantee, train, runs, rng, epsilon, n, alpha)


# ------------------------------------------------------------------------------------------ registry


@dataclass(frozen=True)
class Mechanism:
    """An audited mechanism: its audit function, runs per side by budget, and whether it has a control."""

    run: Callable[..., AuditResult]
    runs: dict[str, int]
    control: str = ""
    #: runs per side of the broken control by budget, where it needs fewer than the claimed instance
    control_runs: dict[str, int] | None = None


def _ldp(name: str) -> Callable[..., AuditResult]:
    def run(runs: int, rng: np.random.Generator, *, broken: bool = False) -> AuditResult:
        return _audit_ldp(name, runs, rng, broken=broken)
    return run


_LDP_CONTROL = "matrix built with 2ε under the claim ε"
#: name → mechanism (the experiment file's ``mechanism`` axis lists the same names)
MECHANISMS: dict[str, Mechanism] = {
    "laplace-step": Mechanism(audit_laplace_step, {"smoke": 5_000, "full": 100_000}, "Laplace noise halved"),
    "dp-sgd": Mechanism(audit_dp_sgd, {"smoke": 5_000, "full": 30_000}, "noise multiplier halved"),
    "dp-fermi-strict": Mechanism(audit_dp_fermi_strict, {"smoke": 600, "full": 40_000},
                                 "old amplified accounting (defect 1)", {"smoke": 600, "full": 15_000}),
    "dp-fermi-strict-all": Mechanism(audit_dp_fermi_strict_all, {"smoke": 1_000, "full": 30_000},
                                     "noise multiplier halved"),
    "ldp-grr": Mechanism(_ldp("ldp-grr"), {"smoke": 2_000, "full": 50_000}, _LDP_CONTROL),
    "ldp-binary-thm14": Mechanism(_ldp("ldp-binary-thm14"), {"smoke": 2_000, "full": 50_000}, _LDP_CONTROL),
    "ldp-subset-selection": Mechanism(_ldp("ldp-subset-selection"), {"smoke": 2_000, "full": 50_000}, _LDP_CONTROL),
    "ldp-optimal-5.5.9": Mechanism(_ldp("ldp-optimal-5.5.9"), {"smoke": 2_000, "full": 50_000}, _LDP_CONTROL),
    "pfg-tree-mechanism": Mechanism(audit_tree_mechanism, {"smoke": 2_000, "full": 30_000}, "σ halved"),
    "pfg-rank-noise": Mechanism(audit_rank_noise, {"smoke": 20_000, "full": 200_000}, "c halved"),
    "pfg-policy": Mechanism(audit_pfg_policy, {"smoke": 2_000, "full": 30_000}, "σ and c halved"),
    "cummings-alg1-expmech": Mechanism(audit_expmech, {"smoke": 0, "full": 0}, "run at 10ε (noise and sensitivity 10× too small)"),
    "fairnr-corrected-ftpl-step": Mechanism(audit_fairnr_step, {"smoke": 0, "full": 0}, "sensitivity Δ/4"),
    "tran-2021a": Mechanism(audit_tran_2021a, {"smoke": 300, "full": 3_000}),
    "pf-ld": Mechanism(audit_pf_ld, {"smoke": 300, "full": 3_000}),
}
#: the groups `repro audit` accepts (it resolves a group ``G`` to the mechanisms named ``G-…``)
GROUPS: dict[str, tuple[str, ...]] = {
    "ldp": ("ldp-grr", "ldp-binary-thm14", "ldp-subset-selection", "ldp-optimal-5.5.9"),
    "dp-fermi": ("dp-fermi-strict", "dp-fermi-strict-all"),
    "pfg": ("pfg-tree-mechanism", "pfg-rank-noise", "pfg-policy"),
}


def audit(name: str, budget: str, rng: np.random.Generator, *, broken: bool = False) -> AuditResult:
    """Run the audit of ``name`` with the runs of ``budget`` ("smoke" or "full")."""
    if name not in MECHANISMS:
        raise InvalidParameterError(f"unknown mechanism {name!r}; choose from {', '.join(MECHANISMS)}")
    mech = MECHANISMS[name]
    if budget not in mech.runs:
        raise InvalidParameterError(f"budget must be 'smoke' or 'full'; got {budget!r}")
    runs = (mech.control_runs or mech.runs)[budget] if broken else mech.runs[budget]
    return mech.run(runs, rng, broken=broken)
