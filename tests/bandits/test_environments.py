"""Environments: the shared ACS pipeline, the faithful folktables loader on small injected files,
the surrogate fallback and the mirror's ACS extract (spec seed-001 §6, §10 D8, D13, D15, D16)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from repro.bandits import environments as envs
from repro.errors import DataUnavailableError
from repro.studies.pfg.regret_and_sweeps import resolve_environment


def _frame(n: int, seed: int) -> pd.DataFrame:
    return envs.synthetic_acs_frame(n, rng=np.random.default_rng(seed))


def test_preprocess_filters_and_one_hot() -> None:
    raw = pd.DataFrame({
        "AGEP": [15, 30, 40, 50], "COW": [1, 2, 3, 4], "SCHL": [10, 16, 21, np.nan], "MAR": [1, 5, 3, 1],
        "POBP": [6, 6, 6, 6], "RELP": [0, 1, 2, 0], "OCCP": [10, 20, 30, 40], "WKHP": [40, 0, 20, 35],
        "SEX": [1, 2, 2, 1], "RAC1P": [1, 2, 6, 9], "PINCP": [5e4, 6e4, 7e4, 50.0], "PWGTP": [1, 1, 1, 1],
    })
    out = envs.preprocess_acs_frame(raw)
    # AGEP 15 (≤ 16), WKHP 0 and PINCP 50 (≤ 100) are dropped
    assert out.index.tolist() == [2]
    row = out.iloc[0]
    assert row["MAR_3"] == 1 and row[["MAR_1", "MAR_2", "MAR_4", "MAR_5"]].sum() == 0
    assert row["SEX_2"] == 1 and row["RAC1P_6"] == 1 and row["group"] == 6
    assert list(out.columns[:23]) == list(envs.ACS_FEATURES)
    kept = envs.preprocess_acs_frame(raw, income_filter=False)
    assert kept.index.tolist() == [2, 3] and kept.loc[3, "SCHL"] == 0.0  # NaN → 0 (the code's nan_to_num quirk)


def test_pipeline_on_noise_free_linear_income() -> None:
    """If income is exactly linear in the features, θ* (OLS on 80 %) reproduces the standardized income,
    the design is [1, 0, standardized features] with d = 25, and L̃ = max √(‖x‖² + y²)."""
    frame = envs.preprocess_acs_frame(_frame(600, 0))
    w = np.random.default_rng(1).normal(size=23)
    frame["income"] = frame[list(envs.ACS_FEATURES)].to_numpy() @ w + 5.0
    env = envs.build_environment(frame, frame, name="synthetic", description="t", n_per_group=800,
                                 rng=np.random.default_rng(2), n_groups=4)
    assert env.pools.shape == (4, 800, 25) and env.dim == 25
    assert np.all(env.pools[..., 0] == 1.0) and np.all(env.pools[..., 1] == 0.0)
    assert env.group_codes == (1, 2, 6, 8)
    rewards = env.pools @ env.theta_star
    # with exact linearity the fitted reward equals the standardized income of every pool row
    np.testing.assert_allclose(rewards, env.incomes, atol=1e-6)
    assert env.incomes.std() > 0.5
    np.testing.assert_allclose(env.sorted_rewards, np.sort(rewards, axis=1))
    L = np.sqrt((env.pools**2).sum(-1) + env.incomes**2).max()
    assert env.L_tilde == pytest.approx(L, rel=1e-12)
    ranks = env.true_ranks(np.stack([env.sorted_rewards[:, -1]] * 2))
    assert np.all(ranks == 1.0)


def test_group_rule_min_count() -> None:
    frame = envs.preprocess_acs_frame(_frame(300, 3))
    frame = frame[~((frame["group"] == 8) & (frame.index % 2 == 0))]  # group 8 now has fewer rows
    n8 = int((frame["group"] == 8).sum())
    env = envs.build_environment(frame, frame, name="synthetic", description="t", n_per_group=50,
                                 rng=np.random.default_rng(0), min_group_count=n8 + 1, n_groups=None)
    assert env.group_codes == (1, 2, 6)
    with pytest.raises(DataUnavailableError, match="group"):
        envs.build_environment(frame, frame, name="synthetic", description="t", n_per_group=50,
                               rng=np.random.default_rng(0), min_group_count=10**6, n_groups=None)


def _write_psam(root: Path, year: int, fips: str, frame: pd.DataFrame) -> None:
    folder = root / str(year) / "1-Year"
    folder.mkdir(parents=True, exist_ok=True)
    out = frame.copy()
    out.insert(0, "RT", "P")
    out.insert(1, "SERIALNO", [f"{year}{i:07d}" for i in range(len(out))])
    out.to_csv(folder / f"psam_p{fips}.csv", index=False)


def test_faithful_loader_reads_folktables_layout(tmp_path: Path) -> None:
    """Small synthetic psam_p*.csv files laid out where folktables looks (no download)."""
    root = tmp_path / "acs"
    assert not envs.acs_files_present(root, states=["CA", "PR"])
    for year, seed in ((2017, 10), (2018, 11)):
        _write_psam(root, year, "06", _frame(150, seed))
        _write_psam(root, year, "72", _frame(100, seed + 5))
    assert envs.acs_files_present(root, states=["CA", "PR"])
    assert not envs.acs_files_present(root)  # all states are needed by default
    env = envs.load_acs(n_per_group=200, rng=np.random.default_rng(42), root=root, states=["CA", "PR"],
                        min_group_count=200)
    assert env.name == "acs" and env.dim == 25 and env.group_codes == (1, 2, 6, 8)
    assert "2017 fits the scalers" in env.description
    again = envs.load_acs(n_per_group=200, rng=np.random.default_rng(42), root=root, states=["CA", "PR"],
                          min_group_count=200)
    np.testing.assert_array_equal(env.pools, again.pools)


def test_faithful_loader_missing_files_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(DataUnavailableError, match="acs_download"):
        envs.load_acs(n_per_group=10, rng=np.random.default_rng(0), root=tmp_path, states=["CA"])


def test_acs_falls_back_to_declared_surrogate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_ACS_DIR", str(tmp_path / "none"))
    # the keys the experiment files declare (the study reads them as params[key])
    base = {"acs_download": False, "acs_dir": "", "acs_states": "", "env_fallback": "acs-ca-extract"}
    used, label = resolve_environment({**base, "env": "acs"})
    assert used == "acs-ca-extract" and "substituted for acs" in label
    used, label = resolve_environment({**base, "env": "synthetic"})
    assert (used, label) == ("synthetic", "synthetic")
    root = tmp_path / "acs"
    for year in (2017, 2018):
        _write_psam(root, year, "06", _frame(20, year))
    used, _ = resolve_environment({**base, "env": "acs", "acs_dir": str(root), "acs_states": "CA"})
    assert used == "acs"
    with pytest.raises(Exception, match="env"):
        resolve_environment({**base, "env": "census"})


@pytest.mark.data
def test_acs_ca_extract_surrogate(data_mirror: Path, isolated_data_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    env = envs.load_acs_ca_extract(n_per_group=2000, rng=np.random.default_rng(42))
    assert env.name == "acs-ca-extract" and env.dim == 25
    assert env.group_codes == (1, 2, 6, 8)  # the 4 most populous RAC1P codes of the extract
    assert "PINCP > 50,000" in env.description
    assert env.info["income"] == "indicator PINCP>50000"
    # θ* fitted to a 0/1 indicator: the group means of the fitted reward are ordered like the >50K rates
    means = env.info["reward_mean_per_group"]
    assert means[2] > means[3]  # Asian (6) above "some other race" (8) in CA


def test_download_goes_through_folktables_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With download=True the loader asks folktables to fetch into <data cache>/acs (no network here:
    folktables' get_data is replaced by a recorder serving the injected frames)."""
    import folktables

    calls = []

    def fake_get_data(self, states=None, density=1.0, random_seed=0, join_household=False, download=False):
        calls.append((self._root_dir, self._survey_year, download))
        return _frame(150, int(self._survey_year))

    monkeypatch.setattr(folktables.ACSDataSource, "get_data", fake_get_data)
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("REPRO_ACS_DIR", raising=False)
    env = envs.load_acs(n_per_group=100, rng=np.random.default_rng(0), download=True, min_group_count=100)
    assert [c[1:] for c in calls] == [("2017", True), ("2018", True)]
    assert all(Path(c[0]) == tmp_path / "cache" / "acs" for c in calls)
    assert env.name == "acs"
