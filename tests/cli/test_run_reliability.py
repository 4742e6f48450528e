"""`repro run` against hostile input (issue #15, items 7, 8, 11, 12): one clean line before any
trial runs, stale partial results cleaned, planning feedback, honest smoke output."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main


def run(*args: str):
    return CliRunner().invoke(main, ["run", *args])


def one_clean_line(result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert message in lines[0]



def test_out_below_a_file_fails_before_any_trial(toy_env: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "somefile"
    blocker.write_text("x")
    one_clean_line(run("toy", "--out", str(blocker / "sub")), "cannot be used")


@pytest.mark.parametrize("root", ["/proc", "/sys"])
def test_out_in_a_pseudo_filesystem_fails_before_any_trial(toy_env: Path, root: str) -> None:
    if not Path(root).is_dir():
        pytest.skip(f"no {root} here")
    one_clean_line(run("toy", "--out", f"{root}/repro-results"), "cannot be used")


def _with_dataset(toy_env: Path) -> None:
    exp = toy_env.parent / "experiments" / "toy.toml"
    exp.write_text('datasets = ["compas-two-years"]\n' + exp.read_text())


def test_data_dir_that_is_a_file_fails_before_any_trial(toy_env: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _with_dataset(toy_env)
    afile = tmp_path / "data-file"
    afile.write_text("x")
    monkeypatch.setenv("REPRO_DATA_DIR", str(afile))
    one_clean_line(run("toy", "--quiet"), "must name a folder")
    assert not (toy_env / ".cache" / "toy").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "epsilon=abc"], "expected a number, got 'abc'"),
        (["--set", "method=FOO"], "not an allowed value (allowed: a, b"),
        (["--base-seed", "-1"], "--base-seed must be >= 0"),
    ],
)
def test_bad_values_fail_before_any_trial(toy_env: Path, args: list[str], message: str) -> None:
    one_clean_line(run("toy", "--quiet", *args), message)
    assert not (toy_env / ".cache" / "toy").exists()


def test_empty_results_dir_variable_means_dot_results(toy_env: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("REPRO_RESULTS_DIR", "")
    assert run("toy", "--quiet").exit_code == 0
    assert (work / "results" / "toy" / "smoke" / "run.json").exists()
    assert not (work / "toy").exists()


def test_stale_partial_folders_are_cleaned(toy_env: Path) -> None:
    parent = toy_env / "toy"
    parent.mkdir(parents=True)
    dead = parent / ".smoke.999999999.abcd1234.partial"  # no such process
    old = parent / ".smoke.xyz_old.partial"  # older naming, older than an hour
    live = parent / f".smoke.{os.getpid()}.abcd1234.partial"  # a run writing right now
    for folder in (dead, old, live):
        folder.mkdir()
        (folder / "trials.csv").write_text("partial")
    hours_ago = time.time() - 7200
    os.utime(old, (hours_ago, hours_ago))
    assert run("toy", "--quiet").exit_code == 0
    assert not dead.exists() and not old.exists()
    assert live.exists()
    assert (parent / "smoke" / "run.json").exists()


def test_large_plans_are_announced(toy_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import repro.cli.run as run_cmd

    monkeypatch.setattr(run_cmd, "PLAN_WARN_TRIALS", 10)
    result = run("toy", "--seeds", "3")
    assert result.exit_code == 0
    assert "planning 12 trials (4 cells x 3 seeds)" in result.output
    assert "planned its 12 trials in" in result.output   # built once, while validating, and then run
    monkeypatch.setattr(run_cmd, "CHECK_CELLS", 2)   # a plan of very many cells is built when its run starts
    result = run("toy", "--seeds", "3", "--force")
    assert result.exit_code == 0
    assert "checked its 4 cells; the 12 trials are planned when the run starts" in result.output
    quiet_small = run("toy", "--seeds", "2", "--quiet")
    assert "planning" not in quiet_small.output


def test_smoke_output_says_numbers_are_not_comparable_and_hides_verdicts(toy_env: Path) -> None:
    result = run("toy")
    assert result.exit_code == 0
    assert "smoke profile: wiring check, not a reproduction" in result.output
    assert "1 paper values not comparable (shown as context: profile: smoke ≠ full)" in result.output
    assert " NO " not in result.output and "yes" not in result.output.split("within", 1)[1].split("\n", 3)[-1]
    summary = (toy_env / "toy" / "smoke" / "summary.csv").read_text()
    assert "within" in summary.splitlines()[0]  # the saved summary keeps the verdicts


def test_exact_checks_keep_verdicts_and_say_what_is_expected_to_fail(toy_env: Path) -> None:
    exp = toy_env.parent / "experiments" / "toy.toml"
    exp.write_text(exp.read_text().replace('kind = "simulation"', 'kind = "theorem-check"\n'
                                           'expected = "row a fails by design: the toy proof is wrong."')
                   + '\n[reference]\nprofiles = ["smoke", "full"]\nconditions = { seeds = 3 }\n')
    result = run("toy")
    assert result.exit_code == 0
    assert "paper comparisons within tolerance" in result.output
    assert "Expected: row a fails by design: the toy proof is wrong." in result.output
    assert "wiring check" not in result.output


def test_run_json_records_the_hash_of_the_bytes_read(toy_env: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from repro.datasets import store
    from repro.datasets.sources import SOURCES, RawSource

    content = b"a,b\n1,2\n"
    registered = RawSource(name="tmp-toy-source", filename="toy.csv", url=None,
                           sha256=hashlib.sha256(content).hexdigest(), size=len(content), rows=None,
                           license="test", citation="test", description="test", canonical=False)
    monkeypatch.setitem(SOURCES, registered.name, registered)
    exp = toy_env.parent / "experiments" / "toy.toml"
    exp.write_text(f'datasets = ["{registered.name}"]\n' + exp.read_text().replace(
        "x = 1.0\n", f'x = 1.0\nrequire_data = "{registered.name}"\n'))
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "toy.csv").write_bytes(content)
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "cache"))
    assert run("toy", "--quiet", "--jobs", "1").exit_code == 0
    recorded = json.loads((toy_env / "toy" / "smoke" / "run.json").read_text())["datasets_sha256"]
    assert recorded == {registered.name: registered.sha256}
    # bit rot behind an unchanged size and mtime; a new process re-hashes and re-fetches it
    cached = tmp_path / "cache" / "toy.csv"
    st = cached.stat()
    cached.write_bytes(b"a,b\n1,3\n")
    os.utime(cached, ns=(st.st_atime_ns, st.st_mtime_ns))
    store.clear_verdicts()
    assert run("toy", "--quiet", "--jobs", "1", "--force").exit_code == 0
    assert cached.read_bytes() == content
    recorded = json.loads((toy_env / "toy" / "smoke" / "run.json").read_text())["datasets_sha256"]
    assert recorded == {registered.name: registered.sha256}


def test_one_malformed_experiment_file_does_not_block_the_others(toy_env: Path) -> None:
    experiments = toy_env.parent / "experiments"
    (experiments / "broken.toml").write_text('id = "broken"\nkind = \n')
    listed = CliRunner().invoke(main, ["list"])
    assert listed.exit_code == 0 and "toy" in listed.output
    assert "SKIPPED broken.toml" in listed.output and "not valid TOML" in listed.output
    assert run("toy", "--quiet").exit_code == 0
    one_clean_line(run("broken"), "broken.toml: not valid TOML")


def test_data_list_names_a_missing_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["data", "list"])
    assert result.exit_code == 0 and "MISSING: no such folder" in result.output
