"""The trial cache's code version: a content hash of the study and every repro module it imports.

Spec of the behaviour: repro/engine/cache.py ``code_version`` (issue "One house": a moved module with
unchanged code keeps its trials; a changed library function recomputes them).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.engine import cache

PKG = "repro_cachetest"


@pytest.fixture
def toy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / PKG
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "lib.py").write_text("def bump(x):\n    return x + 1\n")
    (root / "study.py").write_text(
        f"from {PKG}.lib import bump\nfrom repro.engine.study import Study\n\n\n"
        "def run_trial(params, ctx):\n    return {'value': bump(params['x'])}\n\n\n"
        "STUDY = Study(run_trial=run_trial, version='1')\n")
    (root / "study_report.py").write_text(
        f"from {PKG}.study import STUDY\n\n\ndef report_markdown(bundle):\n    return STUDY.version\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [m for m in sys.modules if m.startswith(PKG)]:
        del sys.modules[name]


def _version() -> str:
    for name in [m for m in sys.modules if m.startswith(PKG)]:
        del sys.modules[name]
    importlib.invalidate_caches()
    cache.code_version.cache_clear()
    cache.code_hash.cache_clear()
    cache.trial_code_modules.cache_clear()
    from repro.engine.study import load_study

    return cache.code_version(f"{PKG}.study", load_study(f"{PKG}.study").version)


def test_closure_follows_imports_and_skips_report_modules(toy_package: Path) -> None:
    _version()
    mods = cache.trial_code_modules(f"{PKG}.study")
    assert tuple(m for m in mods if m.startswith(PKG)) == (f"{PKG}.lib", f"{PKG}.study")
    assert "repro.engine.study" in mods and not any(m.endswith("_report") for m in mods)


def test_editing_a_library_function_changes_the_version(toy_package: Path) -> None:
    before = _version()
    (toy_package / "lib.py").write_text("def bump(x):\n    return x + 2\n")
    assert _version() != before


def test_report_and_comment_edits_keep_the_version(toy_package: Path) -> None:
    before = _version()
    (toy_package / "study_report.py").write_text("def report_markdown(bundle):\n    return 'new words'\n")
    (toy_package / "lib.py").write_text("# a comment\ndef bump(x):\n\n    return x + 1  # same code\n")
    assert _version() == before


def test_moving_a_module_keeps_the_version(toy_package: Path) -> None:
    before = _version()
    (toy_package / "lib.py").rename(toy_package / "algorithms.py")
    (toy_package / "study.py").write_text(
        (toy_package / "study.py").read_text().replace(f"{PKG}.lib", f"{PKG}.algorithms"))
    assert _version() == before


def test_the_declared_version_is_part_of_the_code_version(toy_package: Path) -> None:
    before = _version()
    assert before.split("+")[1] == "1"
    study = toy_package / "study.py"
    study.write_text(study.read_text().replace("version='1'", "version='2'"))
    after = _version()
    assert after.split("+")[1] == "2" and after != before


def test_real_study_closure_contains_its_algorithms() -> None:
    cache.trial_code_modules.cache_clear()
    mods = cache.trial_code_modules("repro.studies.thesis.part1_tables")
    assert {"repro.learners.dp_fermi", "repro.privacy.dpfermi_noise", "repro.datasets.adult",
            "repro.fairness.metrics"} <= set(mods)
    assert not any(m.endswith("_report") or m.startswith("repro.plotting") for m in mods)
