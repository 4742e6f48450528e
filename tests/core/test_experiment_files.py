"""The experiment files as shipped: ``extends`` leaves every merged spec exactly as it was when each
file was a full copy (issue #20 item 6), and every numeric parameter has a domain (issue #24 item 2)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from repro.engine.spec import ExperimentSpec, load_all

ROOT = Path(__file__).resolve().parents[2]
FROZEN = Path(__file__).parent / "fixtures" / "experiment_spec_digests.json"
#: fields deliberately changed since the freeze: ``domains`` (declared for every numeric parameter)
#: and ``path`` (where the file lives)
NOT_FROZEN = ("path", "domains", "fidelity", "reference_defaults")
#: fields added to an entry since the freeze, left out of its digest: a reference's own ``conditions`` (empty
#: everywhere: the file's ``[reference]`` table, in ``reference_defaults``, declares them) and the names of the
#: values a claim's report supplies (declared so the loader can refuse an unknown name)
NEW_ENTRY_FIELDS = {"references": ("conditions",), "claims": ("values",)}


def _canonical(value: Any, ordered: bool = False) -> Any:
    """Dicts as sorted [key, value] pairs, except a grid's axes, whose order sets the order of the
    cells; lists keep their order; types kept (1 and 1.0 differ)."""
    if isinstance(value, dict):
        items = [(str(k), _canonical(v, ordered=k == "grid")) for k, v in value.items()]
        return items if ordered else sorted(items)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


def field_digests(spec: ExperimentSpec) -> dict[str, str]:
    """sha256 (16 hex) of the canonical JSON of each field of ``spec``."""
    out = {}
    for name, value in dataclasses.asdict(spec).items():
        if name in NOT_FROZEN:
            continue
        if name in NEW_ENTRY_FIELDS:
            value = [{k: v for k, v in entry.items() if k not in NEW_ENTRY_FIELDS[name]} for entry in value]
        text = json.dumps(_canonical(value, ordered=name == "grid"), ensure_ascii=False)
        out[name] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def _all_digests() -> dict[str, dict[str, str]]:
    return {i: field_digests(s) for i, s in sorted(load_all(ROOT / "experiments", strict=True).items())}


def test_merged_specs_equal_the_frozen_full_copies() -> None:
    frozen = json.loads(FROZEN.read_text())
    now = _all_digests()
    assert sorted(now) == sorted(frozen)
    changed = [f"{i}.{f}" for i in frozen for f in frozen[i] if now[i].get(f) != frozen[i][f]]
    assert not changed, f"merged experiment specs changed: {changed}"


def _numeric(value: Any, depth: int = 0) -> bool:
    """A number or a list of numbers (a list of pairs, e.g. clip_radius_pairs, has no numeric domain)."""
    if isinstance(value, list):
        return depth == 0 and bool(value) and all(_numeric(v, 1) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@pytest.mark.parametrize("spec", load_all(ROOT / "experiments", strict=True).values(), ids=lambda s: s.id)
def test_every_numeric_parameter_has_a_domain(spec: ExperimentSpec) -> None:
    keys: set[str] = set()
    for name in spec.profiles:
        for key in spec.settable_keys(name):
            values = spec.declared_values(key)
            if values and all(_numeric(v, 1) for v in values):
                keys.add(key)
    missing = sorted(k for k in keys if k not in spec.domains)
    assert not missing, f"{spec.id}: numeric parameters without a [domains] entry: {missing}"
    for key in keys:  # and each is a numeric table or a list of values
        assert isinstance(spec.domains[key], (dict, list)), (spec.id, key)


@pytest.mark.parametrize("spec", load_all(ROOT / "experiments", strict=True).values(), ids=lambda s: s.id)
def test_no_shipped_key_has_an_any_value_domain(spec: ExperimentSpec) -> None:
    """Issue #35: every settable key has a declared domain; "any" is refused by the loader."""
    assert "any" not in spec.domains.values(), spec.id


if __name__ == "__main__":  # regenerate the frozen digests (only when a spec change is intended)
    FROZEN.write_text(json.dumps(_all_digests(), indent=1, sort_keys=True) + "\n")


def _outside(domain: dict[str, Any], value: float) -> str:
    """Why ``value`` breaks a numeric domain table, or '' (the bounds as documented in spec.py)."""
    if domain.get("rational"):   # exact text such as "1/10"
        value = Fraction(str(value))
        if domain.get("unit_fraction") and value.numerator != 1:
            return "unit_fraction"
    rules = {"min": value >= domain.get("min", -float("inf")), "max": value <= domain.get("max", float("inf")),
             "gt": value > domain.get("gt", -float("inf")), "lt": value < domain.get("lt", float("inf")),
             "integer": not domain.get("integer") or (isinstance(value, int) or float(value).is_integer()),
             "multiple_of": "multiple_of" not in domain or float(value) % domain["multiple_of"] == 0}
    return ", ".join(k for k, ok in rules.items() if not ok)


@pytest.mark.parametrize("spec", load_all(ROOT / "experiments", strict=True).values(), ids=lambda s: s.id)
def test_every_declared_value_lies_in_its_domain(spec: ExperimentSpec) -> None:
    for key, domain in spec.domains.items():
        if not isinstance(domain, dict):
            continue
        for value in spec.declared_values(key):
            for v in value if isinstance(value, list) else [value]:
                for x in v if isinstance(v, list) else [v]:  # pairs such as clip_radius_pairs
                    if x in domain.get("also", ()):   # allowed besides the range ("released", subsample = 0)
                        continue
                    assert not _outside(domain, x), f"{spec.id}: {key} = {x} breaks {domain}"
