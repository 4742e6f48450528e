"""The results site (`repro report --html`) and the published results (`python -m repro.engine.publish`): built
from saved runs only, self-contained, every run labelled by what it changed, "not run" where nothing is saved."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.engine import publish as pub
from repro.engine.site import MARKER, markdown_html, row_verdict
from repro.engine.spec import load_all

ROOT = Path(__file__).parents[2]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def add_result(name: str, document: str) -> None:
    """A copy of the toy experiment under another id and document (the site filters by document)."""
    import os

    exp = Path(os.environ["REPRO_EXPERIMENTS_DIR"])
    text = (exp / "toy.toml").read_text().replace('id = "toy"', f'id = "{name}"')
    (exp / f"{name}.toml").write_text(text.replace('document = "none"', f'document = "{document}"'))


def draw_png(path: Path) -> None:
    """A figure, as a study's plot would save it beside the CSVs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1, 2], [1, 3, 2], marker="o")
    fig.savefig(path, dpi=60)
    plt.close(fig)


@pytest.fixture
def site_results(toy_env: Path) -> Path:
    """Saved runs of three toy results in two documents: `toy` at full, smoke and smoke with 8 seeds (with a
    figure); `toy-two` at full with --set; `toy-three` never run."""
    add_result("toy-two", "Another paper (2024)")
    add_result("toy-three", "Another paper (2024)")
    for args in (["--profile", "full"], [], ["--seeds", "8"]):
        assert invoke("run", "toy", "--quiet", *args).exit_code == 0
    assert invoke("run", "toy-two", "--quiet", "--profile", "full", "--set", "x=2.0").exit_code == 0
    draw_png(toy_env / "toy" / "full" / "toy-curve.png")
    return toy_env


def build(results: Path, out: Path, *extra: str) -> Path:
    result = invoke("report", "--html", "--from", str(results), "--out", str(out), *extra)
    assert result.exit_code == 0, result.output
    return Path(result.output.strip())


def test_the_index_has_one_row_per_result_with_its_status_and_command(site_results: Path, tmp_path: Path) -> None:
    index = build(site_results, tmp_path / "site")
    text = index.read_text(encoding="utf-8")
    rows = re.findall(r'<tr data-document="([^"]*)" data-status="([^"]*)">', text)
    assert len(rows) == 3 and {d for d, _ in rows} == {"none", "Another paper (2024)"}
    assert "repro run toy-three --profile full --jobs 2" in text
    assert 'id="f-document"' in text and 'id="f-status"' in text
    for eid in ("toy", "toy-two", "toy-three"):
        assert (index.parent / f"{eid}.html").is_file()
    assert "not run" in (index.parent / "toy-three.html").read_text(encoding="utf-8")


def test_a_result_page_lists_every_run_labelled_by_what_it_changed(site_results: Path, tmp_path: Path) -> None:
    site = build(site_results, tmp_path / "site").parent
    page = (site / "toy.html").read_text(encoding="utf-8")
    labels = re.findall(r"<h2>Run: ([^<]*)</h2>", page)
    assert labels == ["profile full", "profile smoke", "profile smoke, seeds 8"]   # the profile's full run first
    for anchor in re.findall(r'<li><a href="#([^"]+)">', page):
        assert f'id="{anchor}"' in page
    full = page.split("<h2>Run: profile smoke</h2>", 1)[0]
    assert re.search(r'<td class="v-(within|no)">(within|NO)</td>', full)   # full: verdicts shown
    assert "n/a (smoke)" in page                                        # smoke: not judged
    two = (site / "toy-two.html").read_text(encoding="utf-8")
    assert "Run: profile full, --set x=2.0" in two
    for key in ("Command", "Commit", "Profile", "Seeds", "Data (sha256)", "Wall time"):
        assert f"<dt>{key}</dt>" in page


def test_figures_and_csvs_are_copied_beside_the_pages_and_nothing_is_fetched(site_results: Path,
                                                                            tmp_path: Path) -> None:
    site = build(site_results, tmp_path / "site").parent
    page = (site / "toy.html").read_text(encoding="utf-8")
    images = re.findall(r'<img src="([^"]+)"', page)
    assert images == ["files/toy/full/toy-curve.png"] and (site / images[0]).stat().st_size > 0
    for target in re.findall(r'(?:src|href)="([^"#]+)"', page):
        assert not re.match(r"[a-z]+:", target), f"a network or absolute link: {target}"
        assert (site / unquote(target)).exists(), target
    assert "<link" not in page and "<script src" not in page
    assert str(tmp_path) not in page and str(site_results) not in (site / "index.html").read_text(encoding="utf-8")


def test_a_rebuild_replaces_the_site_and_another_folder_is_refused(site_results: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(site_results, out)
    (out / "stale.html").write_text("old")
    build(site_results, out)
    assert not (out / "stale.html").exists() and (out / MARKER).is_file()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    refused = invoke("report", "--html", "--from", str(site_results), "--out", str(other))
    assert refused.exit_code != 0 and "not a results site" in refused.output
    assert (other / "notes.txt").read_text() == "keep me"


def test_the_site_builds_with_no_saved_results(toy_env: Path, tmp_path: Path) -> None:
    empty = tmp_path / "published"
    empty.mkdir()
    index = build(empty, tmp_path / "site")
    assert "not run" in index.read_text(encoding="utf-8")
    missing = invoke("report", "--html", "--from", str(tmp_path / "nowhere"), "--out", str(tmp_path / "s2"))
    assert missing.exit_code != 0 and "no such folder" in missing.output


def test_html_refuses_run_options_and_from_needs_html(toy_env: Path, tmp_path: Path) -> None:
    out = invoke("report", "--html", "--seeds", "8")
    assert out.exit_code != 0 and "drop the run options" in out.output
    out = invoke("report", "--from", str(tmp_path))
    assert out.exit_code != 0 and "--from goes with --html" in out.output


def test_verdict_cells_read_the_summary_defensively() -> None:
    assert row_verdict({"within": True}, True) == ("within", "v-within")
    assert row_verdict({"within": "False"}, True) == ("NO", "v-no")
    assert row_verdict({"within": True}, False) == ("n/a (smoke)", "v-na")
    assert row_verdict({"within": float("nan")}, True) == ("", "")
    assert row_verdict({}, True) == ("", "")                                       # no within column at all
    assert row_verdict({"within": True, "comparable": False}, True)[0] == "not comparable"
    assert row_verdict({"within": True, "comparable": True}, True)[0] == "within"
    assert row_verdict({"within": "not comparable"}, True)[0] == "not comparable"


def test_a_summary_with_a_dataset_column_shows_it(site_results: Path, tmp_path: Path) -> None:
    summary = site_results / "toy" / "full" / "summary.csv"
    frame = pd.read_csv(summary)
    frame["dataset"] = "authors"
    frame["comparable"] = [i % 2 == 0 for i in range(len(frame))]
    frame.to_csv(summary, index=False)
    page = (build(site_results, tmp_path / "site").parent / "toy.html").read_text(encoding="utf-8")
    assert "<th>dataset</th>" in page and "not comparable" in page


def test_markdown_of_the_studies_renders_tables_lists_and_code() -> None:
    text = markdown_html("**Erratum `E-4`.** See [x](y.md).\n\n| a | b |\n|---|---|\n| 1 | <2> |\n\n- one\n  more\n- two")
    assert "<strong>Erratum <code>E-4</code>.</strong>" in text and '<a href="y.md">x</a>' in text
    assert "<td>&lt;2&gt;</td>" in text and "<li>one more</li><li>two</li>" in text


# ---------------------------------------------------------------- published results


def fake_full_run(root: Path, eid: str, *, png: bool = True, within: tuple[bool, ...] = (True,)) -> Path:
    d = root / eid / "full"
    (d / "tables").mkdir(parents=True)
    run = {"profile": "full", "variant": "x", "command": f"repro run {eid} --profile full --out /somewhere/results "
           "--jobs 2", "argv": ["/home/someone/.venv/bin/repro", "run", eid]}
    (d / "run.json").write_text(json.dumps(run))
    pd.DataFrame({"x": [1]}).to_csv(d / "trials.csv", index=False)
    pd.DataFrame({"method": "m", "setting": "", "metric": "acc", "n": 3, "mean": 0.5, "std": 0.1, "paper": 0.5,
                  "diff": 0.0, "tolerance": 0.01, "within": list(within)}).to_csv(d / "summary.csv", index=False)
    pd.DataFrame({"a": [1]}).to_csv(d / "tables" / "extra.csv", index=False)
    if png:
        draw_png(d / "fig.png")
    (d / "fig.pdf").write_bytes(b"%PDF")
    return d


SPECS = {k: v for k, v in load_all(ROOT / "experiments").items() if k in ("thesis-table-3.1", "compat-fairnr",
                                                                          "dpfermi-fig-5")}


def test_publish_copies_the_full_runs_without_machine_paths(tmp_path: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "published"
    fake_full_run(results, "thesis-table-3.1")
    (results / "thesis-table-3.1" / "smoke").mkdir()
    chosen = pub.publish(SPECS, [results], out)
    assert list(chosen) == ["thesis-table-3.1"]
    got = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert got == [f"thesis-table-3.1/full/{f}" for f in ("fig.png", "run.json", "summary.csv", "tables/extra.csv",
                                                            "trials.csv")]
    run = json.loads((out / "thesis-table-3.1" / "full" / "run.json").read_text())
    assert "argv" not in run and run["command"] == "repro run thesis-table-3.1 --profile full --jobs 2"


def test_publish_keeps_earlier_results_and_takes_cpu_where_full_needs_a_gpu(tmp_path: Path) -> None:
    first, second, out = tmp_path / "a", tmp_path / "b", tmp_path / "published"
    fake_full_run(first, "thesis-table-3.1")
    pub.publish(SPECS, [first], out)
    cpu = fake_full_run(second, "dpfermi-fig-5")
    cpu.rename(cpu.with_name("cpu"))
    assert list(pub.publish(SPECS, [second], out)) == ["dpfermi-fig-5"]
    assert (out / "thesis-table-3.1" / "full" / "run.json").is_file()      # kept
    assert (out / "dpfermi-fig-5" / "cpu" / "run.json").is_file()


def test_publish_refuses_over_the_size_limit_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results, out = tmp_path / "results", tmp_path / "published"
    fake_full_run(results, "thesis-table-3.1")
    monkeypatch.setattr(pub, "LIMIT_BYTES", 1000)
    with pytest.raises(pub.InvalidParameterError, match="over the 0.0 MB limit .*nothing was written"):
        pub.publish(SPECS, [results], out)
    assert not out.exists()
    with pytest.raises(pub.InvalidParameterError, match="no full-profile run"):
        pub.publish(SPECS, [tmp_path / "empty"], out)


def test_published_folder_is_small_png_only_and_complete() -> None:
    """What is committed under docs/results: ≤ 10 MB, figures as PNG only, every run complete and free of this
    machine's paths (a published run.json has no argv and no --out)."""
    folder = ROOT / "docs" / "results"
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= pub.LIMIT_BYTES
    assert not [p for p in files if p.suffix in (".pdf", ".svg", ".jpg")]
    for run_json in folder.glob("*/*/run.json"):
        run = json.loads(run_json.read_text(encoding="utf-8"))
        assert "argv" not in run and "--out" not in str(run.get("command")), run_json
        assert (run_json.parent / "summary.csv").is_file()
