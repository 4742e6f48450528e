"""Trial cache integrity (issue #15, item 6): a corrupted entry is detected and recomputed, never used."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from repro.engine.cache import TrialCache
from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import load_experiment

FIXTURE = Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml"


def entries(root: Path) -> list[Path]:
    return sorted((root / ".cache" / "toy").glob("*/*.pkl"))


def test_roundtrip_and_flipped_byte_is_a_miss(tmp_path: Path) -> None:
    cache = TrialCache(tmp_path, "exp")
    cache.put("ab" * 32, {"output": [1.5, 2.5], "seconds": 0.1})
    assert cache.get("ab" * 32) == {"output": [1.5, 2.5], "seconds": 0.1}
    path = cache._path("ab" * 32)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01  # inside the pickle payload: still unpicklable or a different float
    path.write_bytes(bytes(data))
    assert cache.get("ab" * 32) is None
    assert not path.exists() and cache.n_corrupt == 1


def test_entry_without_checksum_is_corrupt(tmp_path: Path) -> None:
    """A bare pickle (the old format, or one written by hand) is not trusted."""
    cache = TrialCache(tmp_path, "exp")
    path = cache._path("cd" * 32)
    path.parent.mkdir(parents=True)
    path.write_bytes(pickle.dumps({"output": 1, "seconds": 0.0}))
    assert cache.get("cd" * 32) is None and not path.exists()


def test_wrong_structure_is_corrupt(tmp_path: Path) -> None:
    cache = TrialCache(tmp_path, "exp", validate=lambda v: isinstance(v, dict) and "output" in v)
    cache.put("ef" * 32, {"not-output": 1})
    assert cache.get("ef" * 32) is None and cache.n_corrupt == 1


def test_flipped_metric_byte_in_a_cached_trial_is_recomputed(tmp_path: Path) -> None:
    """The defect: a flipped byte inside a cached float changed a metric silently."""
    spec = load_experiment(FIXTURE)
    config = RunConfig(out=tmp_path)
    first = run_experiment(spec, config)
    path = entries(tmp_path)[0]
    data = bytearray(path.read_bytes())
    # flip the lowest mantissa bit of the first 8-byte float (pickle BINFLOAT opcode 'G')
    at = data.index(b"G", len(b"repro-trial-v2\n") + 32) + 8
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    second = run_experiment(spec, config)
    assert second.n_cached == first.n_trials - 1
    cols = ["method", "setting", "repetition", "value", "shared"]
    a = first.trials[cols].sort_values(cols[:3]).reset_index(drop=True)
    b = second.trials[cols].sort_values(cols[:3]).reset_index(drop=True)
    assert a.equals(b)


@pytest.mark.parametrize("payload", [{"seconds": 1.0}, {"output": "x", "seconds": 1.0}, [1, 2]])
def test_valid_pickle_of_the_wrong_structure_is_recomputed(tmp_path: Path, payload: object) -> None:
    """Used to raise ``KeyError: 'output'``; now the entry is recomputed."""
    spec = load_experiment(FIXTURE)
    config = RunConfig(out=tmp_path)
    first = run_experiment(spec, config)
    path = entries(tmp_path)[0]
    key = path.stem
    TrialCache(tmp_path / ".cache", "toy").put(key, payload)
    second = run_experiment(spec, config)
    assert second.n_cached == first.n_trials - 1


def test_corrupt_entries_are_reported_in_one_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An old cache with many entries must not print one warning per entry."""
    import logging

    spec = load_experiment(FIXTURE)
    config = RunConfig(out=tmp_path)
    run_experiment(spec, config)
    for path in entries(tmp_path)[:5]:
        path.write_bytes(b"garbage")
    with caplog.at_level(logging.WARNING):
        again = run_experiment(spec, config)
    assert again.n_cached == again.n_trials - 5
    lines = [r.getMessage() for r in caplog.records if "trial-cache" in r.getMessage()]
    assert lines == ["5 trial-cache entries of 'toy' failed the checksum or structure check (or predate it) "
                     "and will be recomputed"]


def test_shared_value_is_computed_once_and_kept_on_disk(tmp_path, monkeypatch) -> None:
    from repro.engine import cache as cache_mod

    calls = []

    def compute():
        calls.append(1)
        return {"L": 2.0, "calls": len(calls)}

    monkeypatch.setattr(cache_mod, "_SHARED", {})
    module = "repro._testing.noop"
    first = cache_mod.shared_value(tmp_path, "tuning", {"eps": 1.0}, module, compute)
    monkeypatch.setattr(cache_mod, "_SHARED", {})     # a new process: only the disk entry is left
    again = cache_mod.shared_value(tmp_path, "tuning", {"eps": 1.0}, module, compute)
    assert first == again == {"L": 2.0, "calls": 1} and len(calls) == 1
    other = cache_mod.shared_value(tmp_path, "tuning", {"eps": 3.0}, module, compute)
    assert other["calls"] == 2
    # a corrupt entry is recomputed, never used
    monkeypatch.setattr(cache_mod, "_SHARED", {})
    for p in (tmp_path / "_shared" / "tuning").glob("*/*.pkl"):
        p.write_bytes(p.read_bytes()[:-3])
    assert cache_mod.shared_value(tmp_path, "tuning", {"eps": 1.0}, module, compute)["calls"] == 3
    # without a cache directory the value is memoized in the process only
    monkeypatch.setattr(cache_mod, "_SHARED", {})
    assert cache_mod.shared_value(None, "tuning", {"eps": 1.0}, module, compute)["calls"] == 4
    assert cache_mod.shared_value(None, "tuning", {"eps": 1.0}, module, compute)["calls"] == 4
