"""REPORT.md tells runs apart and `repro report ID` updates only ID (issue #24, item 4)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from repro.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def add_copy(name: str) -> None:
    exp = Path(os.environ["REPRO_EXPERIMENTS_DIR"])
    (exp / f"{name}.toml").write_text((exp / "toy.toml").read_text().replace('id = "toy"', f'id = "{name}"'))


def report_text(*ids: str) -> str:
    result = invoke("report", *ids)
    assert result.exit_code == 0, result.output
    return Path(result.output.strip()).read_text(encoding="utf-8")


def test_set_runs_of_one_experiment_get_their_own_heading_and_link(toy_env: Path) -> None:
    for extra in ([], ["--set", "epsilon=3.0"], ["--set", "x=2.0"]):
        assert invoke("run", "toy", "--quiet", *extra).exit_code == 0
    text = report_text()
    headings = re.findall(r"^## toy .*$", text, flags=re.M)
    assert len(headings) == 3 and len(set(headings)) == 3
    assert any("--set epsilon=3.0" in h for h in headings) and any("--set x=2.0" in h for h in headings)
    links = re.findall(r"^\| \[toy\]\(#([^)]+)\)", text, flags=re.M)
    anchors = re.findall(r'<a id="([^"]+)"></a>', text)
    assert len(links) == 3 and len(set(links)) == 3 and set(links) == set(anchors)


def test_report_of_one_id_keeps_the_other_sections(toy_env: Path) -> None:
    add_copy("toy-two")
    assert invoke("run", "toy", "--quiet").exit_code == 0
    assert invoke("run", "toy-two", "--quiet").exit_code == 0
    full = report_text()
    toy_section = full[full.index("<!-- repro-report-section: toy/"):].split("<!-- repro-report-section:")[1]
    shutil.rmtree(toy_env / "toy")  # the toy section can now only come from the existing report
    assert invoke("run", "toy-two", "--quiet", "--set", "epsilon=3.0").exit_code == 0
    updated = report_text("toy-two")
    assert toy_section in updated  # kept verbatim
    assert len(re.findall(r"^## toy-two ", updated, flags=re.M)) == 2  # toy-two's sections refreshed
    assert len(re.findall(r"^\| \[toy\]\(#", updated, flags=re.M)) == 1
    assert updated.count("<!-- repro-report-section: toy/") == 1


def test_report_of_all_ids_is_written_anew(toy_env: Path) -> None:
    add_copy("toy-two")
    assert invoke("run", "toy", "--quiet").exit_code == 0
    assert invoke("run", "toy-two", "--quiet").exit_code == 0
    report_text()
    shutil.rmtree(toy_env / "toy")
    assert "## toy (" not in report_text()  # a full report shows only what is on disk
