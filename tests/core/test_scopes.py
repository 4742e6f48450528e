"""Declared random-stream scopes (issue 36, part 3): ``[scopes]`` in an experiment file, ``ctx.rng(..., scope=name)``.

The seven streams that studies once drew from ``global_rng`` keep their bytes: each declared scope derives the
SeedSequence of the old labels (checked here against the old derivation, written out), so no result moved.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repro.engine.identity import StreamScope, TrialKey, stable_words
from repro.engine.runner import RunConfig, plan_trials
from repro.engine.spec import get_experiment, load_experiment
from repro.engine.trial import TrialContext
from repro.errors import ExperimentFileError

ROOT = Path(__file__).parents[2]


def _old(seed: int, *labels) -> np.random.Generator:
    """The derivation the studies used before (``global_rng(seed, *labels)``)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *stable_words("global", *labels)])))


def _ctx(experiment: str, cell: dict | None = None, *, repetition: int = 0, base_seed: int = 0) -> TrialContext:
    spec = get_experiment(experiment)
    params = {**spec.fixed_params("full"), **(cell or {})}
    return TrialContext(TrialKey.of(experiment, params, repetition=repetition, base_seed=base_seed,
                                    grid_keys=tuple(cell or {}), scopes=spec.scopes))


def _same(a: np.random.Generator, b: np.random.Generator) -> bool:
    return bool(np.array_equal(a.integers(0, 2**62, size=8), b.integers(0, 2**62, size=8)))


@pytest.mark.parametrize("experiment", ["thesis-table-3.1", "thesis-table-3.2", "thesis-theorem-8"])
def test_the_part1_split_is_the_old_stream_and_shared_by_the_family(experiment: str) -> None:
    for base_seed in (0, 7):
        ctx = _ctx(experiment, {"method": "Algorithm 2"}, repetition=3, base_seed=base_seed)
        new = ctx.rng("split", "adult", 500, 3, scope="split")
        assert _same(new, _old(base_seed, "thesis-part1", "split", "adult", 500, 3))


def test_the_other_declared_streams_are_the_old_ones() -> None:
    t8 = _ctx("thesis-theorem-8", {"check": "theorem8"}, base_seed=2)
    assert _same(t8.rng("base-model", "adult", scope="base-model"), _old(2, "thesis-theorem-8", "base-model", "adult"))
    fp = _ctx("thesis-table-5.1", {"dataset": "compas"})
    assert _same(fp.rng("compas", "subsample", 300, scope="tables"),
                 _old(0, "thesis-part2-tables", "compas", "subsample", 300))
    assert _same(fp.rng("compas", 300, 0, "opt", 1.0, scope="tables"),
                 _old(0, "thesis-part2-tables", "compas", 300, 0, "opt", 1.0))
    dp = _ctx("dpfermi-fig-3", {"method": "dp-fermi"}, repetition=4)
    labels = ["adult", "authors", "dp", 1.0, 0, 0.75]
    assert _same(dp.rng(*labels, "carve", scope="tuning"), _old(0, "dpfermi-tuning", *labels, "carve"))
    assert _same(dp.rng(*labels, "train", 2, scope="tuning"), _old(0, "dpfermi-tuning", *labels, "train", 2))


def test_a_scope_seeded_by_a_parameter_ignores_the_base_seed() -> None:
    for base_seed in (0, 5):
        ctx = _ctx("bandit-regret", {}, repetition=2, base_seed=base_seed)
        assert _same(ctx.rng(scope="problem"), _old(42, "pfg-problem"))
        assert _same(ctx.rng(scope="reference-bootstrap"), _old(42, "pfg-reference-bootstrap"))
    other = _ctx("bandit-regret", {"problem_seed": 43})
    assert not _same(other.rng(scope="problem"), _old(42, "pfg-problem"))


def test_which_trials_share_a_stream() -> None:
    a = _ctx("thesis-table-3.1", {"method": "Algorithm 2"}, repetition=1)
    b = _ctx("thesis-table-3.2", {"method": "DP-FERMI"}, repetition=5)
    # a declared family: across experiments, cells and repetitions (the labels name what differs)
    assert a.seed("x", scope="split") == b.seed("x", scope="split")
    assert a.seed("x", scope="split") != b.seed("y", scope="split")
    assert a.seed("x", scope="split") != _ctx("thesis-table-3.1", base_seed=1).seed("x", scope="split")
    # repetition: one experiment's cells of a repetition; experiment: every repetition; trial: its own
    c = _ctx("thesis-table-3.1", {"method": "DP-FERMI"}, repetition=1)
    assert a.seed("s", scope="repetition") == c.seed("s", scope="repetition")
    assert a.seed("s", scope="repetition") != b.seed("s", scope="repetition")
    assert a.seed("s", scope="experiment") == _ctx("thesis-table-3.1", repetition=9).seed("s", scope="experiment")
    assert a.seed("s", scope="experiment") != b.seed("s", scope="experiment")
    assert a.seed() != c.seed()
    assert hash(a.seed("x", scope="split")) == hash(b.seed("x", scope="split"))  # a per-process cache key


def test_an_undeclared_scope_is_refused_in_one_line() -> None:
    ctx = _ctx("compat-fairnr", {})
    with pytest.raises(ExperimentFileError) as err:
        ctx.rng("split", scope="split")
    message = str(err.value)
    assert "\n" not in message and "'split'" in message and "does not declare" in message
    assert "trial, repetition, experiment" in message


def test_the_declared_scopes_are_part_of_the_trial_identity() -> None:
    plain = TrialKey.of("e", {"x": 1})
    declared = TrialKey.of("e", {"x": 1}, scopes={"split": StreamScope("fam")})
    other = TrialKey.of("e", {"x": 1}, scopes={"split": StreamScope("fam2")})
    assert len({plain.cache_key("c"), declared.cache_key("c"), other.cache_key("c")}) == 3
    assert declared.seed_words() == plain.seed_words()  # a trial's own stream does not move
    spec = get_experiment("thesis-table-3.1")
    task = plan_trials(spec, RunConfig(profile="smoke"))[0]
    assert task.context.key.scopes == {"split": StreamScope("thesis-part1")}


@pytest.mark.parametrize(("block", "words"), [
    ('[scopes]\ntrial = { family = "x" }\n', "is a built-in scope"),
    ('[scopes]\nsplit = "x"\n', "must be a table"),
    ('[scopes]\nsplit = { name = "x" }\n', "family"),
    ('[scopes]\nsplit = { family = "x", seed = "nope" }\n', "must name an integer parameter"),
])
def test_the_loader_checks_the_declarations(tmp_path: Path, block: str, words: str) -> None:
    text = (ROOT / "tests" / "fixtures" / "experiments" / "toy.toml").read_text(encoding="utf-8")
    first_table = text.index("\n[") + 1
    path = tmp_path / "toy.toml"
    path.write_text(text[:first_table] + block + text[first_table:], encoding="utf-8")
    with pytest.raises(ExperimentFileError, match=words):
        load_experiment(path)


def test_no_study_calls_global_rng_and_the_engine_has_none() -> None:
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "repro").rglob("*.py"))
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "global_rng" in line]
    assert not hits, hits
