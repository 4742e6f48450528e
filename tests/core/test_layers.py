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
ALGORITHMS = ("datasets", "privacy", "fairness", "learners", "bandits", "theory", "estimators")
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


#: every module of the machine package (issue #20, item 1); a new one must be added here on purpose
ENGINE_MODULES = {"repro.engine.backends", "repro.engine.cache", "repro.engine.cells", "repro.engine.citations",
                  "repro.engine.claims", "repro.engine.cost", "repro.engine.domains", "repro.engine.extends",
                  "repro.engine.fidelity", "repro.engine.folders", "repro.engine.identity", "repro.engine.notes", "repro.engine.publish",
                  "repro.engine.references", "repro.engine.report", "repro.engine.results", "repro.engine.runner",
                  "repro.engine.schema", "repro.engine.site", "repro.engine.spec",
                  "repro.engine.study", "repro.engine.trial", "repro.engine.user_method", "repro.engine.warnings_capture"}


def test_the_layer_test_lists_every_engine_module() -> None:
    assert {m for m in MODULES if _under(m, "repro.engine")} == ENGINE_MODULES


def test_the_engine_has_no_import_cycle() -> None:
    """Imports at any depth (lazy ones inside functions too) between engine modules form no cycle."""
    graph = {m: {i for i in MODULES[m] if i in ENGINE_MODULES and i != m} for m in ENGINE_MODULES}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join([*path, node, nxt])}"
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])


#: what a study must not do itself: build a generator or a trial context, or derive seed words
#: (every stream comes from ``ctx.rng(..., scope=...)``, or for code cached by its inputs from the hashable
#: ``ctx.seed(..., scope=...)``; a stream shared by a family of experiments is a ``[scopes]`` entry of their
#: files, issue 36); ``np.random.Generator`` stays allowed as a type hint
_FORBIDDEN = ("default_rng(", "SeedSequence(", "RandomState(", "TrialContext(", "stable_words(", "PCG64(",
              "np.random.Generator(", "numpy.random.Generator(", "global_rng(")


def test_no_study_builds_a_generator() -> None:
    import re

    bad = []
    for path in sorted((PACKAGE / "studies").rglob("*.py")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            hits = [f for f in _FORBIDDEN if f in code]
            hits += re.findall(r"\bnp\.random\.(?!Generator\b)\w+", code)
            if hits:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{lineno}: {hits}")
    assert not bad, "studies building their own randomness:\n" + "\n".join(bad)


def test_the_generator_grep_can_fail(tmp_path: Path) -> None:
    sample = "rng = np.random.default_rng(0)\nx: np.random.Generator = y\nnp.random.seed(1)\n"
    import re

    hits = [f for f in _FORBIDDEN if f in sample] + re.findall(r"\bnp\.random\.(?!Generator\b)\w+", sample)
    assert "default_rng(" in hits and "np.random.seed" in hits and "np.random.Generator" not in hits


def test_no_study_or_report_parses_the_setting_label() -> None:
    """Rows are selected by typed columns; ``setting`` is a label for people (issue #20, item 2)."""
    import re

    pattern = re.compile(r"""["']setting["']\]\s*(\.astype\(str\))?\s*\.str\.|setting\S*\.split\(["'];""")
    bad = [f"{p.relative_to(PACKAGE.parent)}:{i}" for p in sorted((PACKAGE / "studies").rglob("*.py"))
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not bad, bad
    assert pattern.search('x = t["setting"].str.extract(r"check=")') and pattern.search("s['setting'].astype(str).str.contains(")
