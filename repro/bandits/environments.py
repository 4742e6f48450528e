"""Hiring environments for the fair contextual bandit: one candidate per group per round.

Three sources share one pipeline (spec §6, :func:`build_environment`):

``acs``
    The faithful pipeline: ACS PUMS person files through folktables (2017 fits the scalers, 2018
    supplies the pool and θ*), all states. Reads ``<acs_dir>/<year>/1-Year/psam_p<FIPS>.csv``
    (the layout folktables uses) and downloads them through folktables when asked to.
``acs-ca-extract``
    A surrogate: the mirror's ``derived/acs_income_ca_2018_test.csv`` (registered source
    ``acs-income-ca-2018-test``): real ACS 2018 California rows with the same features, but its
    income column is only the indicator PINCP > 50,000, so θ* is fitted to that indicator, there
    is no 2017 file (the scalers are fitted on the same sample) and the groups are the 4 most
    populous RAC1P codes (none reaches 50,001 rows).
``synthetic``
    An ACS-shaped generator (same schema, group-dependent feature and income distributions) run
    through the same pipeline; for tests and smoke runs.

Every environment carries its name and a description of what it is, and the study records both.

Spec: seed-001-bandit.md §5 (true CDFs), §6 (pipeline), §10 D8, D13, D15, D16.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from repro.datasets.acs import (
    ACS_COLUMNS,
    ACS_FEATURES,
    CA_EXTRACT_SOURCE,
    acs_files_present,
    default_acs_dir,
    load_acs_ca_extract_frame,
    load_acs_frames,
    preprocess_acs_frame,
    synthetic_acs_frame,
)
from repro.errors import DataUnavailableError

__all__ = [
    "ACS_FEATURES",
    "ACS_COLUMNS",
    "ENVIRONMENTS",
    "BanditEnvironment",
    "acs_files_present",
    "build_environment",
    "default_acs_dir",
    "load_acs",
    "load_acs_ca_extract",
    "make_synthetic",
    "preprocess_acs_frame",
    "synthetic_acs_frame",
]

log = logging.getLogger(__name__)

ENVIRONMENTS = ("acs", "acs-ca-extract", "synthetic")
CA_EXTRACT_NOTE = ("SURROGATE acs-ca-extract: real ACS 2018 California rows (folktables ACSIncome test "
                   "split, 39,133 rows) whose income column is only the indicator PINCP > 50,000; θ* is "
                   "fitted to that indicator, the scalers to the same 2018 sample (no 2017 file), groups = "
                   "the 4 most populous RAC1P codes, pools bootstrapped up to n_per_group rows.")
SYNTHETIC_NOTE = ("SYNTHETIC: ACS-shaped generator (same schema, group-dependent feature and log-normal "
                  "income distributions), not census data.")


@dataclass(frozen=True)
class BanditEnvironment:
    """A fixed problem instance: candidate pools per group, θ* and the true group CDFs.

    Attributes
    ----------
    name
        ``acs``, ``acs-ca-extract`` or ``synthetic``.
    pools
        Candidate contexts, shape (K, n, d); arm k draws from ``pools[k]``.
    theta_star
        True reward parameter (d,): expected reward ⟨x, θ*⟩.
    sorted_rewards
        ⟨x, θ*⟩ over each group's pool, sorted, shape (K, n): the true CDF F_k is the
        empirical CDF of these values (spec §5, D8).
    group_codes
        RAC1P code of each arm (G1..GK in ascending code order, D15).
    L_tilde
        max √(‖x‖² + y²) over the pool with the real standardized income y (spec §3.2, D5).
    description
        What the data is (states the surrogate's limits).
    incomes
        The pool's standardized real income (K, n), the y of L̃ (not the simulated reward).

    Spec: seed-001 §5, §6.
    """

    name: str
    pools: np.ndarray
    theta_star: np.ndarray
    sorted_rewards: np.ndarray
    group_codes: tuple[int, ...]
    L_tilde: float
    description: str
    feature_names: tuple[str, ...] = ()
    info: dict = field(default_factory=dict)
    incomes: np.ndarray | None = None

    @property
    def n_arms(self) -> int:
        return int(self.pools.shape[0])

    @property
    def n_per_group(self) -> int:
        return int(self.pools.shape[1])

    @property
    def dim(self) -> int:
        return int(self.pools.shape[2])

    def true_ranks(self, expected_rewards: np.ndarray) -> np.ndarray:
        """F_k(r) = fraction of group k's pool with ⟨x, θ*⟩ ≤ r, for rewards of shape (..., K).

        Spec: seed-001 §5 (``searchsorted(sorted_k, r, side="right") / n``).
        """
        r = np.asarray(expected_rewards, dtype=float)
        out = np.empty_like(r)
        n = self.sorted_rewards.shape[1]
        for k in range(self.n_arms):
            out[..., k] = np.searchsorted(self.sorted_rewards[k], r[..., k], side="right") / n
        return out


# --------------------------------------------------------------------------- shared pipeline



def _equal_groups(frame: pd.DataFrame, codes: Sequence[int], n: int, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray]:
    """n rows per group drawn with replacement: x (K, n, 23) and y (K, n). Spec: §6 step 5."""
    feats = frame[list(ACS_FEATURES)].to_numpy(dtype=float)
    y = frame["income"].to_numpy(dtype=float)
    g = frame["group"].to_numpy()
    xs, ys = [], []
    for code in codes:
        rows = np.flatnonzero(g == code)
        pick = rows[rng.integers(0, rows.size, size=n)]
        xs.append(feats[pick])
        ys.append(y[pick])
    return np.stack(xs), np.stack(ys)


def _select_groups(frame: pd.DataFrame, *, min_count: int | None, n_groups: int | None) -> tuple[int, ...]:
    counts = frame["group"].value_counts()
    if min_count is not None:
        codes = sorted(int(c) for c, v in counts.items() if v >= min_count)
    else:
        codes = sorted(int(c) for c in counts.sort_values(ascending=False, kind="stable").index[: n_groups])
    if len(codes) < 2:
        raise DataUnavailableError(
            f"the group rule kept {len(codes)} RAC1P group(s) (counts: {counts.to_dict()}); a bandit needs >= 2. "
            "Lower n_per_group / min_group_count or use more states.")
    return tuple(codes)


def build_environment(scaler_frame: pd.DataFrame, pool_frame: pd.DataFrame, *, name: str, description: str,
                      n_per_group: int, rng: np.random.Generator, min_group_count: int | None = None,
                      n_groups: int | None = 4, theta_ridge: float = 1e-8, train_fraction: float = 0.8,
                      info: dict | None = None) -> BanditEnvironment:
    """Run the reference pipeline on two preprocessed frames (scalers from one, pool from the other).

    Groups: RAC1P codes with ≥ ``min_group_count`` rows in the pool frame (the paper's rule, with
    ``min_group_count = n_per_group``), else the ``n_groups`` most populous. Each kept group gets
    ``n_per_group`` rows drawn with replacement; features are standardized with the scaler frame's
    equal-group sample, giving x = [1, 0, 23 standardized features] (d = 25); income likewise.
    θ* = (XᵀX + 1e−8 I)⁻¹ Xᵀy on a random 80 % of the pooled pool sample (the pool is not held out:
    D16). ``rng`` is the fixed problem stream (the reference seeds it with 42).

    Spec: seed-001 §6 steps 5–7, §5, §10 D8, D16.
    """
    codes = _select_groups(pool_frame, min_count=min_group_count, n_groups=n_groups)
    scaler_codes = [c for c in codes if (scaler_frame["group"] == c).any()]
    if len(scaler_codes) != len(codes):
        raise DataUnavailableError(f"the scaler data lacks groups {sorted(set(codes) - set(scaler_codes))}.")
    xa, ya = _equal_groups(scaler_frame, codes, n_per_group, rng)
    xb, yb = _equal_groups(pool_frame, codes, n_per_group, rng)
    K, n, p = xb.shape
    flat_a = xa.reshape(-1, p)
    mean = flat_a.mean(axis=0)
    std = flat_a.std(axis=0)
    std[std == 0] = 1.0
    y_mean, y_std = float(ya.mean()), float(ya.std()) or 1.0

    def transform(x: np.ndarray) -> np.ndarray:
        z = (x - mean) / std
        ones = np.ones((*x.shape[:-1], 1))
        # [bias 1, PolynomialFeatures' constant standardized to 0, standardized features]
        return np.concatenate([ones, np.zeros_like(ones), z], axis=-1)

    pools = transform(xb)
    y = (yb - y_mean) / y_std
    d = pools.shape[-1]
    X_all = pools.reshape(-1, d)
    y_all = y.reshape(-1)
    perm = rng.permutation(X_all.shape[0])
    n_train = int(round(train_fraction * X_all.shape[0]))
    tr = perm[:n_train]
    theta = np.linalg.solve(X_all[tr].T @ X_all[tr] + theta_ridge * np.eye(d), X_all[tr].T @ y_all[tr])
    rewards = pools @ theta
    L_tilde = float(np.sqrt((pools**2).sum(axis=-1) + y**2).max())
    meta = {"group_codes": list(codes), "n_per_group": n, "d": d,
            "distinct_rows_per_group": [int(np.unique(xb[k], axis=0).shape[0]) for k in range(K)],
            "reward_mean_per_group": [float(v) for v in rewards.mean(axis=1)],
            "L_tilde": L_tilde, **(info or {})}
    return BanditEnvironment(name=name, pools=pools, theta_star=theta, sorted_rewards=np.sort(rewards, axis=1),
                             group_codes=codes, L_tilde=L_tilde, description=description,
                             feature_names=("bias", "poly_const", *ACS_FEATURES), info=meta, incomes=y)


# --------------------------------------------------------------------------- synthetic



def make_synthetic(*, n_per_group: int, rng: np.random.Generator, n_raw: int = 4000) -> BanditEnvironment:
    """The synthetic environment: two generated "years" through :func:`build_environment`.

    Spec: seed-001 §6 plan (b).
    """
    scaler = preprocess_acs_frame(synthetic_acs_frame(n_raw, rng=rng))
    pool = preprocess_acs_frame(synthetic_acs_frame(n_raw, rng=rng))
    return build_environment(scaler, pool, name="synthetic", description=SYNTHETIC_NOTE,
                             n_per_group=n_per_group, rng=rng, n_groups=4)


# --------------------------------------------------------------------------- ACS extract (surrogate)


def load_acs_ca_extract(*, n_per_group: int, rng: np.random.Generator, path: Path | None = None
                        ) -> BanditEnvironment:
    """The surrogate ``acs-ca-extract`` environment (frame: :func:`repro.datasets.acs.load_acs_ca_extract_frame`).

    θ* is a linear-probability fit to the income indicator. Spec: seed-001 §6 "Data availability risk".
    """
    frame = load_acs_ca_extract_frame(path)
    return build_environment(frame, frame, name="acs-ca-extract", description=CA_EXTRACT_NOTE,
                             n_per_group=n_per_group, rng=rng, n_groups=4,
                             info={"source": CA_EXTRACT_SOURCE, "income": "indicator PINCP>50000"})


def load_acs(*, n_per_group: int, rng: np.random.Generator, root: Path | None = None,
             states: Sequence[str] | None = None, download: bool = False, scaler_year: int = 2017,
             pool_year: int = 2018, min_group_count: int | None = None) -> BanditEnvironment:
    """The faithful ``acs`` environment (frames: :func:`repro.datasets.acs.load_acs_frames`).

    ``min_group_count`` defaults to ``n_per_group`` (the paper's "≥ 50,001 rows" rule).

    Spec: seed-001 §6 steps 1–10.
    """
    scaler, pool, root = load_acs_frames(root, states=states, download=download, scaler_year=scaler_year,
                                         pool_year=pool_year)
    desc = (f"ACS PUMS 1-Year person files via folktables ({'all states + PR' if not states else ','.join(states)}); "
            f"{scaler_year} fits the scalers, {pool_year} the pool and θ*.")
    return build_environment(scaler, pool, name="acs", description=desc, n_per_group=n_per_group, rng=rng,
                             min_group_count=n_per_group if min_group_count is None else min_group_count,
                             n_groups=None, info={"root": str(root), "states": list(states) if states else "all"})

