"""The house's layering rules (ARCHITECTURE.md), checked on the import statements of every module.

- nothing below ``repro.studies`` imports a study;
- ``repro.privacy`` (mechanisms, accounting) imports nothing from ``repro.learners``;
- algorithm layers never import the machine (runner, cache, spec, results, report, cli);
- a study never imports its report module (the report imports the study).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "repro"
ALGORITHMS = ("datasets", "privacy", "fairness", "learners", "bandits", "theory")
MACHINE = ("repro.engine", "repro.cli")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in found if m.startswith("repro")}


MODULES = {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_every_layer_exists() -> None:
    for layer in (*ALGORITHMS, "studies"):
        assert f"repro.{layer}" in MODULES


@pytest.mark.parametrize("layer", ALGORITHMS)
def test_algorithms_never_import_studies_or_the_machine(layer: str) -> None:
    bad = {m: sorted(i for i in imps if _under(i, "repro.studies") or any(_under(i, x) for x in MACHINE))
           for m, imps in MODULES.items() if _under(m, f"repro.{layer}")}
    bad = {m: v for m, v in bad.items() if v}
    assert not bad, f"algorithm modules importing studies or the machine: {bad}"


def test_machine_never_imports_studies() -> None:
    bad = {m: sorted(i for i in imps if _under(i, "repro.studies"))
           for m, imps in MODULES.items() if not _under(m, "repro.studies")}
    assert not {m: v for m, v in bad.items() if v}


def test_privacy_imports_nothing_from_learners() -> None:
    bad = {m: sorted(i for i in imps if _under(i, "repro.learners"))
           for m, imps in MODULES.items() if _under(m, "repro.privacy")}
    assert not {m: v for m, v in bad.items() if v}


def test_studies_never_import_report_modules() -> None:
    bad = {m: sorted(i for i in imps if i.endswith("_report"))
           for m, imps in MODULES.items() if _under(m, "repro.studies") and not m.endswith("_report")}
    assert not {m: v for m, v in bad.items() if v}


def test_every_study_lives_in_a_document_package() -> None:
    studies = [m for m in MODULES if _under(m, "repro.studies") and m.count(".") == 3]
    assert studies and all(m.split(".")[2] in {"cummings2019", "thesis", "dpfermi", "pfg", "audit"} for m in studies)
    # and no study module is left in an algorithm folder
    stray = [m for m in MODULES if any(_under(m, f"repro.{a}") for a in ALGORITHMS)
             and (m.endswith("_study") or m.endswith("_report") or m.endswith(".study"))]
    assert not stray, stray
