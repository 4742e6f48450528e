"""Spec citations resolve (issue #35): the specs ship in docs/specs/, every cited file and section is there, and
`repro show` and REPORT.md print each citation as its path."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from repro.cli import main
from repro.engine.citations import SPEC_FILES, SPECS_DIR, cited_files, resolve

ROOT = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"(seed-(?:000-002|001|003|004))(?:-[a-z]+\.md)?((?:[ ,;]*§ ?[0-9A-Z][0-9.]*(?:[–-]§?[0-9.]+)?)+)")


def _headings(name: str) -> set[str]:
    text = (ROOT / SPECS_DIR / name).read_text(encoding="utf-8")
    return set(re.findall(r"^#+\s+(?:Appendix\s+)?([0-9A-Z]+(?:\.[0-9]+)*)[.\s]", text, re.M))


def _texts() -> dict[str, str]:
    paths = [*(ROOT / "experiments").rglob("*.toml"), *(ROOT / "repro").rglob("*.py")]
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in paths}


def test_every_cited_spec_file_ships_in_docs() -> None:
    cited = set().union(*(cited_files(text) for text in _texts().values()))
    assert cited, "no citation found"
    missing = sorted(p for p in cited if not (ROOT / p).is_file())
    assert not missing, missing
    assert {f"{SPECS_DIR}/{name}" for name in SPEC_FILES.values()} == cited


def test_every_cited_section_is_a_heading_of_its_spec() -> None:
    headings = {name: _headings(name) for name in SPEC_FILES.values()}
    found, missing = 0, []
    for where, text in _texts().items():
        if not where.startswith("experiments/"):
            continue
        for match in CITATION.finditer(text):
            name = SPEC_FILES[match.group(1)]
            for section in re.findall(r"§ ?([0-9A-Z]+(?:\.[0-9]+)*)", match.group(2)):
                found += 1
                if section not in headings[name]:
                    missing.append(f"{where}: {name} §{section}")
    assert found > 100 and not missing, missing


def test_resolve_rewrites_names_and_numbers_once() -> None:
    assert resolve("seed-003-thesis.md §2.7; seed-004 §5") == \
        "docs/specs/seed-003-thesis.md §2.7; docs/specs/seed-004-dpfermi.md §5"
    assert resolve(resolve("seed-001 §7")) == "docs/specs/seed-001-bandit.md §7"
    assert resolve("seed-004-dpfermi-parkinsons-retired-curves.json") == "seed-004-dpfermi-parkinsons-retired-curves.json"


def test_show_prints_resolvable_citations() -> None:
    result = CliRunner().invoke(main, ["show", "thesis-table-3.1", "--notes"], catch_exceptions=False)
    assert "spec: docs/specs/seed-003-thesis.md" in result.output
    assert not re.search(r"(?<![\w/])seed-00\d", result.output), result.output


def test_report_prints_resolvable_citations(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["run", "compat-impossibility", "--quiet", "--out", str(tmp_path)]).exit_code == 0
    assert runner.invoke(main, ["report", "--out", str(tmp_path)]).exit_code == 0
    text = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "docs/specs/seed-000-002-compat.md" in text
    assert not re.search(r"(?<![\w/])seed-00\d", text)
