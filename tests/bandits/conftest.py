"""Small continuous bandit environments for the policy and simulator tests."""

from __future__ import annotations

import numpy as np
import pytest

from repro.bandits.environments import BanditEnvironment


def gaussian_env(*, n_arms: int = 4, n: int = 3000, dim: int = 6, seed: int = 0) -> BanditEnvironment:
    """Groups with different Gaussian feature means (continuous, so no exact ties), bias column first."""
    rng = np.random.default_rng(seed)
    pools = rng.normal(size=(n_arms, n, dim))
    pools[..., 0] = 1.0
    pools[..., 1:] += rng.normal(0, 0.7, size=(n_arms, 1, dim - 1))
    theta = rng.normal(size=dim)
    rewards = pools @ theta
    L = float(np.sqrt((pools**2).sum(-1) + rewards**2).max())
    return BanditEnvironment(name="synthetic", pools=pools, theta_star=theta, sorted_rewards=np.sort(rewards, axis=1),
                             group_codes=tuple(range(1, n_arms + 1)), L_tilde=L, description="test env")


@pytest.fixture(scope="session")
def small_env() -> BanditEnvironment:
    return gaussian_env()
