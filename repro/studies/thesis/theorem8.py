"""Study module for ``experiments/thesis-theorem-8.toml``: checks of Theorem 7, Proposition 6 and
Theorem 8 / Proposition 9 of the thesis (Part I).

Checks (one per cell, ``check``):

* ``theorem7-exact``: Algorithm 1 on a grid of (α, β) plus random pairs, population level, exact
  arithmetic in doubles: Δ_SP = 0 and U = |α − β| (each group changes (α − β)/2).
* ``theorem7-montecarlo``: Algorithm 1 applied query by query (s ~ U(0, 1)) to the base classifier's
  predictions on the whole dataset (the "population"): the group positive rates and change rates
  match (α + β)/2 and |α − β|/2 within 4 binomial standard errors.
* ``proposition6``: random randomized post-processings (keep/flip probabilities per group) and random
  hard-prediction perturbations of finite samples satisfy U ≥ |α − β| − γ.
* ``theorem8``: a FIXED base classifier (DP-SGD logistic regression on [x, A], trained once) on the
  dataset as the population; each of ``runs`` repetitions draws a post-processing sample with the
  thesis's group sizes n₀, n₁ (i.i.d. from each group, so ᾱ ~ Bin(n₀, α)/n₀ exactly), runs
  Algorithm 2 and computes the population Δ_SP and U of the result exactly. Reports the share of
  runs inside the Theorem 8(b) bound (claim ≥ 1 − η), the mean Δ_SP against Proposition 9, and the
  share with U − err* ≤ (5/2)·bound, err* = max(0, |α − β| − Δ_SP) (Theorem 8(c), via Prop. 6).

Spec: seed-003-thesis.md §2.2–§2.6, §9.1–§9.2 (item 9), §10 P1.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from repro.engine.study import Study
from repro.engine.trial import StreamSeed, TrialContext, TrialOutput
from repro.fairness.private_postprocessing import (
    algorithm1,
    apply_rule,
    fair_rule,
    proposition6_lower_bound,
    proposition9_sp_bound,
    theorem8_sp_bound,
)
from repro.learners.dp_sgd_unit import DPSGDConfig, train
from repro.studies.thesis.part1_tables import prepare, split_stream

__all__ = ["STUDY", "CHECKS", "run_trial"]

CHECKS = ("theorem7-exact", "theorem7-montecarlo", "proposition6", "theorem8")


@functools.lru_cache(maxsize=4)
def _population(dataset: str, split: StreamSeed, model: StreamSeed, noise_multiplier: float, epochs: int,
                subsample: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(base predictions h on every row, groups a, n₀ and n₁ of the post-processing split) for a
    base model trained once per dataset: on the Part I tables' fixed clean split (stream ``split``),
    from the stream ``model``."""
    ds, sp, X = prepare(dataset, split, subsample, "clean")
    Xa = np.hstack([X, ds.s[:, None].astype(np.float64)])
    rng = model.rng()
    res = train(Xa[sp.train], ds.y[sp.train], DPSGDConfig(noise_multiplier=noise_multiplier, epochs=epochs),
                rng=rng)
    post = ds.s[sp.post]
    return res.model.predict(Xa), ds.s.astype(np.int64), int(np.sum(post == 0)), int(np.sum(post == 1))


def _exact(rng: np.random.Generator, n_random: int) -> TrialOutput:
    grid = np.linspace(0, 1, 21)
    pairs = [(a, b) for a in grid for b in grid] + [tuple(x) for x in rng.random((n_random, 2))]
    sp_err, u_err, half_err = 0.0, 0.0, 0.0
    for a, b in pairs:
        rule = algorithm1(a, b)
        r0, r1 = rule.positive_rates(a, b)
        c0, c1 = rule.change_probabilities(a, b)
        sp_err = max(sp_err, abs(r0 - r1))
        u_err = max(u_err, abs(c0 + c1 - abs(a - b)))
        half_err = max(half_err, abs(c0 - abs(a - b) / 2), abs(c1 - abs(a - b) / 2))
    return TrialOutput(records=[{"t7_max_sp_gap": sp_err, "t7_max_u_error": u_err,
                                 "t7_max_group_change_error": half_err, "n_cases": float(len(pairs))}])


def _streams(params: dict[str, Any], ctx: TrialContext) -> tuple[StreamSeed, StreamSeed]:
    """The streams of the base model's data split (the scope ``split`` of Tables 3.1–3.4: their fixed split)
    and of its training (the scope ``base-model``), both declared by the experiment file."""
    dataset = str(params["dataset"])
    return (split_stream(ctx, dataset, "fixed", int(params["subsample"])),
            ctx.seed("base-model", dataset, scope="base-model"))


def _montecarlo(params: dict[str, Any], rng: np.random.Generator, streams: tuple[StreamSeed, StreamSeed]
                ) -> TrialOutput:
    h, a, _, _ = _population(str(params["dataset"]), *streams,
                             float(params["noise_multiplier"]), int(params["epochs"]), int(params["subsample"]))
    alpha, beta = float(h[a == 0].mean()), float(h[a == 1].mean())
    rule = algorithm1(alpha, beta)
    reps = int(params["mc_repeats"])
    zs, sps, us = [], [], []
    n0, n1 = int(np.sum(a == 0)), int(np.sum(a == 1))
    target = (alpha + beta) / 2
    for _ in range(reps):
        out = apply_rule(h, a, rule, rng=rng)
        r0, r1 = out[a == 0].mean(), out[a == 1].mean()
        c0, c1 = np.mean(out[a == 0] != h[a == 0]), np.mean(out[a == 1] != h[a == 1])
        se = lambda p, n: np.sqrt(max(p * (1 - p), 1e-300) / n)  # noqa: E731
        half = abs(alpha - beta) / 2
        zs += [abs(r0 - target) / se(target, n0), abs(r1 - target) / se(target, n1),
               abs(c0 - half) / se(half, n0), abs(c1 - half) / se(half, n1)]
        sps.append(abs(r0 - r1))
        us.append(c0 + c1)
    zs = np.array(zs)
    return TrialOutput(records=[{"alpha": alpha, "beta": beta, "mc_mean_sp_gap": float(np.mean(sps)),
                                 "mc_mean_u": float(np.mean(us)), "abs_alpha_minus_beta": abs(alpha - beta),
                                 "mc_share_within_4se": float(np.mean(zs <= 4)), "mc_max_z": float(zs.max())}])


def _prop6(rng: np.random.Generator, n_random: int) -> TrialOutput:
    alpha, beta = rng.random(n_random), rng.random(n_random)
    keep, flip = rng.random((n_random, 2)), rng.random((n_random, 2))
    r0 = alpha * keep[:, 0] + (1 - alpha) * flip[:, 0]
    r1 = beta * keep[:, 1] + (1 - beta) * flip[:, 1]
    u = (alpha * (1 - keep[:, 0]) + (1 - alpha) * flip[:, 0]
         + beta * (1 - keep[:, 1]) + (1 - beta) * flip[:, 1])
    slack = u - np.array([proposition6_lower_bound(x, y, abs(g)) for x, y, g in zip(alpha, beta, r0 - r1, strict=True)])
    fin = []
    for _ in range(min(n_random, 500)):
        n = 200
        a = rng.integers(0, 2, n)
        a[:2] = (0, 1)
        h = (rng.random(n) < rng.random()).astype(int)
        hh = np.where(rng.random(n) < 0.3 * rng.random(), 1 - h, h)
        al, be = h[a == 0].mean(), h[a == 1].mean()
        gamma = abs(hh[a == 0].mean() - hh[a == 1].mean())
        uu = np.mean(hh[a == 0] != h[a == 0]) + np.mean(hh[a == 1] != h[a == 1])
        fin.append(uu - proposition6_lower_bound(al, be, gamma))
    fin = np.array(fin)
    # Algorithm 1's rule attains the bound with γ = 0 (slack 0)
    rule = algorithm1(0.4, 0.1)
    attained = sum(rule.change_probabilities(0.4, 0.1)) - proposition6_lower_bound(0.4, 0.1, 0.0)
    return TrialOutput(records=[{"p6_violations": float(np.sum(slack < -1e-12) + np.sum(fin < -1e-12)),
                                 "p6_min_slack": float(min(slack.min(), fin.min())),
                                 "p6_attained_slack": float(attained), "n_cases": float(n_random + fin.size)}])


def _theorem8(params: dict[str, Any], rng: np.random.Generator, streams: tuple[StreamSeed, StreamSeed]
              ) -> TrialOutput:
    h, a, n0, n1 = _population(str(params["dataset"]), *streams,
                               float(params["noise_multiplier"]), int(params["epochs"]), int(params["subsample"]))
    alpha, beta = float(h[a == 0].mean()), float(h[a == 1].mean())
    eps0, eps1, eta = float(params["eps0"]), float(params["eps1"]), float(params["eta"])
    runs = int(params["runs"])
    a_bar = rng.binomial(n0, alpha, runs) / n0
    b_bar = rng.binomial(n1, beta, runs) / n1
    a_til = np.clip(a_bar + rng.laplace(0, 1 / (n0 * eps0), runs), 0, 1)
    b_til = np.clip(b_bar + rng.laplace(0, 1 / (n1 * eps1), runs), 0, 1)
    sp = np.empty(runs)
    u = np.empty(runs)
    for i in range(runs):
        rule = fair_rule(a_til[i], b_til[i])
        r0, r1 = rule.positive_rates(alpha, beta)
        sp[i] = abs(r0 - r1)
        u[i] = sum(rule.change_probabilities(alpha, beta))
    bound = theorem8_sp_bound(n0, n1, eps0, eps1, eta)
    p9 = proposition9_sp_bound(n0, n1, eps0, eps1)
    err_star = np.maximum(0.0, abs(alpha - beta) - sp)
    hp_share = float(np.mean(sp <= bound))
    util_share = float(np.mean(u - err_star <= 2.5 * bound))
    table = [{"quantile": qq, "sp_gap": float(np.quantile(sp, qq)), "bound": bound}
             for qq in (0.5, 0.9, 0.95, 0.99, 1.0)]
    return TrialOutput(records=[{
        "alpha": alpha, "beta": beta, "t8_sp_bound": bound, "t8_share_within": hp_share,
        "t8_holds": float(hp_share >= 1 - eta), "p9_bound": p9, "mean_sp_gap": float(sp.mean()),
        "p9_holds": float(sp.mean() <= p9), "t8_utility_share_within": util_share,
        "t8_utility_holds": float(util_share >= 1 - eta), "mean_u_minus_err_star": float(np.mean(u - err_star)),
        "max_sp_gap": float(sp.max()), "n0": float(n0), "n1": float(n1),
    }], tables={"theorem8_quantiles": table})


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """Run the check named by ``params["check"]`` (see the module docstring)."""
    check = str(params["check"])
    if check == "theorem7-exact":
        return _exact(ctx.rng(), int(params["n_random"]))
    if check == "theorem7-montecarlo":
        return _montecarlo(params, ctx.rng(), _streams(params, ctx))
    if check == "proposition6":
        return _prop6(ctx.rng(), int(params["n_random"]))
    if check == "theorem8":
        return _theorem8(params, ctx.rng(), _streams(params, ctx))
    raise ValueError(f"unknown check {check!r}; expected one of {CHECKS}")


#: scopes: the Part I tables' split and the base model's training stream (declared by the experiment file)
STUDY = Study(run_trial=run_trial, version="1", scopes=("split", "base-model"))
