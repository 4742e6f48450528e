"""White-box audits of Poisson-subsampled Gaussian mechanisms at the configuration they ship with.

The audits of :mod:`repro.studies.audit.mechanisms` run DP-SGD and DP-FERMI ``strict-all`` at q = 1, where
amplification by subsampling, the step behind every shipped ε, plays no part. These audits run the shipped
n, batch size, epochs, clip, (ε, δ) and relation (add/remove one record), configured by the learner unit the
studies call (:func:`repro.learners.dp_sgd_unit.configure`, :func:`repro.learners.dp_fermi_unit.configure`),
and draw the batches and the noise through the same unit (``draw_trial`` / the compiled plan's ``draw``,
which draw through :mod:`repro.privacy.sampling`), in the trainers' order.

Design (gradient canary, Nasr et al. 2023, "Tight auditing of differentially private machine learning",
§4: white-box access to the noisy gradient sums, a canary whose clipped gradient is C in a known direction
that no other record moves). The attacker sees, at every step t, the released sum projected on the canary's
direction, r_t = b_t·C + σ·ξ_t (b_t: whether the canary was sampled; ξ_t standard normal) on D′, and σ·ξ_t on D
(the canary removed). Its statistic is the log-likelihood ratio of the claimed mechanism composed over the T
steps,

    S = Σ_t log(1 − q + q·exp(μ v_t − μ²/2)),   v_t = r_t/(zC),  μ = 1/z,                                (1)

the Neyman–Pearson test of the dominating pair of the Poisson-subsampled Gaussian (the pair the PLD accountant
composes), so a correct mechanism is audited close to its claimed trade-off curve. The runs: one drawn trial
of the learner at the shipped n gives the inclusion sequences of all its n records; each record's sequence is
one run of D′ (independent across records under the Poisson law, which ``tests/privacy/test_sampling.py``
checks). The noise of every run is drawn at the std **observed** in the learner's own draws of that trial
(T·(d + 1) normals), so a trainer whose noise is off is audited with its actual noise. The empirical trade-off
of S is checked against the accountant's whole profile (:func:`repro.studies.audit.tradeoff.profile_audit`).

Besides the audited bound each audit reports: the **oracle ceiling** (the same audit on S drawn from the exact
claimed law, at the same number of runs: what this design can certify against a mechanism exactly at its
claim; "uninformative" where it is below 0.5 of the claim), the **measured** ε (the accountant at the observed
inclusion rate and noise), and a Gaussian-DP μ lower bound of the empirical trade-off beside the claim's
central-limit μ = q·√(T(e^{1/z²} − 1)) (Bu, Dong, Long & Su 2020).

Control (a named deviation of the configured run): the learner drawn at twice the batch size and twice the
epochs (q → 2q, the same T) under the claim at q; its true ε at the shipped DP-SGD setting is ≈ 2× the claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners import dp_fermi_compiled, dp_fermi_unit, dp_sgd, dp_sgd_unit
from repro.learners.baselines import dpsgd_unit as core_unit
from repro.learners.baselines import jagielski_2019, pf_ld
from repro.learners.baselines._dpsgd import draw_step
from repro.learners.unit import Configured
from repro.privacy.accounting import dp_sgd_event
from repro.privacy.profile import pld_profile, strict_profile
from repro.studies.audit.bounds import gdp_mu_lower_bound
from repro.studies.audit.mechanisms import AuditResult, Mechanism
from repro.studies.audit.tradeoff import profile_audit

__all__ = ["Shipped", "SHIPPED_DP_SGD", "SHIPPED_STRICT_ALL", "SHIPPED_STRICT", "SHIPPED_TRAN", "SHIPPED_PF_LD",
           "SHIPPED_JAGIELSKI", "audit_strict_shipped", "Drawn", "ShippedAuditResult", "mixture_llr",
           "audit_shipped", "SHIPPED", "clt_mu"]

#: share of the runs that choose the thresholds (a Gaussian law fitted to them); the rest evaluate them
SELECT = 0.2
#: the oracle ceiling is simulated from this many runs per side on (the smoke profile skips it)
ORACLE_FROM = 5_000
#: columns of the learner's drawn trial whose noise is observed (its noise std is measured on T·(d + 1) normals)
NOISE_COLUMNS = 15


@dataclass(frozen=True)
class Shipped:
    """A shipped configuration: rows, batch size, epochs, clip and budget of the run it audits, and where."""

    n: int
    batch_size: int
    epochs: int
    clip_norm: float
    epsilon: float
    delta: float
    where: str
    #: Jagielski et al. (2019): rounds of the reductions game, each ``epochs`` epochs of the learner
    rounds: int = 1


#: thesis Table 3.1 (Algorithm 2's DP-SGD part): the authors' Adult file, n_fit = 30,162 (q = 1/30, T = 1,500),
#: ε′ − ε₀ − ε₁ = 3 − 0.05 − 0.05 at δ = 10⁻⁵, C = 1.5, B = 1,024, 50 epochs (experiments/thesis-table-3.1.toml)
SHIPPED_DP_SGD = Shipped(30_162, 1024, 50, 1.5, 2.9, 1e-5,
                         "thesis Table 3.1, Algorithm 2's DP-SGD (Adult, authors' file, n_fit = 30,162)")
#: DP-FERMI Fig. 2 (d), ``strict-all`` at its full profile: Adult n_train = 33,916 (spec seed-004 §5 worked
#: table), B = 1,024, 200 epochs (q = 1/34, T = 6,800), ε = 9 at δ = 1/n², C = 1.5. Panel (d) is the one this
#: design audits at both budgets: at ε = 1 (panel (b)) z = 13.7 and the claim is about 0.18-GDP, informative
#: with 30,000 runs per side but not with the smoke profile's 2,000 (docs/privacy-audit.md)
SHIPPED_STRICT_ALL = Shipped(33_916, 1024, 200, 1.5, 9.0, 1.0 / 33_916**2,
                             "DP-FERMI Fig. 2 (d), strict-all (Adult, n_train = 33,916, full profile)")
#: DP-FERMI Fig. 2 (d), ``strict`` (noise on the s-dependent parts, replace one record's sensitive attribute,
#: the exact strict accountant) at the same run, λ = 1 (the figure's largest), C_s = 1
SHIPPED_STRICT = Shipped(33_916, 1024, 200, 1.0, 9.0, 1.0 / 33_916**2,
                         "DP-FERMI Fig. 2 (d), strict, λ = 1 (Adult, n_train = 33,916, full profile)")
#: DP-FERMI Fig. 2 (d)'s baselines at its full profile: Adult n_train = 33,916, the baselines' core (C = 1, B = 1,024,
#: 50 epochs: q = 1024/33,916, T = 1,700) at ε = 9, δ = 1/n² (experiments/_base/dpfermi-tabular.toml)
SHIPPED_TRAN = Shipped(33_916, 1024, 50, 1.0, 9.0, 1.0 / 33_916**2,
                       "DP-FERMI Fig. 2 (d), Tran et al. (2021a) (Adult, n_train = 33,916, full profile)")
SHIPPED_PF_LD = Shipped(33_916, 1024, 50, 1.0, 9.0, 1.0 / 33_916**2,
                        "DP-FERMI Fig. 2 (d), PF-LD's primal steps (Adult, n_train = 33,916, full profile)")
#: DP-FERMI Fig. 4 (c): Credit Card's clean split, n_train = 22,500, 10 rounds × 5 learner epochs (q = 1024/22,500,
#: T = 1,100) at ε = 3 (the learner's share ε/2), δ = 1/n²
SHIPPED_JAGIELSKI = Shipped(22_500, 1024, 5, 1.0, 3.0, 1.0 / 22_500**2,
                            "DP-FERMI Fig. 4 (c), Jagielski et al. (2019)'s learner steps (Credit Card clean split, "
                            "n_train = 22,500, full profile)", rounds=10)
#: the strict audit's λ (the noise std of θ's sensitive part is λ√2·z·2C_s; any λ > 0 gives the same audit)
STRICT_LAMBDA = 1.0


@dataclass(frozen=True)
class Drawn:
    """One trial drawn by a learner unit: its batches (row indices per step) and its observed noise."""

    batches: list[np.ndarray]
    noise_std: float


@dataclass(frozen=True)
class ShippedAuditResult(AuditResult):
    """An :class:`AuditResult` with what a shipped-configuration audit measures besides."""

    q: float = math.nan
    steps: int = 0
    noise_multiplier: float = math.nan
    intended_noise_std: float = math.nan
    observed_noise_std: float = math.nan
    observed_q: float = math.nan
    #: the oracle's audited ε at its own best δ over the claimed ε there (the design's ceiling)
    ceiling_ratio: float = math.nan
    ceiling_at_best: float = math.nan
    gdp_mu_lower: float = math.nan
    gdp_mu_claimed: float = math.nan

    @property
    def uninformative(self) -> bool:
        """The design cannot certify half the claim even against a mechanism exactly at it."""
        return bool(self.ceiling_ratio < 0.5)


def clt_mu(z: float, q: float, steps: int) -> float:
    """Central-limit Gaussian-DP μ of T Poisson-subsampled Gaussian steps: q·√(T(e^{1/z²} − 1))
    (Bu, Dong, Long & Su 2020, Theorem 5; an approximation, for display)."""
    return q * math.sqrt(steps * math.expm1(1.0 / z**2))


def mixture_llr(v: np.ndarray, mu: float, q: float) -> np.ndarray:
    """Per-step log-likelihood ratio of (1 − q)N(0, 1) + qN(μ, 1) against N(0, 1) at ``v``: the term of (1)."""
    if q >= 1:
        return mu * v - mu * mu / 2
    return np.logaddexp(math.log1p(-q), math.log(q) + mu * v - mu * mu / 2)


def _inclusions(batch: np.ndarray, width: int) -> np.ndarray:
    """Whether each of the first ``width`` records (the runs' canaries) is in a drawn step's ``batch``."""
    hit = np.zeros(width, dtype=bool)
    hit[batch[batch < width]] = True
    return hit


def _statistic(side: str, runs: int, mu: float, q: float, steps: int, rng: np.random.Generator, *,
               noise_ratio: float = 1.0, draw: Callable[[], Drawn] | None = None,
               slots: int = 0) -> tuple[np.ndarray, float]:
    """S of (1) for ``runs`` runs, and the observed inclusion rate (NaN on D).

    ``side``: ``"D"`` (the canary removed: noise alone, std ``noise_ratio``·zC); ``"D'"`` (each of the
    ``slots`` records of a trial from ``draw()`` one run, at that trial's observed noise std ratio
    ``Drawn.noise_std``); ``"oracle"`` (D′ from the exact claimed law, inclusion Bernoulli(q), noise zC)."""
    out = np.empty(runs)
    included, start = 0, 0
    while start < runs:
        batches, ratio, width = None, noise_ratio, min(runs - start, 50_000)
        if side == "D'":
            drawn = draw()
            batches, ratio, width = drawn.batches, drawn.noise_std, min(runs - start, slots)
            if len(batches) != steps:
                raise InvalidParameterError(f"the learner drew {len(batches)} steps; its schedule says {steps}.")
        s = np.zeros(width)
        for t in range(steps):
            v = ratio * rng.standard_normal(width)
            if side != "D":
                hit = rng.random(width) < q if batches is None else _inclusions(batches[t], width)
                included += int(np.count_nonzero(hit))
                v = v + hit * mu
            s += mixture_llr(v, mu, q)
        out[start:start + width] = s
        start += width
    return out, (included / (runs * steps) if side != "D" else math.nan)


def _draw_dp_sgd(run: Configured, n: int, rng: np.random.Generator) -> Drawn:
    """One trial of the DP-SGD unit's ``run`` on n rows (every record a canary slot): its batches and noise std."""
    X = np.zeros((n, NOISE_COLUMNS))
    tr = dp_sgd_unit.draw_trial(X, np.zeros(n), run.config, rng)
    mask = tr.arrays["mask"].astype(bool)
    batches = [row[m] for row, m in zip(tr.arrays["idx"], mask, strict=True)]
    return Drawn(batches, float(np.std(tr.arrays["noise"])))


def _draw_strict_all(run: Configured, n: int, rng: np.random.Generator) -> Drawn:
    """One trial of DP-FERMI's compiled unit (``strict-all``) at ``run`` on n rows: its batches and its θ noise
    std."""
    X = np.zeros((n, NOISE_COLUMNS))
    y = (np.arange(n) % 2).astype(float)
    s = (np.arange(n) // 2) % 2
    plan = dp_fermi_compiled.plan_trial(X, y, s, [run.config])
    tr = plan.draw(rng)
    mask = tr.arrays["mask"].astype(bool)
    batches = [row[m] for row, m in zip(tr.arrays["idx"], mask, strict=True)]
    return Drawn(batches, float(plan.constants["th_std"][0] * np.std(tr.arrays["u"])))


def _draw_core(run: Configured, n: int, rng: np.random.Generator) -> Drawn:
    """One run of the baselines' DP-SGD core at ``run`` (its (q, T) as the unit configured them) on n rows (every
    record a canary slot), drawn step by step by the core's own :func:`~repro.learners.baselines._dpsgd.draw_step`:
    its batches and noise std."""
    sigma = dp_sgd.noise_std(run.config.noise_multiplier, run.config.clip_norm)
    batches, noise = [], []
    for _ in range(run.steps):
        batch, noise_w, noise_b = draw_step(n, run.sampling_probability, sigma, (NOISE_COLUMNS - 1, 1), rng)
        batches.append(batch)
        noise.append(np.concatenate([noise_w.ravel(), noise_b]))
    return Drawn(batches, float(np.std(noise)))


def _configure(name: str, ship: Shipped) -> Configured:
    """The shipped run's :class:`~repro.learners.unit.Configured`, by the unit's ``configure`` the studies call
    (the baselines: the core unit's, PF-LD's and Jagielski's calibration of their DP-SGD steps)."""
    sgd = dict(batch_size=ship.batch_size, clip_norm=ship.clip_norm)
    if name == "tran-2021a-shipped":
        return core_unit.configure(n=ship.n, epsilon=ship.epsilon, delta=ship.delta, epochs=ship.epochs, **sgd)
    if name == "pf-ld-shipped":
        return pf_ld.configure_primal(n=ship.n, epsilon=ship.epsilon, delta=ship.delta, epochs=ship.epochs, **sgd)
    if name == "jagielski-2019-shipped":
        return jagielski_2019.configure_learner(n=ship.n, epsilon=ship.epsilon, delta=ship.delta, rounds=ship.rounds,
                                                learner_epochs=ship.epochs, **sgd)
    if name == "dp-sgd-shipped":
        return dp_sgd_unit.configure(n=ship.n, epsilon=ship.epsilon, delta=ship.delta, clip_norm=ship.clip_norm,
                                     batch_size=ship.batch_size, epochs=ship.epochs)
    if name == "dp-fermi-strict-shipped":
        return dp_fermi_unit.configure("strict", n=ship.n, epsilon=ship.epsilon, delta=ship.delta,
                                       clip_norm=ship.clip_norm, batch_size=ship.batch_size, epochs=ship.epochs,
                                       lam=STRICT_LAMBDA)
    return dp_fermi_unit.configure("strict-all", n=ship.n, epsilon=ship.epsilon, delta=ship.delta,
                                   clip_norm=ship.clip_norm, batch_size=ship.batch_size, epochs=ship.epochs)


def _at_double_rate(config):
    """The control: the configured run drawn at twice the batch size for twice the epochs (q → 2q, same T)."""
    if isinstance(config, (dp_sgd_unit.DPSGDConfig, core_unit.PenalizedSGDConfig)):
        return replace(config, batch_size=2 * config.batch_size, epochs=2 * config.epochs)
    return config.with_(batch_size=2 * config.batch_size, epochs=2 * config.epochs)


def audit_shipped(name: str, runs: int, rng: np.random.Generator, *, broken: bool = False, ship: Shipped | None = None,
                  alpha: float = 0.05, oracle: bool = True) -> ShippedAuditResult:
    """The white-box audit (module docstring) of ``name`` (a key of :data:`_SHIPS`) at its shipped configuration
    ``ship`` (default: the name's, e.g. :data:`SHIPPED_DP_SGD`), with ``runs`` runs per side. ``broken``: the 2q
    control under the claim at q. For the baselines the audited claim is their DP-SGD steps' own ε at δ (Tran
    2021a: the whole claim; PF-LD: its primal part; Jagielski: the learner's ε/2 share)."""
    if name not in _SHIPS:
        raise InvalidParameterError(f"unknown shipped audit {name!r}; choose from {', '.join(_SHIPS)}")
    ship = ship or _SHIPS[name]
    c = _configure(name, ship)
    claim, q, steps, z = c.guarantee, c.sampling_probability, c.steps, c.noise_multiplier
    if not claim.epsilon < math.inf or z <= 0:
        raise InvalidParameterError(f"{name}: the shipped configuration must be private; got z = {z}.")
    run = (c.with_config(_at_double_rate(c.config), "drawn at 2B for 2x epochs (q -> 2q, same T), claim at q")
           if broken else c)
    draw = _DRAWS.get(name, _draw_core)
    if run.steps != steps:
        raise InvalidParameterError(f"{name}: the control must keep T = {steps}; got {run.steps}.")
    # the std the accountant assumes (z·C), written here on purpose rather than read from the engine's
    # noise function, so that a break of that function shows as observed ≠ intended
    sigma = z * ship.clip_norm
    mu = 1.0 / z
    observed: list[float] = []

    def drawn() -> Drawn:
        d = draw(run, ship.n, rng)
        observed.append(d.noise_std)
        return Drawn(d.batches, d.noise_std / sigma)

    out_d1, q_obs = _statistic("D'", runs, mu, q, steps, rng, draw=drawn, slots=ship.n)
    ratio_obs = float(np.mean(observed)) / sigma
    out_d, _ = _statistic("D", runs, mu, q, steps, rng, noise_ratio=ratio_obs)
    profile = pld_profile(dp_sgd_event(z, q, steps), "PLD accountant that calibrated z (dp_accounting)")
    tr = profile_audit(out_d, out_d1, profile, claim.epsilon, alpha=alpha, select=SELECT, model="gaussian")
    ceiling = (math.nan, math.nan)
    if oracle:
        o1, _ = _statistic("oracle", runs, mu, q, steps, rng)
        o0, _ = _statistic("D", runs, mu, q, steps, rng)
        otr = profile_audit(o0, o1, profile, claim.epsilon, alpha=alpha, select=SELECT, model="gaussian")
        ceiling = (otr.ratio_at_best, otr.audited_at_best)
    measured = c.observed(z * ratio_obs, min(q_obs, 1.0)).epsilon(claim.delta)
    note = (f"{ship.where}; white-box gradient canary (Nasr et al. 2023), statistic (1) over T = {steps} steps at "
            f"q = {q:.5f}, z = {z:.4f}; runs = records of {len(observed)} drawn trial(s) of the unit")
    if broken:
        note += "; control: drawn at 2B for 2× epochs (q → 2q, same T), claim at q"
    return ShippedAuditResult(
        name, claim, measured, "PLD accountant at the observed inclusion rate and noise std",
        tr.audited_at_best, 1 - alpha, runs, broken=broken, note=note, profile=profile, tradeoff=tr,
        q=q, steps=steps, noise_multiplier=z, intended_noise_std=sigma, observed_noise_std=ratio_obs * sigma,
        observed_q=q_obs, ceiling_ratio=ceiling[0], ceiling_at_best=ceiling[1],
        gdp_mu_lower=gdp_mu_lower_bound(tr.alpha_up, tr.beta_up), gdp_mu_claimed=clt_mu(z, q, steps))


def _strict_statistic(draw: Callable[[], Drawn], runs: int, mu: float, steps: int, slots: int,
                      rng: np.random.Generator, *, present: bool, q: float | None = None) -> tuple[np.ndarray, float]:
    """S of (2) for ``runs`` runs on D (``present=False``) or D′, each run one record of a drawn trial (its
    inclusion sequence is seen on both sides), or, with ``q``, from the exact claimed law (the oracle)."""
    out = np.empty(runs)
    included, start = 0, 0
    while start < runs:
        if q is None:
            drawn = draw()
            batches, ratio, width = drawn.batches, drawn.noise_std, min(runs - start, slots)
            if len(batches) != steps:
                raise InvalidParameterError(f"the learner drew {len(batches)} steps; its schedule says {steps}.")
        else:
            batches, ratio, width = None, 1.0, min(runs - start, 50_000)
        s = np.zeros(width)
        for t in range(steps):
            hit = rng.random(width) < q if batches is None else _inclusions(batches[t], width)
            included += int(np.count_nonzero(hit))
            v = ratio * rng.standard_normal(width) + (mu * hit if present else 0.0)
            s += hit * (mu * v - mu * mu / 2)
        out[start:start + width] = s
        start += width
    return out, included / (runs * steps)


def audit_strict_shipped(runs: int, rng: np.random.Generator, *, broken: bool = False, ship: Shipped | None = None,
                         alpha: float = 0.05, oracle: bool = True) -> ShippedAuditResult:
    """DP-FERMI ``strict`` at its shipped configuration (default :data:`SHIPPED_STRICT`), white-box.

    Relation: replace one record's sensitive attribute. The record's non-sensitive part is unclipped, so its
    inclusions b_t are seen (the exact strict accountant assumes so); at a sampled step its clipped sensitive
    part moves the released (θ, W) sums by a joint sensitivity/noise ratio μ = 1/z. The attacker's statistic
    is the log-likelihood ratio given the inclusions,

        S = Σ_t b_t (μ v_t − μ²/2),                                                                      (2)

    v_t the released sensitive view over the claimed noise; its trade-off is checked against the exact strict
    accountant's profile (δ(ε) = Σ_K Bin(K; T, q)·δ_Gauss(ε; √K/z)). Runs: records of trials drawn by the
    compiled unit (half of each side's runs from its own trials), the noise at the θ noise std observed in
    those draws over the std the accountant assumes for the sensitive θ part, λ√2·z·2C_s (its sensitivity
    2λC_s under replace-one, half of the joint noise budget). Control (defect 1 of issue 14, at the shipped
    run): z from the amplified Poisson-subsampled accounting, which the unclipped part breaks."""
    name = "dp-fermi-strict-shipped"
    ship = ship or SHIPPED_STRICT
    c = _configure(name, ship)
    claim, q, steps, z = c.guarantee, c.sampling_probability, c.steps, c.noise_multiplier
    run = dp_fermi_unit.amplified_accounting(c) if broken else c
    z_run = run.noise_multiplier
    sigma = STRICT_LAMBDA * math.sqrt(2) * z * 2 * ship.clip_norm   # the accountant's assumption (see above)
    mu = 1.0 / z
    observed: list[float] = []

    def drawn() -> Drawn:
        d = _draw_strict_all(run, ship.n, rng)
        observed.append(d.noise_std)
        return Drawn(d.batches, d.noise_std / sigma)

    out_d, q0 = _strict_statistic(drawn, runs, mu, steps, ship.n, rng, present=False)
    out_d1, q1 = _strict_statistic(drawn, runs, mu, steps, ship.n, rng, present=True)
    ratio_obs = float(np.mean(observed)) / sigma
    q_obs = (q0 + q1) / 2
    profile = strict_profile(z, q, steps)
    tr = profile_audit(out_d, out_d1, profile, claim.epsilon, alpha=alpha, select=SELECT, model="gaussian")
    ceiling = (math.nan, math.nan)
    if oracle:
        o0, _ = _strict_statistic(drawn, runs, mu, steps, ship.n, rng, present=False, q=q)
        o1, _ = _strict_statistic(drawn, runs, mu, steps, ship.n, rng, present=True, q=q)
        otr = profile_audit(o0, o1, profile, claim.epsilon, alpha=alpha, select=SELECT, model="gaussian")
        ceiling = (otr.ratio_at_best, otr.audited_at_best)
    measured = c.observed(z * ratio_obs, min(q_obs, 1.0)).epsilon(claim.delta)
    note = (f"{ship.where}; white-box, statistic (2) over T = {steps} steps at q = {q:.5f}, z = {z:.4f}; runs = "
            f"records of {len(observed)} drawn trial(s) of the unit")
    if broken:
        note += f"; control: z = {z_run:.4f} from the amplified Poisson accounting (defect 1), claim at z = {z:.4f}"
    return ShippedAuditResult(
        name, claim, measured, "exact strict accountant at the observed inclusion rate and noise std",
        tr.audited_at_best, 1 - alpha, runs, broken=broken, note=note, profile=profile, tradeoff=tr,
        q=q, steps=steps, noise_multiplier=z, intended_noise_std=sigma, observed_noise_std=ratio_obs * sigma,
        observed_q=q_obs, ceiling_ratio=ceiling[0], ceiling_at_best=ceiling[1],
        gdp_mu_lower=gdp_mu_lower_bound(tr.alpha_up, tr.beta_up), gdp_mu_claimed=math.sqrt(q * steps) / z)


_SHIPS = {"dp-sgd-shipped": SHIPPED_DP_SGD, "dp-fermi-strict-all-shipped": SHIPPED_STRICT_ALL,
          "tran-2021a-shipped": SHIPPED_TRAN, "pf-ld-shipped": SHIPPED_PF_LD,
          "jagielski-2019-shipped": SHIPPED_JAGIELSKI}
#: the learner unit's draw of one trial, by audit (the baselines: :func:`_draw_core`)
_DRAWS = {"dp-sgd-shipped": _draw_dp_sgd, "dp-fermi-strict-all-shipped": _draw_strict_all}


def _runner(name: str) -> Callable[..., AuditResult]:
    def run(runs: int, rng: np.random.Generator, *, broken: bool = False) -> AuditResult:
        return audit_shipped(name, runs, rng, broken=broken, oracle=not broken and runs >= ORACLE_FROM)
    return run


#: the shipped-configuration audits, by name, in the registry form of :data:`repro.studies.audit.mechanisms.MECHANISMS`
SHIPPED: dict[str, Mechanism] = {
    "dp-sgd-shipped": Mechanism(_runner("dp-sgd-shipped"), {"smoke": 2_000, "full": 30_000},
                                "sampled at 2q (batch 2B, 2× epochs), claim at q"),
    "dp-fermi-strict-all-shipped": Mechanism(_runner("dp-fermi-strict-all-shipped"), {"smoke": 2_000, "full": 30_000},
                                             "sampled at 2q (batch 2B, 2× epochs), claim at q"),
    **{name: Mechanism(_runner(name), {"smoke": 2_000, "full": 30_000}, "sampled at 2q (batch 2B, 2× epochs), claim at q")
       for name in ("tran-2021a-shipped", "pf-ld-shipped", "jagielski-2019-shipped")},
    "dp-fermi-strict-shipped": Mechanism(
        lambda runs, rng, *, broken=False: audit_strict_shipped(runs, rng, broken=broken,
                                                                oracle=not broken and runs >= ORACLE_FROM),
        {"smoke": 2_000, "full": 30_000}, "z from the amplified Poisson accounting (defect 1), claim exact"),
}
