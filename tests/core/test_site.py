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
from repro.engine.results import ResultBundle
from repro.engine.site import MARKER, markdown_html, row_verdict
from repro.engine.spec import load_all

ROOT = Path(__file__).parents[2]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def add_result(name: str, document: str, status: bool = False) -> None:
    """A copy of the toy experiment under another id and document (the site filters by document)."""
    import os

    exp = Path(os.environ["REPRO_EXPERIMENTS_DIR"])
    text = (exp / "toy.toml").read_text().replace('id = "toy"', f'id = "{name}"')
    text = text.replace('document = "none"', f'document = "{document}"')
    (exp / f"{name}.toml").write_text(text + ('\n[fidelity]\nstatus = "reproduced"\n' if status else ""))


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
    add_result("toy-two", "Another paper (2024)", status=True)
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
    assert ">3 saved runs</a>" in text and ">1 saved run</a>" in text and text.count("saved run") == 2


def test_a_result_page_lists_every_run_labelled_by_what_it_changed(site_results: Path, tmp_path: Path) -> None:
    site = build(site_results, tmp_path / "site").parent
    page = (site / "toy.html").read_text(encoding="utf-8")
    labels = re.findall(r"<h2>Run: ([^<]*)</h2>", page)
    assert labels == ["profile full", "profile smoke", "profile smoke, seeds 8"]   # the profile's full run first
    for anchor in re.findall(r'<li><a href="#([^"]+)">', page):
        assert f'id="{anchor}"' in page
    full = page.split("<h2>Run: profile smoke</h2>", 1)[0]
    assert re.search(r'<td class="v-(within|no)">(within|NO)</td>', full)   # full: verdicts shown
    assert "not comparable (profile: smoke" in page                     # smoke: not judged, with the reason
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
    run = {"profile": "full", "variant": "x", "command": f"repro run {eid} --profile full --out some/results "
           "--jobs 2", "argv": [".venv/bin/repro", "run", eid]}
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
                                                            "trials.csv.gz")]
    run = json.loads((out / "thesis-table-3.1" / "full" / "run.json").read_text())
    assert "argv" not in run and run["command"] == "repro run thesis-table-3.1 --profile full --jobs 2"


def test_publish_compacts_figures_and_trials_and_they_read_back(tmp_path: Path) -> None:
    """Figures become palette PNGs of the same size in pixels, trials.csv becomes trials.csv.gz, and the published
    run loads back with the same trials; publishing twice gives the same bytes."""
    from PIL import Image

    results = tmp_path / "results"
    run = fake_full_run(results, "thesis-table-3.1")
    pd.DataFrame({"x": range(500), "y": [0.25] * 500}).to_csv(run / "trials.csv", index=False)
    first, second = tmp_path / "a", tmp_path / "b"
    pub.publish(SPECS, [results], first)
    pub.publish(SPECS, [results], second)
    folder = first / "thesis-table-3.1" / "full"
    with Image.open(run / "fig.png") as original, Image.open(folder / "fig.png") as published:
        assert published.mode == "P" and published.size == original.size
    assert (folder / "trials.csv.gz").stat().st_size < (run / "trials.csv").stat().st_size
    bundle = ResultBundle.load(SPECS["thesis-table-3.1"], folder)
    pd.testing.assert_frame_equal(bundle.trials, pd.read_csv(run / "trials.csv"))
    for path in folder.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (second / path.relative_to(first)).read_bytes(), path


def test_publish_leaves_out_a_large_table_and_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A figure's raw curves (bandit-regret's tables/curves.csv is 1.9 MB) would fill the 10 MB alone: a table over
    TABLE_LIMIT_BYTES is not copied, and the published run.json says which and how large."""
    results, out = tmp_path / "results", tmp_path / "published"
    run = fake_full_run(results, "thesis-table-3.1")
    pd.DataFrame({"x": range(200)}).to_csv(run / "tables" / "curves.csv", index=False)
    big = (run / "tables" / "curves.csv").stat().st_size
    monkeypatch.setattr(pub, "TABLE_LIMIT_BYTES", big - 1)
    pub.publish(SPECS, [results], out)
    folder = out / "thesis-table-3.1" / "full"
    assert (folder / "tables" / "extra.csv").is_file() and not (folder / "tables" / "curves.csv").exists()
    assert json.loads((folder / "run.json").read_text())["unpublished_tables"] == {"tables/curves.csv": big}


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


# ---------------------------------------------------------------- in a real browser (headless Chromium)

#: run first in the page (injected into a copy of it): records console errors and failed loads, then, after the
#: load event, the images' natural sizes, the dashboard's rows and what a status filter leaves visible
HARNESS = """<script>
window.__errors = [];
(function () {
  var original = console.error;
  console.error = function () { window.__errors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
                                 return original.apply(console, arguments); };
  window.addEventListener('error', function (e) {
    window.__errors.push('error: ' + (e.message || (e.target && (e.target.src || e.target.href)) || e.type));
  }, true);
  window.addEventListener('unhandledrejection', function (e) { window.__errors.push('rejection: ' + e.reason); });
  window.addEventListener('load', function () { setTimeout(function () {
    var visible = function (rows) { return rows.filter(function (r) { return !r.hidden && r.offsetParent !== null; }).length; };
    var out = {errors: window.__errors, images: Array.prototype.map.call(document.images, function (i) {
      return {src: i.getAttribute('src'), width: i.naturalWidth, height: i.naturalHeight, complete: i.complete}; })};
    var rows = Array.prototype.slice.call(document.querySelectorAll('#dashboard tbody tr'));
    if (rows.length) {
      out.rows = rows.length; out.visible = visible(rows);
      out.filters = ['document', 'status'].map(function (key) {
        var select = document.getElementById('f-' + key);
        select.value = select.options[1].value; select.dispatchEvent(new Event('change'));
        var seen = {key: key, value: select.value, visible: visible(rows),
                    matching: rows.filter(function (r) { return r.dataset[key] === select.value; }).length,
                    shown: document.getElementById('shown').textContent};
        select.value = ''; select.dispatchEvent(new Event('change'));
        return seen;
      });
      out.visibleReset = visible(rows);
    }
    var pre = document.createElement('pre'); pre.id = 'harness-result'; pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }, 0); });
})();
</script>"""


def chromium() -> str:
    """The headless browser: $REPRO_CHROMIUM, else Debian's `chromium` (CI installs it); skip without one,
    except under CI=true, where the browser test must run."""
    import os
    import shutil

    from tests.conftest import on_ci

    found = os.environ.get("REPRO_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if found:
        return found
    reason = "no Chromium found (install Debian's `chromium`, or set REPRO_CHROMIUM to a Chrome/Chromium binary)"
    if on_ci():
        pytest.fail(f"the browser test must run under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def _chromium(binary: str, *args: str, profile: Path) -> str:
    import subprocess

    proc = subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                           "--disable-extensions", f"--user-data-dir={profile}", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def render(binary: str, page: Path, tmp_path: Path) -> dict:
    """Load ``page`` (a copy beside it, with the harness first in <head>) and return what the harness saw."""
    text = page.read_text(encoding="utf-8")
    probe = page.with_name(f"probe-{page.name}")
    probe.write_text(text.replace("<head>", "<head>" + HARNESS, 1), encoding="utf-8")
    try:
        dom = _chromium(binary, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri(), profile=tmp_path / "cr")
    finally:
        probe.unlink()
    found = re.search(r'<pre id="harness-result">(.*?)</pre>', dom, flags=re.S)
    assert found, f"the page's harness did not report (load event never fired?): {dom[-500:]}"
    import html as htmllib

    return json.loads(htmllib.unescape(found.group(1)))


def non_blank(png: Path) -> bool:
    """More than one colour in the picture (a blank page or figure has one)."""
    import matplotlib.image as mpimg
    import numpy as np

    pixels = mpimg.imread(png)
    return pixels.ndim == 3 and np.unique(pixels.reshape(-1, pixels.shape[-1])[::7], axis=0).shape[0] > 1


@pytest.fixture
def browser() -> str:
    """Before the site is built: without a browser the test skips (fails under CI=true) at once."""
    return chromium()


def test_the_site_in_a_real_browser(browser: str, site_results: Path, tmp_path: Path) -> None:
    """Headless Chromium renders the index and two result pages: no console errors or failed loads, every
    figure loads with a natural size and is not blank, the table has one row per result, and a status filter
    hides the rows of the other statuses. Screenshots go to $REPRO_SITE_SCREENSHOTS when set (to look at)."""
    import os

    binary = browser
    site = build(site_results, tmp_path / "site").parent
    index = render(binary, site / "index.html", tmp_path)
    assert index["errors"] == [], index["errors"]
    assert index["rows"] == 3 == index["visible"]                      # one row per result, all shown at first
    for seen in index["filters"]:                                      # each filter hides the other rows
        assert 0 < seen["visible"] == seen["matching"] < index["rows"], seen
        assert seen["shown"] == f"{seen['matching']} of 3 results shown"
    assert index["visibleReset"] == 3
    pages = {name: render(binary, site / name, tmp_path) for name in ("toy.html", "toy-three.html")}
    for name, seen in pages.items():
        assert seen["errors"] == [], (name, seen["errors"])
        for image in seen["images"]:
            assert image["complete"] and image["width"] > 0 and image["height"] > 0, (name, image)
            assert non_blank(site / unquote(image["src"])), image
    assert len(pages["toy.html"]["images"]) == 1 and pages["toy-three.html"]["images"] == []
    shots = Path(os.environ.get("REPRO_SITE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    for name in ("index.html", "toy.html"):
        shot = shots / f"{Path(name).stem}.png"
        _chromium(binary, "--window-size=1280,1400", f"--screenshot={shot}", (site / name).as_uri(),
                  profile=tmp_path / "cr")
        assert shot.is_file() and non_blank(shot), shot


def _audited_toy(results: Path) -> None:
    """The toy full run as ``repro run --audit`` leaves it: an ε label in the summary, the bound beside it, and
    ``tables/one_run_audit.csv`` (one audited cell, one not)."""
    run = results / "toy" / "full"
    summary = pd.read_csv(run / "summary.csv")
    summary["eps_label"] = "accounted"
    summary.to_csv(run / "summary.csv", index=False)
    (run / "tables").mkdir(exist_ok=True)
    pd.DataFrame([{"method": summary["method"].iloc[0], "variant": "v", "setting": "x=1.0", "data": "d",
                   "epsilon": 3.0, "delta": 1e-5, "label": "accounted", "relation": "add or remove one record",
                   "canaries": 33916, "guesses": 338, "correct": 277, "audited_epsilon": 1.184, "ratio": 0.395,
                   "confidence": 0.95, "status": "audited (one run, white-box)"},
                  {"method": "other", "epsilon": 3.0, "status": "not audited: nominal"}]).to_csv(
        run / "tables" / "one_run_audit.csv", index=False)


def test_a_result_page_shows_the_audited_epsilon_beside_the_labels(site_results: Path, tmp_path: Path) -> None:
    _audited_toy(site_results)
    site = build(site_results, tmp_path / "site").parent
    page = (site / "toy.html").read_text(encoding="utf-8")
    full = page.split("<h2>Run: profile smoke</h2>", 1)[0]
    privacy = full.split("<h3>Privacy</h3>", 1)[1].split("<h3>Tables</h3>", 1)[0]
    assert "<th>audited ε (one-run audit)</th>" in privacy and "1 cell: ε ≥ 1.184 (95%)" in privacy
    assert "<td>3 (accounted)</td><td>1.184 (95%)</td><td>0.4</td><td>33,916</td><td>277 / 338</td>" in privacy
    assert "1 other privacy cell(s) not audited" in privacy
    smoke = page.split("<h2>Run: profile smoke</h2>", 1)[1]          # a run that was not audited: no column
    assert "audited ε" not in smoke and "one-run" not in smoke.lower()


def test_the_report_shows_the_audited_epsilon_per_result(site_results: Path) -> None:
    _audited_toy(site_results)
    assert invoke("report", "--out", str(site_results)).exit_code == 0
    text = (site_results / "REPORT.md").read_text(encoding="utf-8")
    section = text.split("<!-- repro-report-section: toy/full -->", 1)[1].split("<!-- repro-report-section:", 1)[0]
    assert "**One-run privacy audit**" in section
    assert "| x=1.0 | 3 (accounted) | 1.184 (95%) | 0.4 | 33,916 | 277 / 338 | add or remove one record |" in section
    assert text.count("**One-run privacy audit**") == 1                  # the other runs were not audited


def test_an_audited_share_names_the_attacked_steps_own_epsilon() -> None:
    """A baseline's DP-SGD steps spend part of the cell's ε (PF-LD's primal): the claimed column names that part,
    the ε the ratio divides by; a cell audited whole shows its ε alone."""
    from types import SimpleNamespace

    from repro.engine.report import one_run_audit

    table = pd.DataFrame([{"method": "pf-ld", "setting": "epsilon=9.0", "epsilon": 9.0, "label": "nominal",
                           "claimed_epsilon": 8.281, "audited_epsilon": 3.036, "ratio": 0.3667, "confidence": 0.95,
                           "canaries": 45243, "guesses": 904, "correct": 877, "relation": "add or remove one record",
                           "status": "audited (one run, white-box): its DP-SGD steps"},
                          {"method": "tran-2021a", "setting": "epsilon=9.0", "epsilon": 9.0, "label": "nominal",
                           "claimed_epsilon": 9.0, "audited_epsilon": 3.1, "ratio": 0.34, "confidence": 0.95,
                           "canaries": 45243, "guesses": 904, "correct": 879, "relation": "add or remove one record",
                           "status": "audited (one run, white-box): its DP-SGD steps"}])
    rows, skipped = one_run_audit(SimpleNamespace(table=lambda name, default: table))
    assert skipped == 0 and rows[0][2] == "9 (nominal); its DP-SGD steps 8.281" and rows[1][2] == "9 (nominal)"
