"""Code that cannot take the runner down: ``sys.exit``, a ``KeyboardInterrupt`` the code raises itself, a worker
killed (as the out-of-memory killer would) or crashed by a segmentation fault, and a trial that never returns
(``--timeout``) each end as the usual per-trial failure line naming the trial, or as one ``repro: error:``
line for a lost worker; the other trials stay cached; no traceback without ``--debug``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main

ROOT = Path(__file__).parents[2]


def write_experiment(name: str, params: str) -> None:
    exp = Path(os.environ["REPRO_EXPERIMENTS_DIR"])
    text = (exp / "toy.toml").read_text().replace('id = "toy"', f'id = "{name}"')
    text = text.replace("[params]\nx = 1.0", f"[params]\nx = 1.0\n{params}")
    (exp / f"{name}.toml").write_text(text)


def cached(results: Path, name: str) -> int:
    return len(list((results / ".cache" / name).glob("*/*.pkl")))


def lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(("params", "words"), [
    ("exit_reps = [1]", "sys.exit(3)"),
    ("raise_interrupt_reps = [1]", "raised KeyboardInterrupt (no Ctrl-C was pressed)"),
])
def test_exit_and_raised_interrupt_are_trial_failures(toy_env: Path, jobs: str, params: str, words: str,
                                                      ctrl_c_default) -> None:
    """``sys.exit(3)`` exited the whole run with rc 3 and printed nothing. (Ctrl-C as an interactive user has it: a
    process that inherited SIGINT ignored cannot tell a trial's own KeyboardInterrupt from a Ctrl-C.)"""
    write_experiment("toy-bad", params)
    result = CliRunner().invoke(main, ["run", "toy-bad", "--quiet", "--jobs", jobs])
    assert result.exit_code == 1, result.output
    (line,) = lines(result.output)
    assert line.startswith("repro: error: 4 of 12 trials of 'toy-bad' failed (first: method 'a', setting "
                           "'epsilon=1.0', repetition 1: "), line
    assert words in line and "Traceback" not in result.output
    assert cached(toy_env, "toy-bad") == 8   # every other trial is kept


def _subprocess_run(toy_env: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "repro", "run", *args], cwd=toy_env.parent, env=env,
                          capture_output=True, text=True, timeout=180)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(("params", "how"), [
    ("kill_reps = [2]", "killed by SIGKILL"),
    ("segv_reps = [2]", "SIGSEGV"),
])
def test_a_lost_worker_is_one_error_line(toy_env: Path, params: str, how: str) -> None:
    """A killed worker printed a ~40-line loky traceback and no ``repro: error:`` line."""
    write_experiment("toy-lost", params)
    proc = _subprocess_run(toy_env, "toy-lost", "--jobs", "2", "--quiet")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    (line,) = lines(proc.stderr)
    assert line.startswith("repro: error: toy-lost: a worker process was lost (") and how in line, line
    assert "repetition" in line and "a rerun resumes" in line, line
    assert cached(toy_env, "toy-lost") >= 1   # what completed before the loss is kept


def test_timeout_stops_a_trial_that_never_returns(toy_env: Path) -> None:
    write_experiment("toy-slow", "sleep = 60")
    result = CliRunner().invoke(main, ["run", "toy-slow", "--quiet", "--seeds", "1", "--timeout", "0.2"])
    assert result.exit_code == 1, result.output
    (line,) = lines(result.output)
    assert "4 of 4 trials" in line and "longer than --timeout 0.2 s" in line and "setting 'epsilon=1.0'" in line


def test_timeout_is_off_by_default_and_checked() -> None:
    from repro.engine.runner import RunConfig
    from repro.errors import InvalidParameterError

    assert RunConfig().timeout is None
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(InvalidParameterError, match="--timeout must be a positive number"):
            RunConfig(timeout=bad)


def test_a_real_ctrl_c_still_stops_the_run(toy_env: Path, ctrl_c_default: None) -> None:
    write_experiment("toy-int", "interrupt_reps = [2]")
    result = CliRunner().invoke(main, ["run", "toy-int", "--quiet"])
    assert result.exit_code == 130, result.output


def test_a_trial_with_no_grid_names_its_set_values(toy_env: Path) -> None:
    """A failing trial of a result with no grid said ``setting ''``."""
    exp = Path(os.environ["REPRO_EXPERIMENTS_DIR"])
    text = (exp / "toy.toml").read_text().replace('id = "toy"', 'id = "toy-flat"')
    text = text.replace('[grid]\nmethod = ["a", "b"]\nepsilon = [1.0, 3.0]\n', "")
    text = text.replace("[params]\nx = 1.0", "[params]\nx = 1.0\nfail_reps = [0]")
    text = text.replace('setting = { epsilon = 1.0 }\n', "")
    (exp / "toy-flat.toml").write_text(text)
    result = CliRunner().invoke(main, ["run", "toy-flat", "--quiet", "--seeds", "1", "--set", "x=2"])
    assert result.exit_code == 1, result.output
    (line,) = lines(result.output)
    assert "setting 'x=2.0'" in line and "setting ''" not in line, line
    result = CliRunner().invoke(main, ["run", "toy-flat", "--quiet", "--seeds", "1"])
    assert "the profile's parameters (smoke)" in result.output and "setting ''" not in result.output


# ------------------------------------------------------------------ --with: the path, and a method that exits or dies
METHOD = ("import os, signal, sys\nimport numpy as np\n"
          "from repro.privacy.guarantee import Guarantee, Label, Neighbouring\n"
          "class Bad:\n    privacy_guarantee = Guarantee(1.0, 0.0, Label.USER_DECLARED, "
          "Neighbouring.REPLACE_ONE, caveat='x')\n"
          "    def __init__(self, random_state=None): pass\n"
          "    def fit(self, X, y, sensitive_features=None): return self\n"
          "    def predict(self, X):\n        {body}\n")


@pytest.fixture
def real_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(ROOT / "experiments"))
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
@pytest.mark.parametrize(("name", "mode", "words"), [
    ("method", 0o644, "is not a .py file"),          # N7: was a 35-line traceback ('NoneType' ... 'loader')
    ("method.txt", 0o644, "is not a .py file"),
    ("locked.py", 0o000, "cannot read"),
    ("folder.py", None, "is a folder"),
])
def test_a_with_path_that_is_not_a_readable_py_file_is_one_line(real_env: Path, name: str, mode: int | None,
                                                                 words: str) -> None:
    path = real_env / name
    if mode is None:
        path.mkdir()
    else:
        path.write_text(METHOD.format(body="return X[:, 0] > 0"), encoding="utf-8")
        path.chmod(mode)
    if mode == 0o000 and os.access(path, os.R_OK):
        pytest.skip("running as a user who reads any file")
    result = CliRunner().invoke(main, ["run", "thesis-table-3.1", "--with", str(path)])
    assert result.exit_code == 1 and len(lines(result.output)) == 1, result.output
    assert words in result.output and "Traceback" not in result.output


@pytest.mark.data
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_with_method_that_calls_sys_exit_is_a_trial_failure(real_env: Path, data_mirror: Path,
                                                              monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """N4: a --with method whose predict calls sys.exit(3) ended repro with rc 3 and printed nothing."""
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(real_env / "data"))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    (real_env / "bad.py").write_text(METHOD.format(body="sys.exit(3)"), encoding="utf-8")
    result = CliRunner().invoke(main, ["run", "thesis-table-3.1", "--with", str(real_env / "bad.py"), "--seeds", "1",
                                       "--set", "data=authors", "--quiet", "--jobs", jobs])
    assert result.exit_code == 1, result.output
    line = lines(result.output)[-1]
    assert "method 'Bad (yours)', setting 'data=authors'" in line and "sys.exit(3)" in line, result.output
    assert "Traceback" not in result.output
    n_paper = len(list((real_env / "results" / ".cache" / "thesis-table-3.1").glob("*/*.pkl")))
    assert n_paper >= 1   # the paper's methods' trials are cached


@pytest.mark.data
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_with_method_whose_worker_is_killed_is_one_error_line(real_env: Path, data_mirror: Path) -> None:
    """N11: a killed --with worker printed a ~40-line loky traceback and no `repro: error:` line."""
    (real_env / "killer.py").write_text(METHOD.format(body="os.kill(os.getpid(), signal.SIGKILL)"),
                                        encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPRO_DATA_MIRROR": str(data_mirror),
           "REPRO_DATA_DIR": str(real_env / "data"), "REPRO_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "repro", "run", "thesis-table-3.1", "--with", "killer.py",
                           "--seeds", "1", "--set", "data=authors", "--quiet", "--jobs", "2"],
                          cwd=real_env, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    (line,) = lines(proc.stderr)
    assert line.startswith("repro: error: thesis-table-3.1: a worker process was lost (killed by SIGKILL"), line
    assert "Traceback" not in proc.stderr
