"""The block simulator equals the per-round reference (spec seed-001 §5, §7.3; issue 34).

:func:`repro.bandits.simulate.simulate` decides the rank policies' rounds in blocks (θ̂ known for a
block in advance, one product per θ̂ version tile, counts by word sums); the per-round simulator it
replaced is :func:`repro._testing.bandits_reference.simulate_reference`. Same draws, same actions.
"""

from __future__ import annotations

import numpy as np
import pytest

from repro._testing.bandits_reference import simulate_reference
from repro.bandits import simulate as sim
from repro.bandits.policies import OFUL, FairGreedy, GMFOracle, PrivateFairGreedy, UniformRandom
from repro.errors import InvalidParameterError
from repro.privacy.tree_mechanism import TreeMechanism
from tests.bandits.conftest import gaussian_env


def _policies(env, T, X, variant, *, epsilons=(1.0, 15.0, 1e4)):
    """Every policy kind, each with its own generators (PFG configurations share their streams' seeds)."""
    xs = float(np.linalg.norm(env.pools, axis=-1).max())
    normals = np.random.default_rng(7).standard_normal((T, env.n_arms))
    out = [OFUL(env.dim), FairGreedy(env.n_arms, env.dim, T, variant=variant, rng=np.random.default_rng(1),
                                     history=X, x_scale=xs)]
    out += [PrivateFairGreedy(env.n_arms, env.dim, T, variant=variant, rng=np.random.default_rng(1), history=X,
                              x_scale=xs, epsilon=e, delta=0.1, alpha_eps=0.9, alpha_delta=0.9, L_tilde=env.L_tilde,
                              reg_rng=np.random.default_rng(3), rank_normals=normals) for e in epsilons]
    out += [UniformRandom(env.n_arms, rng=np.random.default_rng(9)), GMFOracle(env.theta_star, env.true_ranks)]
    return out


def _run_both(env, T, variant, seed=0, **kw):
    stream = sim.draw_stream(env, T, data_rng=np.random.default_rng(seed), noise_rng=np.random.default_rng(seed + 1))
    X = sim.stream_contexts(env, stream)
    fast_pols, ref_pols = _policies(env, T, X, variant, **kw), _policies(env, T, X, variant, **kw)
    fast, fast_opt = sim.simulate(env, fast_pols, stream, contexts=X)
    ref, ref_opt = simulate_reference(env, ref_pols, stream, contexts=X)
    return fast, ref, fast_pols, ref_pols, (fast_opt, ref_opt)


@pytest.mark.parametrize("variant", ["reference", "paper"])
@pytest.mark.parametrize("T", [2, 3, 4, 9, 64, 700])
def test_block_simulator_equals_per_round_reference(variant: str, T: int) -> None:
    env = gaussian_env(seed=T % 3)
    fast, ref, fast_pols, ref_pols, (fo, ro) = _run_both(env, T, variant)
    for a, b in zip(fast, ref, strict=True):
        assert a.name == b.name
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.exp_reward, b.exp_reward)
        np.testing.assert_array_equal(a.fair_reward, b.fair_reward)
    for key in fo:
        np.testing.assert_array_equal(fo[key], ro[key])
    for p, q in zip(fast_pols, ref_pols, strict=True):
        if isinstance(p, PrivateFairGreedy | FairGreedy):  # same regression state afterwards
            np.testing.assert_array_equal(p.theta_hat, q.theta_hat)
            assert p.n_fed == q.n_fed
        if isinstance(p, PrivateFairGreedy):
            assert p.clipped == q.clipped
            # the regression's generator is where drawing one node at a time leaves it
            assert p.tree.rng.bit_generator.state == q.tree.rng.bit_generator.state
        if hasattr(p, "rng") and isinstance(p.rng, np.random.Generator):
            assert p.rng.bit_generator.state == q.rng.bit_generator.state


@pytest.mark.parametrize("variant", ["reference", "paper"])
def test_small_blocks_tiles_and_version_batches_change_nothing(monkeypatch, variant: str) -> None:
    """Blocks, tiles and version batches far smaller than the defaults: every edge (a window split across
    tiles, a group cut by a block, a partial version batch) is crossed many times."""
    env = gaussian_env(n=800, seed=4)
    monkeypatch.setattr(sim, "BLOCK", 37)
    monkeypatch.setattr(sim, "VERSIONS", 3)
    monkeypatch.setattr(sim, "TILE", 24)
    fast, ref, *_ = _run_both(env, 400, variant, seed=5, epsilons=(2.0, 50.0))
    for a, b in zip(fast, ref, strict=True):
        np.testing.assert_array_equal(a.actions, b.actions)


def test_ties_from_identical_contexts_count_as_below() -> None:
    """A pool with few distinct rows: many window rows equal the candidate (ties within the tie band)."""
    env = gaussian_env(n=3000, seed=2)
    pools = env.pools.copy()
    pools[:] = pools[:, np.arange(3000) % 7]  # 7 distinct rows per group
    from repro.bandits.environments import BanditEnvironment

    tied = BanditEnvironment(name="synthetic", pools=pools, theta_star=env.theta_star,
                             sorted_rewards=np.sort(pools @ env.theta_star, axis=1), group_codes=env.group_codes,
                             L_tilde=env.L_tilde, description="tied")
    for variant in ("reference", "paper"):
        fast, ref, *_ = _run_both(tied, 300, variant, seed=8)
        for a, b in zip(fast, ref, strict=True):
            np.testing.assert_array_equal(a.actions, b.actions)


def test_simulator_rejects_a_generator_shared_by_two_policies(small_env) -> None:
    env, T = small_env, 20
    stream = sim.draw_stream(env, T, data_rng=np.random.default_rng(0), noise_rng=np.random.default_rng(1))
    g = np.random.default_rng(0)
    with pytest.raises(InvalidParameterError, match="shares its rng generator"):
        sim.simulate(env, [UniformRandom(env.n_arms, rng=g), UniformRandom(env.n_arms, rng=g)], stream)


def test_choose_many_equals_choose_round_by_round(small_env) -> None:
    env = small_env
    rng = np.random.default_rng(0)
    ecdf = rng.integers(0, 4, size=(200, env.n_arms)) / 4.0  # many ties
    ts = np.arange(3, 203)
    for variant in ("reference", "paper"):
        one = FairGreedy(env.n_arms, env.dim, 300, variant=variant, rng=np.random.default_rng(11))
        many = FairGreedy(env.n_arms, env.dim, 300, variant=variant, rng=np.random.default_rng(11))
        expected = [one.choose(int(t), ecdf[i]) for i, t in enumerate(ts)]
        np.testing.assert_array_equal(many.choose_many(ts, ecdf), expected)
        assert one.rng.bit_generator.state == many.rng.bit_generator.state


@pytest.mark.parametrize("per_node", [True, False])
def test_tree_prefetch_gives_the_same_releases_and_generator_state(per_node: bool) -> None:
    def releases(prefetch: int, planned: int | None) -> tuple[list[np.ndarray], dict]:
        tree = TreeMechanism(3, 40, 0.7, shift=2.0, shift_per_node=per_node, rng=np.random.default_rng(5),
                             prefetch=prefetch, planned=planned)
        items = np.random.default_rng(6).normal(size=(33, 3))
        return [tree.update(np.outer(a, a)) for a in items], tree.rng.bit_generator.state

    one, state_one = releases(1, None)
    for prefetch, planned in ((4, 33), (8, 33), (64, 33), (5, 30)):  # 30 planned: the last 3 drawn one by one
        got, state = releases(prefetch, planned)
        for a, b in zip(one, got, strict=True):
            np.testing.assert_array_equal(a, b)
        assert state == state_one


def test_trees_with_generators_in_one_state_share_normals_exactly() -> None:
    """Common random numbers: the second tree reuses the first's standard normals, scaled by its own σ, and
    its generator ends where its own draws would have left it."""
    a = TreeMechanism(2, 16, 0.5, rng=np.random.default_rng(3), prefetch=8)
    b = TreeMechanism(2, 16, 2.0, rng=np.random.default_rng(3), prefetch=8)
    alone = TreeMechanism(2, 16, 2.0, rng=np.random.default_rng(3), prefetch=1)
    for i in range(16):
        item = np.full((2, 2), float(i))
        a.update(item)
        np.testing.assert_array_equal(b.update(item), alone.update(item))
    assert b.rng.bit_generator.state == alone.rng.bit_generator.state


@pytest.mark.parametrize("variant", ["reference", "paper"])
def test_thetas_of_a_block_are_the_bits_of_theta_round_by_round(variant: str) -> None:
    """The block simulator solves a block's regression systems in one call (issue 34): each θ̂ equals, bit for
    bit, what :meth:`theta` returns round by round, for Fair-Greedy and Private-Fair-Greedy, from round 1 (no
    item yet: the initial zeros) on, across calls."""
    env, T = gaussian_env(seed=1), 120
    stream = sim.draw_stream(env, T, data_rng=np.random.default_rng(0), noise_rng=np.random.default_rng(1))
    X = sim.stream_contexts(env, stream)
    actions = np.random.default_rng(2).integers(0, env.n_arms, T)
    rewards = np.random.default_rng(3).normal(size=T)
    twins = _policies(env, T, X, variant), _policies(env, T, X, variant)
    for batched, single in ((twins[0][i], twins[1][i]) for i in (1, 2)):   # Fair-Greedy, a Private-Fair-Greedy
        for p in (batched, single):
            p.update_many(np.arange(1, T + 1), actions, rewards)
        rounds = np.arange(1, T + 1)
        got = np.concatenate([batched.thetas(rounds[:7]), batched.thetas(rounds[7:])])
        want = np.stack([single.theta(int(t)).copy() for t in rounds])
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(batched.theta_hat, single.theta_hat)
        assert batched.n_fed == single.n_fed and batched.theta_version == single.theta_version
        assert np.any(want[-1] != 0)
