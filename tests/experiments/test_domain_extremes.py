"""Domains that match what a trial can compute: every key at its domain's extremes.

For each study (the first experiment that uses it; a key whose domain an earlier experiment of the same study
already tested is skipped), each numeric key of the smoke profile is set to its domain's extremes: ``min``, the
first value above ``gt``, ``max``, the last value below ``lt``, and, where the domain has no bound on a side, the
largest (or most negative) value it admits (the integer cap, or the largest double); plus, for each ``[domains]``
rule, the values at and just past its boundary. Each must be refused before any trial, in one line naming the
key (and the rule), or its run's first trial must complete.

Refusals are checked for every study (milliseconds each). The accepted extremes run their first trial for the
studies in :data:`RUN_TRIALS` (a few seconds in all, on a 2-core CI machine); ``REPRO_EXTREMES_LONG=1`` runs
them for every study (minutes; needs the data mirror).
"""

from __future__ import annotations

import ast
import math
import os
from dataclasses import replace
from pathlib import Path

import pytest

from repro.engine import cost
from repro.engine.domains import _value, extremes, rule_names, rules_of
from repro.engine.runner import RunConfig, _execute, plan_trials
from repro.engine.spec import ExperimentSpec, load_all
from repro.errors import ReproError

ROOT = Path(__file__).resolve().parents[2]
SPECS = load_all(ROOT / "experiments", strict=True)
LONG = os.environ.get("REPRO_EXTREMES_LONG") == "1"
#: studies whose first smoke trial takes well under a second at any admitted value and reads no data file
RUN_TRIALS = ("repro.studies.cummings2019.impossibility", "repro.studies.cummings2019.sample_complexity",
              "repro.studies.cummings2019.fairnr", "repro.studies.cummings2019.expmech_audit",
              "repro.studies.thesis.ldp_theory", "repro.studies.thesis.theorem8")
#: the most a first trial run in CI is estimated to cost (repro/engine/cost.py); dearer ones run in the long mode
CI_TRIAL_SECONDS = 2.0
#: the longest a first trial may take here: longer means the domain admits work the cost model does not bound
TRIAL_SECONDS = 60.0
#: extremes a trial cannot compute yet, each with what happens (its domain is to be narrowed)
KNOWN: dict[tuple[str, str, str], str] = {}


def rule_points(spec: ExperimentSpec) -> list[tuple[str, str]]:
    """(key, value) at and just past the boundary of each rule ``key > expression`` of the smoke profile."""
    fixed = spec.fixed_params("smoke")
    out = []
    for _, tree in rules_of(spec):
        names = rule_names(tree)
        if not isinstance(tree.left, ast.Name):   # only `key > expression` has one boundary per key
            continue
        left = tree.left.id
        others = {n: fixed.get(n) for n in names[1:]}
        if not all(isinstance(v, (int, float)) for v in others.values()) or len(tree.comparators) != 1:
            continue
        bound = _value(tree.comparators[0], others)
        out += [(left, repr(float(bound))), (left, repr(math.nextafter(float(bound), math.inf))),
                (left, repr(math.nextafter(float(bound), -math.inf)))]
    return out


def cases() -> list[tuple[str, str, str]]:
    """(experiment, key, value): every extreme once per study and domain."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for rid, spec in sorted(SPECS.items()):
        settable = spec.settable_keys("smoke")
        points = [(k, v) for k in sorted(settable) for v in extremes(spec, k)]
        points += [(k, v) for k, v in rule_points(spec) if k in settable]
        for key, value in points:
            tag = (spec.trial, key, repr(spec.domains.get(key)) + value)
            if tag in seen:
                continue
            seen.add(tag)
            out.append((rid, key, value))
    return out


CASES = cases()


def _refused(spec: ExperimentSpec, key: str, value: str) -> bool:
    """True when the run is refused before any trial (what `repro run` checks: counts, domains, rules, cost,
    the study's own checks); the refusal must be one line naming the key."""
    try:
        plan_trials(spec, RunConfig(seeds=1, overrides={key: [value]}, use_cache=False))
    except ReproError as exc:
        message = str(exc)
        assert "\n" not in message and key in message, (spec.id, key, value, message)
        return True
    return False


@pytest.mark.parametrize(("experiment_id", "key", "value"), CASES, ids=[f"{r}:{k}={v}" for r, k, v in CASES])
def test_an_extreme_is_refused_naming_its_key_or_its_first_trial_completes(experiment_id: str, key: str,
                                                                          value: str, tmp_path: Path) -> None:
    spec = SPECS[experiment_id]
    if _refused(spec, key, value):
        return
    if not LONG and spec.trial not in RUN_TRIALS:
        pytest.skip("accepted before any trial; its first trial runs with REPRO_EXTREMES_LONG=1")
    estimated = cost.estimate(spec, replace(RunConfig(seeds=1), overrides=spec.coerce_overrides({key: [value]})))
    seconds = estimated.core_seconds / estimated.trials
    if seconds > TRIAL_SECONDS:   # accepted as bounded work: the cost model counts it (and refuses a day of it)
        pytest.skip(f"its first trial is estimated at {seconds:.0f} s, bounded by the cost model; not run here")
    if not LONG and seconds > CI_TRIAL_SECONDS:
        pytest.skip(f"its first trial is estimated at {seconds:.0f} s; it runs with REPRO_EXTREMES_LONG=1")
    if (experiment_id, key, value) in KNOWN:
        pytest.xfail(KNOWN[(experiment_id, key, value)])
    config = RunConfig(seeds=1, overrides={key: [value]}, use_cache=False, out=tmp_path)
    task = plan_trials(spec, config)[0]
    task = type(task)(**{**task.__dict__, "timeout": TRIAL_SECONDS})
    _, ok, failure, _, _ = _execute(task)
    assert ok, f"{experiment_id} --set {key}={value}: accepted, then its first trial failed: " \
               f"{failure[0].strip().splitlines()[-1]}"
