"""The ACS frames live in the datasets layer; the bandit environments build on them (spec seed-001 §6)."""

from __future__ import annotations

import numpy as np

from repro.bandits import environments as envs
from repro.datasets import acs


def test_bandit_environments_use_the_datasets_acs_code() -> None:
    assert envs.preprocess_acs_frame is acs.preprocess_acs_frame
    assert envs.synthetic_acs_frame is acs.synthetic_acs_frame
    assert envs.ACS_FEATURES == acs.ACS_FEATURES


def test_ca_extract_frame_maps_the_income_indicator(tmp_path) -> None:
    raw = acs.synthetic_acs_frame(20, rng=np.random.default_rng(0)).drop(columns="PWGTP")
    raw["PINCP"] = np.where(raw["PINCP"] > 50_000, "True", "False")
    path = tmp_path / "extract.csv"
    raw.to_csv(path, index=False)
    frame = acs.load_acs_ca_extract_frame(path)
    assert set(frame["income"].unique()) <= {0.0, 1.0}
    assert len(frame) == int(((raw["AGEP"] > 16) & (raw["WKHP"] > 0)).sum())
    env = envs.load_acs_ca_extract(n_per_group=10, rng=np.random.default_rng(1), path=path)
    assert env.name == "acs-ca-extract" and env.pools.shape == (4, 10, 25)
