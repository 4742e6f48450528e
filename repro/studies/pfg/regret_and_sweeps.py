"""Study module of the Private-Fair-Greedy experiments (Figures 1, 2, A.1–A.4).

One trial = one seed: every policy and Private-Fair-Greedy configuration of the experiment runs on
the same context stream and reward noise (common random numbers), with the window projections of
all rank policies shared (:mod:`repro.bandits.simulate`). A trial returns one record per policy
(configuration) with exact final metrics and a ~500-point subsample of its cumulative curves.

Parameters (experiment TOML ``[params]``; override with ``--set key=value``):

``env``
    ``acs`` (faithful, folktables), ``acs-ca-extract`` (surrogate) or ``synthetic``. ``acs``
    without the ACS files (and without ``acs_download = true``) falls back to ``env_fallback``,
    and every record, table, figure and the report say so.
``T``, ``n_per_group``, ``problem_seed``, ``reward_noise``, ``ridge_lambda``, ``oful_coef``
    Horizon, pool size per group, the fixed problem stream (42 as in the code), reward noise
    scale (0.2), λ for Fair-Greedy/OFUL (0.01), OFUL's exploration coefficient (0.01).
``L_tilde``
    0 = computed from the data (the code's rule); > 0 overrides (21.6746 = the authors' value). Private-Fair-
    Greedy clips every observed [x; y] to norm L̃ (the authors' code does not; on the smoke profile it never
    fires), so the tree's sensitivity holds; L̃ from the data stays a public-statistics caveat. The
    ``pfg_calibration`` table counts the clipped observations of seed 0 (``clipped_observations``).
``policies``
    Subset of OFUL, FairGreedy, PrivateFairGreedy, Random, Oracle.
``epsilon``, ``delta``, ``alpha_eps``, ``alpha_delta``, ``sweep``, ``sweep_values``
    Private-Fair-Greedy's budget; ``sweep`` names one of them to vary over ``sweep_values``.
``figure``
    ``groups`` (Figure 1), ``regret`` (Figure 2) or ``sweep`` (A.1–A.4).
``context_sampling``
    ``fresh`` (default: a with-replacement sample of the original pool per seed, shared by all
    policies) or ``reference-bootstrap`` (the code's cumulative bootstrap chain, D11).

Figures and the report live in :mod:`repro.studies.pfg.regret_and_sweeps_report` (re-exported here as ``plot`` and
``report_markdown``), so that editing them does not invalidate cached trials.

Spec: seed-001-bandit.md §5, §7, §8, §10 (D1, D5, D10, D11, D13, D14).
"""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from repro.bandits import environments as envs
from repro.bandits.metrics import curve_points, regret_curves, trace_metrics
from repro.bandits.policies import (
    OFUL,
    FairGreedy,
    GMFOracle,
    PrivateFairGreedy,
    UniformRandom,
    budget_split,
    pfg_guarantee,
)
from repro.bandits.simulate import draw_stream, simulate, stream_contexts
from repro.engine.study import Study
from repro.engine.trial import StreamSeed, TrialContext, TrialOutput
from repro.errors import InvalidParameterError
from repro.privacy import tree_mechanism as tm
from repro.privacy.group import shared_noise
from repro.privacy.guarantee import NON_PRIVATE

__all__ = ["STUDY", "run_trial", "resolve_environment"]

#: the Private-Fair-Greedy configurations of one trial share their noise draws (common random numbers)
JOINT_RELEASE = shared_noise("configuration", "its (ε, δ, α) settings",
                             "share their regression and rank noise draws (scaled per configuration)")

POLICIES = ("OFUL", "FairGreedy", "PrivateFairGreedy", "Random", "Oracle")
LABELS = {"OFUL": "OFUL", "FairGreedy": "Fair-Greedy", "PrivateFairGreedy": "Private-Fair-Greedy",
          "Random": "Random", "Oracle": "GMF oracle"}
CONFIG_KEYS = ("epsilon", "delta", "alpha_eps", "alpha_delta")


# --------------------------------------------------------------------------- environment


def resolve_environment(params: dict[str, Any]) -> tuple[str, str]:
    """(environment actually used, label recorded in every output).

    ``acs`` is used when its files are present (or ``acs_download`` is true); otherwise the
    declared fallback, labelled "<fallback> [substituted for acs: ACS files not found]".
    """
    requested = str(params["env"])
    if requested not in envs.ENVIRONMENTS:
        raise InvalidParameterError(f"`env` must be one of {', '.join(envs.ENVIRONMENTS)}; got {requested!r}. "
                                    "Pass e.g. --set env=synthetic.")
    if requested != "acs":
        return requested, requested
    if bool(params["acs_download"]) or envs.acs_files_present(_acs_root(params), states=_states(params)):
        return "acs", "acs"
    fallback = str(params["env_fallback"])
    if fallback not in envs.ENVIRONMENTS or fallback == "acs":
        raise InvalidParameterError(f"`env_fallback` must be acs-ca-extract or synthetic; got {fallback!r}.")
    return fallback, f"{fallback} [substituted for acs: ACS PUMS files not found]"


def _acs_root(params: dict[str, Any]) -> Path:
    raw = str(params["acs_dir"] or "")
    return Path(raw).expanduser().absolute() if raw else envs.default_acs_dir()


def _states(params: dict[str, Any]) -> tuple[str, ...] | None:
    raw = str(params["acs_states"] or "")
    return tuple(s.strip().upper() for s in raw.split(",") if s.strip()) or None


@functools.lru_cache(maxsize=4)
def _environment(name: str, n_per_group: int, problem: StreamSeed, acs_root: str, states: tuple[str, ...] | None,
                 download: bool) -> envs.BanditEnvironment:
    # The problem instance is fixed across seeds (the reference seeds it once with 42): the stream of the
    # scope ``problem``, which the experiment files seed by `problem_seed`, whatever the base seed.
    rng = problem.rng()
    if name == "synthetic":
        return envs.make_synthetic(n_per_group=n_per_group, rng=rng)
    if name == "acs-ca-extract":
        return envs.load_acs_ca_extract(n_per_group=n_per_group, rng=rng)
    return envs.load_acs(n_per_group=n_per_group, rng=rng, root=Path(acs_root), states=states, download=download)


# --------------------------------------------------------------------------- trial


def _configs(params: dict[str, Any]) -> list[dict[str, float]]:
    base = {k: float(params[k]) for k in CONFIG_KEYS}
    sweep = str(params["sweep"])
    if sweep == "none":
        return [base]
    if sweep not in CONFIG_KEYS:
        raise InvalidParameterError(f"`sweep` must be none or one of {', '.join(CONFIG_KEYS)}; got {sweep!r}.")
    values = params["sweep_values"]
    if not isinstance(values, list | tuple) or not values:
        values = [values]
    return [{**base, sweep: float(v)} for v in values]


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """One seed: all policies/configurations on one stream; records per policy, curves, calibration.

    Spec: seed-001 §5, §7, §10 D10–D11.
    """
    variant = str(params["variant"])
    T = int(params["T"])
    if T < 3:
        raise InvalidParameterError(f"`T` must be >= 3; got {T}.")
    names = list(params["policies"])
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        raise InvalidParameterError(f"unknown policies {unknown}; valid: {', '.join(POLICIES)}.")
    env_name, env_label = resolve_environment(params)
    env = _environment(env_name, int(params["n_per_group"]), ctx.seed(scope="problem"),
                       str(_acs_root(params)), _states(params), bool(params["acs_download"]))
    L_used = float(params["L_tilde"]) or env.L_tilde
    configs = _configs(params)
    for cfg in configs:  # validate budgets before any work
        budget_split(cfg["epsilon"], cfg["delta"], cfg["alpha_eps"], cfg["alpha_delta"], variant)

    sampling = str(params["context_sampling"])
    noise = ctx.rng("reward-noise", scope="repetition").standard_normal(T)
    if sampling == "fresh":
        fresh = draw_stream(env, T, data_rng=ctx.rng("data-order", scope="repetition"), noise_rng=ctx.rng("reward-noise", scope="repetition"))
        streams = {name: fresh for name in names}
    elif sampling == "reference-bootstrap":
        streams = _reference_bootstrap_streams(env, T, names, ctx.repetition, noise, params,
                                               ctx.rng(scope="reference-bootstrap"))
    else:
        raise InvalidParameterError(f"`context_sampling` must be fresh or reference-bootstrap; got {sampling!r}.")
    x_scale = float(np.linalg.norm(env.pools, axis=-1).max())
    rank_normals = ctx.rng("rank-noise", scope="repetition").standard_normal((T, env.n_arms))
    K, d = env.n_arms, env.dim
    contexts: dict[int, np.ndarray] = {}
    groups: dict[int, list[int]] = {}
    policies, meta, owner = [], [], []
    for name in names:
        stream = streams[name]
        if id(stream) not in contexts:
            contexts[id(stream)] = stream_contexts(env, stream)
        X = contexts[id(stream)]
        if name == "OFUL":
            built = [(OFUL(d, reg=float(params["ridge_lambda"]), coef=float(params["oful_coef"])), {})]
        elif name == "FairGreedy":
            built = [(FairGreedy(K, d, T, reg=float(params["ridge_lambda"]), variant=variant,
                                 rng=ctx.rng("warmup-tiebreak", scope="repetition"), history=X, x_scale=x_scale), {})]
        elif name == "PrivateFairGreedy":
            # Same labels for every configuration: common random numbers across ε, δ, α.
            built = [(PrivateFairGreedy(K, d, T, variant=variant, rng=ctx.rng("warmup-tiebreak", scope="repetition"), history=X,
                                        x_scale=x_scale, L_tilde=L_used, reg_rng=ctx.rng("regression-noise", scope="repetition"),
                                        rank_normals=rank_normals, **cfg), dict(cfg)) for cfg in configs]
        elif name == "Random":
            built = [(UniformRandom(K, rng=ctx.rng("random-policy", scope="repetition")), {})]
        else:
            built = [(GMFOracle(env.theta_star, env.true_ranks), {})]
        for pol, cfg in built:
            groups.setdefault(id(stream), []).append(len(policies))
            policies.append(pol)
            meta.append(cfg)
            owner.append(stream)

    start = time.thread_time()
    from threadpoolctl import threadpool_limits

    traces: list[Any] = [None] * len(policies)
    opts: list[Any] = [None] * len(policies)
    with threadpool_limits(1):  # small products: one BLAS thread is fastest and leaves cores to --jobs
        for key, members in groups.items():
            stream = owner[members[0]]
            tr, opt = simulate(env, [policies[i] for i in members], stream,
                               noise_scale=float(params["reward_noise"]), contexts=contexts[key])
            for i, t_ in zip(members, tr, strict=True):
                traces[i], opts[i] = t_, opt
    sim_seconds = time.thread_time() - start

    pts = curve_points(T, int(params["curve_points"]))
    records, curves, calib = [], [], []
    for pol, tr, cfg, opt in zip(policies, traces, meta, opts, strict=True):
        m = trace_metrics(tr.actions, tr.exp_reward, tr.fair_reward, opt["exp_max"], opt["fair_max"], K)
        guarantee = pfg_guarantee(**cfg, variant=variant) if cfg else NON_PRIVATE
        rec = {"method": LABELS[pol.name], "environment": env_label, **cfg, **m, "policy_seconds": tr.seconds,
               "eps_label": guarantee.label.value}
        records.append(rec)
        reg, fair = regret_curves(tr.exp_reward, tr.fair_reward, opt["exp_max"], opt["fair_max"])
        for t_ in pts:
            curves.append({"policy": LABELS[pol.name], **{k: cfg.get(k, math.nan) for k in CONFIG_KEYS},
                           "round": int(t_), "fair_regret": float(fair[t_ - 1]), "regret": float(reg[t_ - 1])})
        if isinstance(pol, PrivateFairGreedy) and ctx.repetition == 0:
            s = pol.split
            calib.append({
                **cfg, "variant": variant, "epsilon_reg": s.epsilon_reg, "delta_reg": s.delta_reg,
                "epsilon_rank": s.epsilon_rank, "delta_rank": s.delta_rank, "epsilon_spent": s.epsilon_spent,
                "delta_spent": s.delta_spent, "m": pol.m, "L_tilde": L_used, "clipped_observations": pol.clipped,
                "sigma_noise": pol.sigma_noise,
                "gamma": pol.gamma, "rho_rank": pol.rho_rank, "rank_c": pol.rank_c,
                "sigma_rank_at_half_T": pol.rank_c / (T - 1 - (T - 2) // 2),
                "rank_eps_bs16": tm.zcdp_to_dp_epsilon(pol.rho_rank, s.delta_rank),
                "rank_eps_rdp_accountant": tm.rdp_epsilon(tm.rank_dp_event(T, pol.rho_rank), s.delta_rank),
                "tree_eps_rdp_accountant": tm.rdp_epsilon(
                    tm.tree_dp_event(pol.sigma_noise, L_used, pol.m), s.delta_reg),
                "eps_label": guarantee.label.value, "guarantee": guarantee.describe(), "joint_release": JOINT_RELEASE,
            })
    tables: dict[str, list[dict[str, Any]]] = {"curves": curves}
    if calib:
        tables["pfg_calibration"] = calib
    if ctx.repetition == 0:
        info = env.info
        tables["environment"] = [{
            "env_requested": str(params["env"]), "env_used": env_name, "environment": env_label,
            "description": env.description, "group_codes": " ".join(map(str, env.group_codes)),
            "n_per_group": env.n_per_group, "d": d, "L_tilde_data": env.L_tilde, "L_tilde_used": L_used,
            "distinct_rows_per_group": " ".join(map(str, info.get("distinct_rows_per_group", []))),
            "reward_mean_per_group": " ".join(f"{v:.4f}" for v in info.get("reward_mean_per_group", [])),
            "theta_star_norm": float(np.linalg.norm(env.theta_star)), "simulation_cpu_seconds": sim_seconds,
        }]
    return TrialOutput(records=records, tables=tables)


REFERENCE_RUN_ORDER = ("OFUL", "PrivateFairGreedy", "FairGreedy")


def _reference_bootstrap_streams(env: envs.BanditEnvironment, T: int, names: list[str], repetition: int,
                                 noise: np.ndarray, params: dict[str, Any], rng: np.random.Generator
                                 ) -> dict[str, Any]:
    """Replicates the reference's cumulative bootstrap (spec §10 D11, option).

    The code resamples its current pool *with replacement* at every run's ``reset()`` and runs OFUL
    seeds 0..S−1, then PFG, then FG on the same object (a sweep reloads the data per configuration),
    so run j (1-based) of that order sees pool xs_j = xs_{j−1}[choice(n, n)] and uses its rows 1..T;
    a row is a tuple of one candidate per group. The chain is a fixed function of ``problem_seed``
    (the reference's is unseeded). Random/oracle anchors share OFUL's stream. Policies run in
    different runs no longer share contexts (no common random numbers across them).
    """
    from repro.bandits.simulate import Stream

    n = env.n_per_group
    if T + 1 > n:
        raise InvalidParameterError(f"reference-bootstrap uses pool rows 1..T; need T < n_per_group ({T} >= {n}).")
    S = int(params["reference_seeds"])
    order = [p for p in REFERENCE_RUN_ORDER if p in names]
    run_index = {p: i * S + repetition + 1 for i, p in enumerate(order)}
    for p in names:
        run_index.setdefault(p, run_index.get("OFUL", repetition + 1))
    idx = np.arange(n)
    needed = set(run_index.values())
    chains: dict[int, Stream] = {}
    for j in range(1, max(needed) + 1):
        idx = idx[rng.integers(0, n, size=n)]
        if j in needed:
            rows = idx[1:T + 1]
            chains[j] = Stream(np.repeat(rows[:, None], env.n_arms, axis=1), noise)
    return {p: chains[run_index[p]] for p in names}


#: index: record keys that identify a row besides the grid keys; values: the label of the policy's ε
#: (docs/privacy.md); scopes: the problem instance and the reference's bootstrap chain, seeded by `problem_seed`
STUDY = Study(run_trial=run_trial, index=("environment", "epsilon", "delta", "alpha_eps", "alpha_delta"),
              values=("eps_label",), version="1", scopes=("problem", "reference-bootstrap"))
