"""One typed trial identity (issue #20, items 1-3, 7; issue #24, items 2-4).

Every spelling of a value is one trial (same seed, cache entry, results folder and paper match);
bad values are refused in one line before any trial runs; outputs are declared, never folded into
the identity; the trial-time total counts trials; a poisoned shared value is named and replaced.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

import pytest

from repro.cli._common import parse_set
from repro.engine import cache as cache_mod
from repro.engine.identity import TrialKey, canonical_json
from repro.engine.results import result_dir, write_results
from repro.engine.runner import TIMING_UNIT, RunConfig, plan_trials, run_experiment
from repro.engine.spec import load_experiment
from repro.errors import InvalidParameterError, TrialFailedError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml"

OUTPUTS_TOML = """
id = "outs"
title = "t"
document = "none"
section = "n/a"
spec = "n/a"
reproduces = "nothing"
kind = "simulation"
trial = "repro._testing.outputs"
[params]
x = 1.0
lams = [0.0, 0.5]
extra = ""
steps = 10
[grid]
method = ["m"]
epsilon = [1.0, 3.0]
[domains]
x = { gt = 0, lt = 5 }
steps = { min = 1, max = 100, integer = true }
extra = ["", "sigma"]
[profiles.smoke]
seeds = 2
[profiles.full]
seeds = 2
[[metrics]]
name = "value"
description = "v"
[[references]]
metric = "value"
method = "m"
setting = { epsilon = 1.0, lam = 0.5 }
value = 2.0
source = "made up"
"""


@pytest.fixture
def toy():
    return load_experiment(FIXTURE)


@pytest.fixture
def outs(tmp_path: Path):
    path = tmp_path / "outs.toml"
    path.write_text(OUTPUTS_TOML)
    return load_experiment(path)


# ------------------------------------------------------------------ typed values at the boundary

@pytest.mark.parametrize("text", ["1", "1.0", "1e0", " 1.00 ", "+1"])
def test_every_spelling_of_a_float_is_the_files_value(toy, text: str) -> None:
    assert toy.param_type("epsilon") == "float"
    typed = toy.coerce_overrides({"epsilon": [text]})
    assert typed == {"epsilon": [1.0]} and isinstance(typed["epsilon"][0], float)
    keys = [t.key for t in plan_trials(toy, RunConfig(overrides={"epsilon": [text]}))]
    assert keys == [t.key for t in plan_trials(toy, RunConfig(overrides={"epsilon": [1.0]}))]
    # the file's own 1.0 trials are among them: same key, same seed
    file_keys = {t.key for t in plan_trials(toy, RunConfig())}
    assert set(keys) <= file_keys


def test_an_integer_key_takes_integer_spellings_and_refuses_fractions(outs) -> None:
    assert outs.param_type("steps") == "int"
    assert outs.coerce_overrides({"steps": ["10", "2e1", "30.0"]}) == {"steps": [10, 20, 30]}
    with pytest.raises(InvalidParameterError, match=r"--set steps=2\.5: expected an integer"):
        outs.coerce_overrides({"steps": ["2.5"]})


@pytest.mark.parametrize(("key", "value", "message"), [
    ("epsilon", "inf", "not a finite number"),
    ("epsilon", "nan", "not a finite number"),
    ("epsilon", "1e400", "not a finite number"),
    ("epsilon", "-1", "must be > 0"),
    ("epsilon", "abc", "expected a number"),
    ("x", "0", "must be > 0"),
    ("x", "5", "must be < 5"),
    ("steps", "0", "must be >= 1"),
    ("steps", "101", "must be <= 100"),
])
def test_bad_values_are_one_line_naming_the_key(outs, key: str, value: str, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message) as err:
        run_experiment(outs, RunConfig(overrides={key: [value]}, use_cache=False))
    assert key in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("values", [["1", "1.0"], ["1", "1e0"]])
def test_a_value_given_twice_is_refused(toy, values: list[str]) -> None:
    with pytest.raises(InvalidParameterError, match="given twice"):
        toy.coerce_overrides({"epsilon": values})
    with pytest.raises(InvalidParameterError, match="given twice"):
        toy.coerce_overrides({"method": ["a", "a"]})


def test_parse_set_keeps_text_and_refuses_empty_items_and_repeated_keys() -> None:
    assert parse_set(["epsilon=1,3", "method=a"]) == {"epsilon": ["1", "3"], "method": ["a"]}
    with pytest.raises(InvalidParameterError, match="empty value"):
        parse_set(["epsilon=1,,3"])
    with pytest.raises(InvalidParameterError, match="given twice"):
        parse_set(["epsilon=1", "epsilon=3"])


def test_typed_overrides_name_one_results_folder(toy) -> None:
    folders = {result_dir(Path("r"), "toy", "smoke", "paper", "paper", toy.coerce_overrides({"epsilon": [v]}))
               for v in ("10", "10.0", "1e1")}
    assert len(folders) == 1


# ------------------------------------------------------------------ byte identity (issue #20, done-when)

def _without_timings(frame, spec):
    drop = {"seconds", "cached", *(m.name for m in spec.metrics if m.unit == TIMING_UNIT)}
    return frame.drop(columns=[c for c in drop if c in frame]).to_csv(index=False)


def test_set_10_and_10_0_and_the_files_value_give_identical_bytes(tmp_path: Path) -> None:
    text = FIXTURE.read_text().replace("epsilon = [1.0, 3.0]", "epsilon = [10.0]").replace(
        "setting = { epsilon = 1.0 }", "setting = { epsilon = 10.0 }")
    path = tmp_path / "toy.toml"
    path.write_text(text)
    spec = load_experiment(path)
    outcomes = [run_experiment(spec, RunConfig(out=tmp_path / f"o{i}", use_cache=False, overrides=o))
                for i, o in enumerate([{}, {"epsilon": ["10"]}, {"epsilon": ["10.0"]}, {"epsilon": [10]}])]
    summaries = {o.summary.to_csv(index=False) for o in outcomes}
    trials = {_without_timings(o.trials, spec) for o in outcomes}
    assert len(summaries) == 1 and len(trials) == 1
    assert outcomes[0].summary["paper"].notna().any()  # the paper value still matches
    # on disk too: the --set runs share one folder, whose files equal the file-value run's
    dirs = [write_results(o, command="t", dataset_sha256={}) for o in outcomes]
    assert dirs[1].name == dirs[2].name == dirs[3].name != dirs[0].name
    assert (dirs[0] / "summary.csv").read_bytes() == (dirs[1] / "summary.csv").read_bytes()


# ------------------------------------------------------------------ the key

def test_trial_key_is_typed_canonical_and_frozen() -> None:
    a = TrialKey.of("e", {"epsilon": 1.0, "method": "m", "n": 3}, repetition=1, grid_keys=("epsilon", "method"))
    b = TrialKey.of("e", {"n": 3, "method": "m", "epsilon": 1.0}, repetition=1, grid_keys=("method", "epsilon"))
    assert a == b and hash(a) == hash(b) and a.cache_key("c") == b.cache_key("c")
    assert '"epsilon":1.0' in a.params_json and '"n":3' in a.params_json
    assert a.cell == {"epsilon": 1.0, "method": "m"} and a.method == "m" and a.setting == "epsilon=1.0"
    other_rep = TrialKey.of("e", {"epsilon": 1.0, "method": "m", "n": 3}, repetition=2, grid_keys=("epsilon", "method"))
    assert a.seed_words() != other_rep.seed_words() and a.cache_key("c") != other_rep.cache_key("c")
    assert a.cache_key("c") != a.cache_key("d")  # the code version is part of the cache key
    with pytest.raises(AttributeError):
        a.repetition = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="not finite"):
        TrialKey.of("e", {"epsilon": float("inf")})


def test_seed_and_cache_key_come_from_the_key(toy) -> None:
    from repro.engine.cache import code_version

    for task in plan_trials(toy, RunConfig()):
        key = TrialKey.of("toy", {**toy.params, **task.cell}, repetition=task.context.repetition,
                          variant=None if task.cell["method"] == "b" else "paper", grid_keys=tuple(task.cell))
        assert task.context.key == key
        assert task.context.seed().entropy == (0, *key.seed_words())
        assert task.key == key.cache_key(code_version(toy.trial, "1"))
        assert canonical_json(task.context.key.cell) == canonical_json(task.cell)


# ------------------------------------------------------------------ declared outputs

def test_index_and_values_are_columns_never_part_of_the_setting(outs) -> None:
    result = run_experiment(outs, RunConfig(use_cache=False))
    t, s = result.trials, result.summary
    assert set(t["setting"]) == {"epsilon=1.0;lam=0.0", "epsilon=1.0;lam=0.5", "epsilon=3.0;lam=0.0",
                                 "epsilon=3.0;lam=0.5"}
    assert "label" in t and not t["setting"].str.contains("label").any()
    assert len(s) == 4 and set(s["n"]) == {2}  # grouped by (method, epsilon, lam): both seeds in each row
    assert {"epsilon", "lam", "label"} <= set(s.columns) and set(s["label"]) == {"nominal"}
    hit = s[(s["epsilon"] == 1.0) & (s["lam"] == 0.5)]
    assert len(hit) == 1 and hit["paper"].iloc[0] == 2.0  # the reference matched by typed columns


def test_an_undeclared_output_is_an_error_naming_it(outs, tmp_path: Path) -> None:
    with pytest.raises(TrialFailedError, match=r"undeclared output\(s\) \['sigma'\]"):
        run_experiment(outs, RunConfig(use_cache=False, out=tmp_path, overrides={"extra": ["sigma"]}))
    assert not (tmp_path / "outs").exists()  # nothing written


def test_trial_seconds_total_counts_trials_not_rows(outs, tmp_path: Path, monkeypatch) -> None:
    import repro._testing.outputs as study

    real = study.run_trial

    def slow(params, ctx):
        time.sleep(0.05)
        return real(params, ctx)

    monkeypatch.setattr(study, "STUDY", dataclasses.replace(study.STUDY, run_trial=slow))
    result = run_experiment(outs, RunConfig(use_cache=False, out=tmp_path))
    per_trial = result.trials.drop_duplicates(["setting", "repetition"]).shape[0]
    assert len(result.trials) == 2 * 4  # two records (λ) per trial, 4 trials
    assert result.trial_seconds == pytest.approx(result.trials.groupby(
        [result.trials["epsilon"], result.trials["repetition"]])["seconds"].first().sum())
    assert result.trial_seconds < result.trials["seconds"].sum()
    assert per_trial == 8 and 4 * 0.05 <= result.trial_seconds < 8 * 0.05 + 2
    import json
    run = json.loads((write_results(result, command="t", dataset_sha256={}) / "run.json").read_text())
    assert run["trial_seconds_total"] == pytest.approx(result.trial_seconds, abs=1e-3)


# ------------------------------------------------------------------ poisoned shared values (#24 item 3)

def _is_pair(v) -> bool:
    return isinstance(v, tuple) and len(v) == 2


def test_a_poisoned_shared_value_is_named_and_replaced(tmp_path: Path, caplog) -> None:
    calls = []

    def compute():
        calls.append(1)
        return (1.0, 2.0)

    args = (str(tmp_path), "ns", {"k": 1}, "repro._testing.trials")
    cache_mod._SHARED.clear()
    assert cache_mod.shared_value(*args, compute, validate=_is_pair) == (1.0, 2.0)
    # poison it: a checksummed entry of the wrong structure
    digest = next((tmp_path / "_shared" / "ns").glob("*/*.pkl")).stem
    cache_mod.TrialCache(tmp_path / "_shared", "ns").put(digest, {"not": "a pair"})
    cache_mod._SHARED.clear()
    with caplog.at_level(logging.WARNING):
        assert cache_mod.shared_value(*args, compute, validate=_is_pair) == (1.0, 2.0)
    assert "shared value ns/" in caplog.text and digest[:12] in caplog.text and len(calls) == 2
    cache_mod._SHARED.clear()
    assert cache_mod.shared_value(*args, compute, validate=_is_pair) == (1.0, 2.0) and len(calls) == 2  # repaired


def test_force_recomputes_and_replaces_a_shared_value(tmp_path: Path) -> None:
    args = (str(tmp_path), "ns2", {"k": 1}, "repro._testing.trials")
    cache_mod._SHARED.clear()
    cache_mod._REFRESHED.clear()
    cache_mod.shared_value(*args, lambda: "old")  # no structure check: an old entry looks valid
    cache_mod._SHARED.clear()
    assert cache_mod.shared_value(*args, lambda: "new") == "old"
    cache_mod._SHARED.clear()
    assert cache_mod.shared_value(*args, lambda: "new", refresh=True) == "new"  # --force
    assert cache_mod.shared_value(*args, lambda: "newer", refresh=True) == "new"  # once per process
    cache_mod._SHARED.clear()
    assert cache_mod.shared_value(*args, lambda: "x") == "new"  # and stored


def test_the_default_experiments_folder_is_the_checkouts(monkeypatch) -> None:
    """Since the machine moved to repro/engine/, the default folder must still be <checkout>/experiments."""
    from repro.engine.spec import experiments_dir

    monkeypatch.delenv("REPRO_EXPERIMENTS_DIR", raising=False)
    assert experiments_dir() == Path(__file__).resolve().parents[2] / "experiments"
    assert (experiments_dir() / "thesis-table-3.1.toml").is_file()


def test_every_experiment_files_values_are_typed_without_error() -> None:
    """Each file's own values coerce to the types it declares (ints stay ints where the file says so)."""
    from repro.engine.spec import load_all

    specs = load_all(Path(__file__).parents[2] / "experiments")
    assert specs
    for spec in specs.values():
        for profile in spec.profiles:
            fixed = spec.fixed_params(profile)
            for cell in spec.expand_cells(profile):
                for key, value in {**fixed, **cell}.items():
                    kind = spec.param_type(key)
                    dom = spec.domains.get(key)
                    words = dom.get("also", ()) if isinstance(dom, dict) else ()
                    if kind in {"int", "float", "bool", "str"} and not isinstance(value, list) and value not in words:
                        assert type(value).__name__ == kind, (spec.id, key, value, kind)


def test_the_summary_group_of_a_record_is_its_keys_group() -> None:
    """summarize groups rows by TrialKey.group (issue 36): the cell and the record's own index values, without the
    repetition, the variant or a missing value."""
    a = TrialKey.of("e", {"method": "m", "eps": 1.0, "epochs": 3}, repetition=0, grid_keys=("method", "eps"))
    b = TrialKey.of("e", {"method": "m", "eps": 1.0, "epochs": 3}, repetition=4, variant="v", grid_keys=("method", "eps"))
    assert a.group() == b.group() == ("m", canonical_json({"eps": 1.0}))
    assert a.group("base", {"knob": 0.5}) == ("base", canonical_json({"eps": 1.0, "knob": 0.5}))
    assert a.group(index={"knob": None}) == a.group(index={"knob": float("nan")}) == a.group()
    assert a.group(index={"knob": 1}) != a.group(index={"knob": 2})
