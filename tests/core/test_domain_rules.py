"""Domains that match what a trial can compute: cross-key rules declared in ``[domains]`` (repro/engine/domains.py)
and bounds derived from what the trials accept, refused before any trial naming the key and the rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.engine.domains import broken, parse_rule, rule_names
from repro.engine.runner import RunConfig, plan_size
from repro.engine.spec import get_experiment
from repro.errors import ExperimentFileError, InvalidParameterError

ROOT = Path(__file__).parents[2]


def _spec(rid: str):
    return get_experiment(rid, ROOT / "experiments")


@pytest.mark.parametrize("value", ["0.01", "0.1", "0.105"])   # below, at and just past eps0 + eps1 = 0.1
def test_eps_prime_at_or_below_the_split_is_refused_naming_the_rule(value: str) -> None:
    """N6: eps_prime=0.01 ran 14 s, then every trial failed with 'epsilon must be > 0 ... got -0.09'."""
    with pytest.raises(InvalidParameterError) as caught:
        plan_size(_spec("thesis-table-3.1"), RunConfig(overrides={"eps_prime": [value]}))
    message = str(caught.value)
    assert message.startswith(f"--set eps_prime={float(value)!r}: breaks the rule eps_prime >= eps0 + eps1 + 0.01 of "
                              "'thesis-table-3.1'"), message
    assert "eps0=0.05, eps1=0.05" in message and "\n" not in message


def test_eps_prime_just_above_the_split_is_accepted() -> None:
    total, _, _ = plan_size(_spec("thesis-table-3.1"), RunConfig(overrides={"eps_prime": ["0.11"]}))
    assert total > 0


def test_a_rule_names_the_key_the_user_set_among_several() -> None:
    with pytest.raises(InvalidParameterError, match=r"^--set eps0=3\.0: breaks the rule"):
        plan_size(_spec("thesis-table-3.1"), RunConfig(overrides={"eps0": ["3"]}))


@pytest.mark.parametrize(("rid", "key", "value", "words"), [
    ("thesis-table-3.1", "eps_prime", "1e308", "must be <= 100"),   # N6: an accountant error inside every trial
    ("bandit-regret", "epsilon", "1e308", "must be <= 1000000"),    # N5: LinAlgError, setting '' in every trial
    ("bandit-sweep-alpha-eps", "alpha_eps", "1", "must be < 1"),    # budget_split needs alpha in (0, 1)
])
def test_values_the_trials_cannot_compute_are_refused_up_front(rid: str, key: str, value: str, words: str) -> None:
    with pytest.raises(InvalidParameterError, match=rf"^--set {key}={value}: {words}"):
        plan_size(_spec(rid), RunConfig(overrides={key: [value]}))


def test_rules_are_checked_as_written() -> None:
    rule = parse_rule("x.toml", "0 < a < b + 2 * c")
    assert rule_names(rule) == ["a", "b", "c"]
    assert broken(rule, {"a": 1, "b": 0, "c": 1}) is False
    assert broken(rule, {"a": 3, "b": 0, "c": 1}) is True
    assert broken(rule, {"a": -1, "b": 5, "c": 1}) is True
    assert broken(rule, {"a": 1, "b": 0}) is None            # c missing: the rule does not apply
    assert broken(parse_rule("x.toml", "a ** b < 1e300"), {"a": 1e10, "b": 1e10}) is True   # overflow: broken


@pytest.mark.parametrize("text", ["a", "a > import_os()", "a > b.c", "a == b", "", 3])
def test_a_rule_that_is_not_arithmetic_is_a_file_error(text: object) -> None:
    with pytest.raises(ExperimentFileError, match="domains.rules"):
        parse_rule("x.toml", text)
