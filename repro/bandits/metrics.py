"""Pseudo-regret, fair pseudo-regret and group selection shares.

Spec: seed-001-bandit.md §1 Definition 2, §5, §8 (Figure 1 and 2 quantities), §10 D14.
"""

from __future__ import annotations

import numpy as np

__all__ = ["curve_points", "group_shares", "regret_curves", "trace_metrics"]


def regret_curves(exp_reward: np.ndarray, fair_reward: np.ndarray, exp_max: np.ndarray, fair_max: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative pseudo-regret Σ(max_k ⟨X_k,t, θ*⟩ − ⟨X_{k_t},t, θ*⟩) and fair pseudo-regret
    Σ(max_k F_k(·) − F_{k_t}(·)), both of shape (T,).

    Spec: seed-001 §1 Definition 2, §5.
    """
    return np.cumsum(exp_max - exp_reward), np.cumsum(fair_max - fair_reward)


def group_shares(actions: np.ndarray, n_arms: int) -> np.ndarray:
    """Percentage of rounds each arm/group was chosen, by ``bincount`` (not np.histogram: D14).

    Spec: seed-001 §8 Figure 1, §10 D14.
    """
    return 100.0 * np.bincount(np.asarray(actions, dtype=np.int64), minlength=n_arms) / len(actions)


def curve_points(horizon: int, n_points: int = 500) -> np.ndarray:
    """1-based rounds at which curves are stored: ~n_points evenly spaced, always including 1 and T."""
    pts = np.unique(np.linspace(1, horizon, min(n_points, horizon)).round().astype(np.int64))
    return pts


def trace_metrics(actions: np.ndarray, exp_reward: np.ndarray, fair_reward: np.ndarray, exp_max: np.ndarray,
                  fair_max: np.ndarray, n_arms: int) -> dict[str, float]:
    """Scalar metrics of one run: final regrets (exact), per-round rates, the half-horizon value and the
    second-half/first-half increment ratio (≈ 1 linear, < 1 concave), and group shares.

    Spec: seed-001 §8 (targets: FG ≪ OFUL < PFG, PFG concave, OFUL linear, shares ≈ 25 %).
    """
    reg, fair = regret_curves(exp_reward, fair_reward, exp_max, fair_max)
    T = len(actions)
    half = fair[T // 2 - 1] if T >= 2 else fair[-1]
    out = {
        "fair_regret": float(fair[-1]),
        "regret": float(reg[-1]),
        "fair_regret_per_round": float(fair[-1] / T),
        "fair_regret_half": float(half),
        "fair_regret_growth_ratio": float((fair[-1] - half) / half) if half > 0 else float("nan"),
    }
    for k, v in enumerate(group_shares(actions, n_arms)):
        out[f"pct_g{k + 1}"] = float(v)
    return out
