"""Policies and the batched simulator (spec seed-001 §2–§5, §9 items 6–7, §10 D1, D12, D14)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.bandits.metrics import curve_points, group_shares, regret_curves, trace_metrics
from repro.bandits.policies import (
    OFUL,
    FairGreedy,
    GMFOracle,
    PrivateFairGreedy,
    UniformRandom,
    split_index,
)
from repro.bandits.simulate import draw_stream, simulate, stream_contexts, within_group_basis
from repro.errors import InvalidParameterError


def _stream(env, T, seed=0):
    return draw_stream(env, T, data_rng=np.random.default_rng(seed), noise_rng=np.random.default_rng(seed + 100))


def _rank_policies(env, T, X, variant, history_for=None):
    """FG + two PFG configurations with fixed seeds; ``history_for`` None → own buffers (standalone)."""
    xs = float(np.linalg.norm(env.pools, axis=-1).max())
    hist = X if history_for is None else None
    normals = np.random.default_rng(7).standard_normal((T, env.n_arms))
    fg = FairGreedy(env.n_arms, env.dim, T, variant=variant, rng=np.random.default_rng(1), history=hist, x_scale=xs)
    pfgs = [PrivateFairGreedy(env.n_arms, env.dim, T, variant=variant, rng=np.random.default_rng(1), history=hist,
                              x_scale=xs, epsilon=eps, delta=0.1, alpha_eps=0.9, alpha_delta=0.9, L_tilde=env.L_tilde,
                              reg_rng=np.random.default_rng(3), rank_normals=normals) for eps in (15.0, 1e4)]
    return [fg, *pfgs]


@pytest.mark.parametrize("variant", ["reference", "paper"])
def test_batched_ecdf_equals_naive_loop(small_env, variant: str) -> None:
    """The simulator's shared, reduced-dimension window projections give the same actions as each
    policy's own plain-loop ECDF (the reference's formula) on the same stream."""
    env, T = small_env, 160
    stream = _stream(env, T)
    X = stream_contexts(env, stream)
    batched = _rank_policies(env, T, X, variant)
    traces, _ = simulate(env, batched, stream, contexts=X)
    alone = _rank_policies(env, T, X, variant, history_for="own")
    rewards = X @ env.theta_star + 0.2 * stream.reward_noise[:, None]
    for i, p in enumerate(alone):
        for t in range(1, T + 1):
            a = p.select(t, X[t - 1])
            p.update(t, X[t - 1], a, float(rewards[t - 1, a]))
        np.testing.assert_array_equal(p.actions, traces[i].actions)


def test_naive_ecdf_matches_definition(small_env) -> None:
    env, T = small_env, 40
    stream = _stream(env, T, seed=3)
    X = stream_contexts(env, stream)
    fg = FairGreedy(env.n_arms, env.dim, T, variant="paper", rng=np.random.default_rng(0))
    for t in range(1, 30):
        fg.update(t, X[t - 1], t % env.n_arms, float(X[t - 1, t % env.n_arms] @ env.theta_star))
    theta = fg.theta(30)
    lo, hi = fg.window(30)
    assert (lo, hi) == (14, 29)  # t̃ = ⌊29/2⌋ = 14 regression rounds, window rounds 15..29
    expected = [np.mean(X[lo:hi, k] @ theta <= X[29, k] @ theta) for k in range(env.n_arms)]
    np.testing.assert_allclose(fg.window_ecdf(30, X[29]), expected)
    chosen = [X[s, (s + 1) % env.n_arms] for s in range(14)]  # round s+1 chose arm (s+1) mod K
    A = 0.01 * np.eye(env.dim) + sum(np.outer(x, x) for x in chosen)
    b = sum(x * float(x @ env.theta_star) for x in chosen)
    np.testing.assert_allclose(theta, np.linalg.solve(A, b), rtol=1e-10)


def test_split_index_reference_off_by_one() -> None:
    # spec §2.2: at t = 5 the code regresses on {1} and ranks over {2, 3, 4}; the paper on {1, 2} and {3, 4}
    assert split_index(5, "reference") == 1 and split_index(5, "paper") == 2
    for t in range(2, 200, 2):
        assert split_index(t, "reference") == split_index(t, "paper")
    assert split_index(1, "reference") == 0 and split_index(2, "reference") == 0


def test_reference_warmup_never_picks_last_arm(small_env) -> None:
    env = small_env
    arms_ref, arms_pap = set(), set()
    for s in range(200):
        for variant, seen in (("reference", arms_ref), ("paper", arms_pap)):
            p = FairGreedy(env.n_arms, env.dim, 10, variant=variant, rng=np.random.default_rng(s))
            seen.add(p.select(1, env.pools[:, 0]))
    assert arms_ref == set(range(env.n_arms - 1))
    assert arms_pap == set(range(env.n_arms))


def test_reference_ties_go_to_first_index_paper_ties_random(small_env) -> None:
    env = small_env
    ecdf = np.array([0.5, 1.0, 1.0, 0.2])
    ref = FairGreedy(env.n_arms, env.dim, 10, variant="reference", rng=np.random.default_rng(0))
    assert {ref.choose(5, ecdf) for _ in range(50)} == {1}
    pap = FairGreedy(env.n_arms, env.dim, 10, variant="paper", rng=np.random.default_rng(0))
    assert {pap.choose(5, ecdf) for _ in range(200)} == {1, 2}


def test_oracle_has_zero_fair_regret_and_demographic_parity(small_env) -> None:
    """Remark 3.1: true ranks are i.i.d. U[0,1], so the GMF policy picks each group w.p. 1/K."""
    env, T = small_env, 20_000
    stream = _stream(env, T, seed=11)
    traces, opt = simulate(env, [GMFOracle(env.theta_star, env.true_ranks)], stream)
    m = trace_metrics(traces[0].actions, traces[0].exp_reward, traces[0].fair_reward, opt["exp_max"], opt["fair_max"],
                      env.n_arms)
    assert m["fair_regret"] == 0.0
    sd = 100 * math.sqrt(0.25 * 0.75 / T)  # binomial sd of a share, in percent
    for k in range(env.n_arms):
        assert abs(m[f"pct_g{k + 1}"] - 25.0) < 4 * sd


def test_random_policy_fair_regret_is_three_tenths(small_env) -> None:
    env, T = small_env, 20_000
    stream = _stream(env, T, seed=12)
    traces, opt = simulate(env, [UniformRandom(env.n_arms, rng=np.random.default_rng(5))], stream)
    per_round = (opt["fair_max"] - traces[0].fair_reward).mean()
    # analytic K/(K+1) − 1/2 = 0.3; per-round sd < 0.35 ⇒ se < 0.0025; the pool ECDF is discrete (n = 3000)
    assert per_round == pytest.approx(0.3, abs=0.01)


def test_oful_first_round_and_confidence_width(small_env) -> None:
    env = small_env
    p = OFUL(env.dim, reg=0.01, coef=0.01)
    assert p.select(1, env.pools[:, 0]) == int(np.argmax(np.zeros(env.n_arms)))  # all UCBs 0 → arm 0
    rng = np.random.default_rng(0)
    V = 0.01 * np.eye(env.dim)
    b = np.zeros(env.dim)
    for t in range(1, 60):
        ctx = env.pools[:, t]
        a = p.select(t, ctx)
        r = float(ctx[a] @ env.theta_star + 0.2 * rng.normal())
        p.update(t, ctx, a, r)
        V += np.outer(ctx[a], ctx[a])
        b += r * ctx[a]
    np.testing.assert_allclose(p.V_inv, np.linalg.inv(V), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(p.theta_hat, np.linalg.solve(V, b), rtol=1e-8)
    beta = math.sqrt(2 * (np.linalg.slogdet(V)[1] - env.dim * math.log(0.01)))
    assert p.beta == pytest.approx(beta, rel=1e-10)
    ctx = env.pools[:, 70]
    ucb = ctx @ np.linalg.solve(V, b) + 0.01 * beta * np.sqrt(
        np.einsum("kd,de,ke->k", ctx, np.linalg.inv(V), ctx) * math.log(60))
    assert p.select(60, ctx) == int(np.argmax(ucb))


def test_private_regression_reference_vs_paper_shift(small_env) -> None:
    env = small_env
    kw = dict(epsilon=15.0, delta=0.1, alpha_eps=0.9, alpha_delta=0.9, L_tilde=env.L_tilde,
              rng=np.random.default_rng(0), rank_normals=np.zeros((100, env.n_arms)))
    ref = PrivateFairGreedy(env.n_arms, env.dim, 100, variant="reference", reg_rng=np.random.default_rng(1), **kw)
    pap = PrivateFairGreedy(env.n_arms, env.dim, 100, variant="paper", reg_rng=np.random.default_rng(1), **kw)
    assert ref.theta(3).tolist() == [0.0] * env.dim  # no regression data before round 4 (reference)
    for p in (ref, pap):
        for t in range(1, 8):
            p.update(t, env.pools[:, t], 0, 1.0)
        p.theta(8)
    # 3 items fed at t = 8 (t0 = 3): popcount(3) = 2 nodes, each carries the shift in the reference
    M_ref = ref.tree.release()
    assert np.diag(M_ref).min() > 2 * 2 * ref.gamma - 20 * ref.sigma_noise
    M_pap = pap.tree.release()
    assert np.diag(M_pap).max() < 2 * pap.gamma + 20 * pap.sigma_noise


def test_simulator_rejects_foreign_history(small_env) -> None:
    env, T = small_env, 20
    stream = _stream(env, T)
    fg = FairGreedy(env.n_arms, env.dim, T, variant="paper", rng=np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="history"):
        simulate(env, [fg], stream)


def test_within_group_basis_drops_constant_directions() -> None:
    rng = np.random.default_rng(0)
    pool = np.column_stack([np.ones(500), np.zeros(500), rng.normal(size=(500, 3)), np.full(500, 2.0)])
    B = within_group_basis(pool)
    assert B.shape == (6, 3)
    theta = rng.normal(size=6)
    x, y = pool[3], pool[7]
    assert (x - y) @ theta == pytest.approx(((x - y) @ B) @ (B.T @ theta), rel=1e-10)


def test_metrics_bincount_and_curves() -> None:
    shares = group_shares(np.array([0, 0, 2, 2, 2, 2]), 4)  # groups 1 and 3 never chosen: bincount keeps bins
    np.testing.assert_allclose(shares, [100 / 3, 0, 200 / 3, 0])
    reg, fair = regret_curves(np.array([1.0, 2.0]), np.array([0.5, 0.9]), np.array([2.0, 2.0]), np.array([1.0, 1.0]))
    np.testing.assert_allclose(reg, [1.0, 1.0])
    np.testing.assert_allclose(fair, [0.5, 0.6])
    pts = curve_points(50_000, 500)
    assert pts[0] == 1 and pts[-1] == 50_000 and len(pts) == 500


def test_true_ranks_are_pool_ecdf(small_env) -> None:
    env = small_env
    r = env.sorted_rewards[:, [0, 10, -1]].T  # (3, K)
    ranks = env.true_ranks(r)
    n = env.n_per_group
    np.testing.assert_allclose(ranks, np.array([[1 / n] * 4, [11 / n] * 4, [1.0] * 4]))


def test_private_fair_greedy_clips_each_observation_to_L_tilde(small_env) -> None:
    """Issue 21: the tree's σ assumes ‖[x; y]‖ ≤ L̃, so the policy enforces it: a longer [x; y] enters the tree
    scaled to norm L̃ (exactly what feeding the clipped vector gives), a shorter one unchanged."""
    env = small_env
    L = 2.0
    kw = dict(epsilon=15.0, delta=0.1, alpha_eps=0.9, alpha_delta=0.9, L_tilde=L, variant="paper",
              rng=np.random.default_rng(0), rank_normals=np.zeros((40, env.n_arms)))
    x = np.full(env.dim, 3.0 / math.sqrt(env.dim))  # ‖x‖ = 3 > L
    big = PrivateFairGreedy(env.n_arms, env.dim, 40, reg_rng=np.random.default_rng(1), **kw)
    clipped = PrivateFairGreedy(env.n_arms, env.dim, 40, reg_rng=np.random.default_rng(1), **kw)
    a = np.append(x, 4.0)
    a_clip = a * (L / np.linalg.norm(a))
    big._feed(x, 4.0)
    clipped._feed(a_clip[:-1], float(a_clip[-1]))
    np.testing.assert_array_equal(big.tree.release(), clipped.tree.release())
    assert (big.clipped, clipped.clipped) == (1, 0)
    small = np.full(env.dim, 0.5 / math.sqrt(env.dim))
    p = PrivateFairGreedy(env.n_arms, env.dim, 40, reg_rng=np.random.default_rng(1), **kw)
    q = PrivateFairGreedy(env.n_arms, env.dim, 40, reg_rng=np.random.default_rng(1), **kw)
    p._feed(small, 0.5)
    q.tree.update(np.outer(np.append(small, 0.5), np.append(small, 0.5)))
    np.testing.assert_array_equal(p.tree.release(), q.tree.release())
    assert p.clipped == 0
    with pytest.raises(InvalidParameterError, match="L_tilde"):
        PrivateFairGreedy(env.n_arms, env.dim, 40, reg_rng=np.random.default_rng(1), **{**kw, "L_tilde": 0.0})


@pytest.mark.parametrize("variant", ["paper", "reference"])
def test_private_fair_greedy_tree_noise_is_the_calibrated_sigma(variant: str) -> None:
    """D4: the tree's per-node noise is σ = 4L̃²√m ln(4/δ_reg)/ε_reg, m = 1 + ⌈log₂(T/2)⌉, and the shift is
    2Γ, Γ = σ√(2m)(4√d + 2 ln A) (A = 2T paper, 2·(T/2)·T reference). After one observation the released
    M − aaᵀ − 2Γ·I is one node's symmetric noise: off-diagonal N(0, σ²), diagonal N(0, 2σ²).

    4 policies × 210 off-diagonal entries: RMS/σ to ±10 % (relative SE ≈ 1/√1680 = 2.4 %, ≈ 4 SE);
    84 diagonal entries: RMS/(√2σ) to ±30 % (SE ≈ 7.7 %). A tree built with σ/2 fails both."""
    d, T, L, K = 20, 64, 1.5, 3
    eps, delta, ae, ad = 2.0, 0.1, 0.7, 0.6
    e_reg, d_reg = (ae * eps, ad * delta) if variant == "paper" else (eps, delta)
    m = 1 + math.ceil(math.log2(T / 2))
    sigma = 4 * L**2 * math.sqrt(m) * math.log(4 / d_reg) / e_reg
    gamma = sigma * math.sqrt(2 * m) * (4 * math.sqrt(d) + 2 * math.log(2 * T if variant == "paper" else T * T))
    x = np.random.default_rng(5).normal(size=d)
    x /= np.linalg.norm(x)                                   # ‖[x; y]‖ = √1.09 < L̃: no clipping
    a = np.append(x, 0.3)
    off, diag = [], []
    iu = np.triu_indices(d + 1, k=1)
    for seed in range(4):
        pol = PrivateFairGreedy(K, d, T, variant=variant, rng=np.random.default_rng(0), epsilon=eps, delta=delta,
                                alpha_eps=ae, alpha_delta=ad, L_tilde=L, reg_rng=np.random.default_rng(seed),
                                rank_normals=np.zeros((T, K)))
        assert pol.m == m == 6 and pol.sigma_noise == pytest.approx(sigma, rel=1e-12)
        assert pol.tree.sigma == pol.sigma_noise and pol.gamma == pytest.approx(gamma, rel=1e-12)
        pol._feed(x, 0.3)
        assert pol.clipped == 0
        noise = pol.tree.release() - np.outer(a, a) - 2 * gamma * np.eye(d + 1)
        np.testing.assert_allclose(noise, noise.T, rtol=0, atol=1e-9 * gamma)
        off.append(noise[iu])
        diag.append(np.diag(noise))
    off, diag = np.concatenate(off), np.concatenate(diag)
    assert off.size == 840 and diag.size == 84
    assert np.sqrt(np.mean(off**2)) == pytest.approx(sigma, rel=0.10)
    assert np.sqrt(np.mean(diag**2)) == pytest.approx(math.sqrt(2) * sigma, rel=0.30)
