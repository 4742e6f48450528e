"""A fuzz test of every experiment's inputs (issue #35, item 4).

For every experiment, hypothesis draws ``--set`` keys and values from what ``repro show ID`` declares (the settable
keys, their declared values, each domain's extremes: min, max, the first value past a strict bound, the largest
admitted) plus hostile ones: out-of-domain, extreme, the wrong type, unicode, empty, and ``--seeds`` values up to
absurd; and cross-key combinations: every key of one ``[domains]`` rule set at once. Each draw must be refused in one line (a :class:`ReproError` whose message is one
line) before any trial runs, or be accepted by every check ``repro run`` makes before its first trial. A few cheap
experiments also run the accepted draws to completion at the smoke profile through the command line, which must
then exit 0, or 1 with one ``repro: error:`` line, and never print a traceback.

CI runs a fixed, derandomized budget (``REPRO_FUZZ_EXAMPLES``, default 6 per experiment); the long version
(``REPRO_FUZZ_LONG=1``, marked ``slow``) draws 200 per experiment and runs every accepted draw of the cheap ones.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from repro.cli import main
from repro.cli._common import parse_set
from repro.engine.domains import extremes, rule_names, rules_of
from repro.engine.runner import RunConfig, check_plan, plan_size, plan_trials
from repro.engine.spec import ExperimentSpec, load_all
from repro.errors import ReproError

ROOT = Path(__file__).resolve().parents[2]
SPECS = load_all(ROOT / "experiments", strict=True)
LONG = os.environ.get("REPRO_FUZZ_LONG") == "1"
EXAMPLES = int(os.environ.get("REPRO_FUZZ_EXAMPLES", "6"))
#: experiments whose smoke run takes a second or two and reads no data file: the accepted draws run to completion
CHEAP = ("compat-impossibility", "compat-sample-complexity")

HOSTILE = ["-1", "0", "-0", "1e-300", "1e308", "1e400", "99999999999999999999", "-99999999999999999999", "nan",
           "inf", "-inf", "0.5", "1/2", "1/0", "true", "false", "abc", "ü", "日本語", "🙂", "\u200b", " ", "",
           "[", "]", "[0]", "{}", "None", "null", "0x10", "1_000", "../..", "/nonexistent", "a" * 300, "1,1", "1,,2",
           "a\nb", "\t", "1\n"]
SEEDS = [None, 1, 2, 0, -1, 10**6, 10**20]


def _declared(spec: ExperimentSpec) -> dict[str, list[str]]:
    """Settable keys of the smoke profile with the values the file declares for each, as --set text."""
    out = {}
    for key in sorted(spec.settable_keys("smoke")):
        values = []
        for v in spec.declared_values(key):
            for x in v if isinstance(v, list) else [v]:
                values.append(str(x).lower() if isinstance(x, bool) else str(x))
        out[key] = values or ["1"]
    return out


def _draws(spec: ExperimentSpec) -> st.SearchStrategy[tuple[list[str], int | None]]:
    declared = _declared(spec)
    keys = st.sampled_from([*declared, "nope", "EPSILON", "ε", "", "a b", "x\ny"])

    def values(key: str) -> st.SearchStrategy[str]:
        own = declared.get(key, ["1"])
        edges = extremes(spec, key) if key in declared else []   # min, max, the first value past gt/lt, the cap
        one = st.one_of(st.sampled_from(own), st.sampled_from(HOSTILE), st.text(max_size=6),
                        *([st.sampled_from(edges)] * 2 if edges else []))
        return st.lists(one, min_size=1, max_size=3).map(",".join)

    item = keys.flatmap(lambda k: values(k).map(lambda v: f"{k}={v}"))
    # cross-key combinations: every key of one [domains] rule at once, each at its extremes or declared values
    groups = [names for names in (rule_names(tree) for _, tree in rules_of(spec)) if set(names) <= set(declared)]
    combined = (st.sampled_from(groups).flatmap(
        lambda names: st.tuples(*(values(n).map(lambda v, n=n: f"{n}={v.split(',')[0]}") for n in names))
        .map(list)) if groups else st.just([]))
    items = st.one_of(st.lists(item, max_size=3), combined)
    return st.tuples(items, st.sampled_from(SEEDS))


#: above this many trials a draw's plan is checked (size, values, the study's checks) but not built: building
#: 1,000,000 trials (the limit) takes about a minute, which a fuzz budget cannot spend on one example
BUILD_AT_MOST = 20_000


def check_before_trials(spec: ExperimentSpec, items: list[str], seeds: int | None) -> None:
    """What `repro run` checks before its first trial (cli/run.py), for one draw."""
    config = RunConfig(profile="smoke", seeds=seeds, overrides=parse_set(items), use_cache=False)
    total, _, _ = plan_size(spec, config)
    if total <= BUILD_AT_MOST:
        plan_trials(spec, config)
    else:
        spec.check_variant(config.variant)
        overrides = spec.coerce_overrides(config.overrides)
        spec.fixed_params(config.profile, overrides)
        check_plan(spec, config)


def _probe(spec: ExperimentSpec, items: list[str], seeds: int | None) -> bool:
    """True when the draw is accepted; a refusal must be a one-line ReproError (anything else fails the test)."""
    try:
        check_before_trials(spec, items, seeds)
    except ReproError as exc:
        message = str(exc)
        assert message and "\n" not in message, (spec.id, items, seeds, message)
        return False
    return True


def _fuzz(spec: ExperimentSpec, examples: int) -> Any:
    @settings(max_examples=examples, deadline=None, derandomize=not LONG, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_draws(spec))
    def probe(draw: tuple[list[str], int | None]) -> None:
        _probe(spec, *draw)

    return probe


@pytest.mark.parametrize("experiment_id", sorted(SPECS))
def test_every_draw_is_refused_in_one_line_or_accepted(experiment_id: str) -> None:
    _fuzz(SPECS[experiment_id], EXAMPLES)()


@pytest.mark.parametrize("experiment_id", sorted(SPECS))
def test_hostile_values_of_every_key_are_refused_in_one_line_or_accepted(experiment_id: str) -> None:
    """Every declared key with every hostile value once (deterministic, no hypothesis budget)."""
    spec = SPECS[experiment_id]
    for key in _declared(spec):
        for value in HOSTILE:
            _probe(spec, [f"{key}={value}"], None)


def _run_to_completion(tmp_path: Path, experiment_id: str, items: list[str], seeds: int | None) -> None:
    args = ["run", experiment_id, "--quiet", "--no-cache", "--out", str(tmp_path)]
    args += [f"--set={item}" for item in items] + ([f"--seeds={seeds}"] if seeds is not None else [])
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    assert "Traceback" not in result.output, (args, result.output)
    if result.exit_code == 0:
        return
    lines = [line for line in result.output.splitlines() if line.startswith("repro: error:")]
    assert result.exit_code == 1 and len(lines) == 1, (args, result.output, result.exception)


@pytest.mark.parametrize("experiment_id", CHEAP)
def test_accepted_draws_of_cheap_experiments_run_to_completion(experiment_id: str, tmp_path_factory) -> None:
    spec = SPECS[experiment_id]

    @settings(max_examples=40 if LONG else 3, deadline=None, derandomize=not LONG, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_draws(spec))
    @example(([], None))   # at least one run to completion: the plain smoke run
    @example((["nope=1"], 10**20))
    def run(draw: tuple[list[str], int | None]) -> None:
        items, seeds = draw
        if seeds is not None and seeds > 3:   # an accepted but long plan: the refusal probe covers it
            seeds = 2
        if _probe(spec, items, seeds):
            _run_to_completion(tmp_path_factory.mktemp("fuzz"), experiment_id, items, seeds)

    run()


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="the long fuzz run: set REPRO_FUZZ_LONG=1")
@pytest.mark.parametrize("experiment_id", sorted(SPECS))
def test_long_fuzz(experiment_id: str) -> None:
    _fuzz(SPECS[experiment_id], 200)()
