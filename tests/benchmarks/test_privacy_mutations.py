"""benchmarks/privacy_mutations.py: its breaks apply to the code as it is, and the smoke subset is caught by an
audit (the shipped DP-SGD audit at the smoke budget, in a copy of the package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "privacy_mutations.py"


@pytest.fixture(scope="module")
def mutations():
    spec = importlib.util.spec_from_file_location("privacy_mutations", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["privacy_mutations"] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["privacy_mutations"]
    return module


def test_every_break_applies_exactly_once_to_the_current_code(mutations) -> None:
    root = mutations.ROOT
    assert {m.name for m in mutations.MUTATIONS} >= {
        "noise ×0.5", "sampler at 2q", "every row", "fixed-size batches accounted as Poisson", "clipping skipped",
        "accountant at the wrong relation (replace-one as add/remove)", "composition counts T/2 steps"}
    for m in mutations.MUTATIONS:
        assert (root / m.file).read_text().count(m.old) == 1, m.name
        for t in m.tests:
            assert (root / t).is_file(), t
    assert set(mutations.SMOKE) <= {m.name for m in mutations.MUTATIONS}


@pytest.mark.slow
def test_smoke_subset_is_caught_by_an_audit(mutations) -> None:
    by_name = {m.name: m for m in mutations.MUTATIONS}
    for name, audits in mutations.SMOKE.items():
        row = mutations.check(by_name[name], "smoke", audits=audits, tests=False)
        assert all(v["caught"] for v in row["audits"].values()), (name, row["audits"])
        assert all(not v["verdict"].startswith("error") for v in row["audits"].values()), row["audits"]
