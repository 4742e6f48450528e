"""REPORT.md tells runs apart and `repro report ID` updates only ID (issue #24, item 4)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
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


# ---------------------------------------------------------------- plot and report address every run


def test_plot_and_report_address_runs_by_seeds_and_base_seed(toy_env: Path) -> None:
    """`repro plot ID --seeds N` was "No such option"; now plot and report take the run's options and a report
    label names what the run changed from its profile."""
    assert invoke("run", "toy", "--quiet").exit_code == 0
    assert invoke("run", "toy", "--quiet", "--seeds", "8").exit_code == 0
    assert invoke("run", "toy", "--quiet", "--base-seed", "7").exit_code == 0
    plotted = invoke("plot", "toy", "--seeds", "8")
    assert plotted.exit_code == 0 and "no figures" in plotted.output, plotted.output
    assert invoke("plot", "toy", "--base-seed", "7").exit_code == 0
    missing = invoke("plot", "toy", "--seeds", "9")
    assert missing.exit_code != 0 and "run `repro run toy --seeds 9` first" in missing.output
    assert invoke("plot", "toy", "--seeds", "3").exit_code == 0   # the profile's own number: its own folder
    text = report_text("toy", "--seeds", "8")
    assert re.findall(r"^## toy \((.*?)\) —", text, flags=re.M) == ["profile smoke, seeds 8"]
    text = report_text()
    labels = re.findall(r"^## toy \((.*?)\) —", text, flags=re.M)
    assert sorted(labels) == ["profile smoke", "profile smoke, base seed 7", "profile smoke, seeds 8"]
    assert report_text("toy", "--base-seed", "7").count("\n## toy (") == 3   # the other runs' sections kept
    bad = invoke("report", "toy", "--base-seed", "-1")
    assert bad.exit_code != 0 and "--base-seed must be >= 0" in bad.output
    assert invoke("report", "--seeds", "8").exit_code != 0   # which result's run: name it


def test_plot_and_report_refuse_a_with_the_result_does_not_take(toy_env: Path) -> None:
    out = invoke("plot", "toy", "--with", "examples/my_method.py")
    assert out.exit_code != 0 and "does not take your own method" in out.output


@pytest.mark.data
def test_plot_and_report_address_a_run_with_your_method(tmp_path: Path, data_mirror: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(__file__).parents[2]
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(root / "experiments"))
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    method = str(root / "examples" / "my_method.py")
    run = ["thesis-table-3.1", "--with", method, "--seeds", "1", "--set", "data=authors"]
    assert invoke("run", *run, "--quiet").exit_code == 0
    plotted = invoke("plot", *run)
    assert plotted.exit_code == 0, plotted.output
    assert [Path(p).name for p in plotted.output.split()] == ["thesis-table-3_1.png", "thesis-table-3_1.pdf"]
    assert "+with-" in Path(plotted.output.split()[0]).parent.name
    label = re.findall(r"^## thesis-table-3.1 \((.*?)\) —", report_text(*run), flags=re.M)
    assert len(label) == 1 and "seeds 1" in label[0] and "--set data=authors" in label[0] and "--with" in label[0]
    assert invoke("plot", "thesis-table-3.1", "--seeds", "1", "--set", "data=authors").exit_code != 0   # not it
