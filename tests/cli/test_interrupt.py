"""Ctrl-C: exit 130 with one line saying the cache is intact and how to resume (issue #15, item 9)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main

ROOT = Path(__file__).parents[2]


def write_experiment(toy_env: Path, name: str, params: str) -> None:
    exp = Path(os.environ["REPRO_EXPERIMENTS_DIR"])
    text = (exp / "toy.toml").read_text().replace('id = "toy"', f'id = "{name}"')
    text = text.replace("[params]\nx = 1.0", f"[params]\nx = 1.0\n{params}")
    (exp / f"{name}.toml").write_text(text)


def cached_entries(results: Path, name: str) -> int:
    return len(list((results / ".cache" / name).glob("*/*.pkl")))


def test_interrupt_in_process_exits_130_with_one_line(toy_env: Path, ctrl_c_default: None) -> None:
    write_experiment(toy_env, "toy-int", "interrupt_reps = [2]")
    result = CliRunner().invoke(main, ["run", "toy-int", "--quiet"])
    assert result.exit_code == 130, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Aborted" not in result.output and "Traceback" not in result.output
    assert "trial cache is intact" in lines[0] and "rerun the same command" in lines[0]
    # the workers get every cell's repetition 0 first (runner.dispatch_order), then the first cell's 1 and 2:
    # exactly the trials handed out before the first repetition 2 ran, and were cached
    from repro.engine.runner import RunConfig, dispatch_order, plan_trials
    from repro.engine.spec import get_experiment

    order = [t.context.repetition for t in dispatch_order(plan_trials(get_experiment("toy-int"), RunConfig()))]
    assert cached_entries(toy_env, "toy-int") == order.index(2) > 2
    assert not (toy_env / "toy-int").exists()  # no result folder for an interrupted run


def test_interrupt_under_no_cache_does_not_promise_a_cache(toy_env: Path, ctrl_c_default: None) -> None:
    write_experiment(toy_env, "toy-int", "interrupt_reps = [2]")
    result = CliRunner().invoke(main, ["run", "toy-int", "--quiet", "--no-cache"])
    assert result.exit_code == 130, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "cache is intact" not in lines[0] and "resume from the cache" not in lines[0]
    assert "--no-cache" in lines[0] and "no trial was kept" in lines[0]
    assert cached_entries(toy_env, "toy-int") == 0  # nothing was written, as the line says


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX")
@pytest.mark.parametrize("backend", ["loky", "dask", "ray"])
def test_sigint_with_two_workers_exits_130_and_resumes(toy_env: Path, backend: str) -> None:
    """A real Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while workers run trials.

    Used to print "Aborted!" and exit 1 (sometimes 134 with a fatal error at interpreter shutdown).
    """
    if backend != "loky":
        pytest.importorskip({"dask": "distributed", "ray": "ray"}[backend], reason=f"the {backend} extra is missing")
    write_experiment(toy_env, "toy-slow", "sleep = 0.4")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("REPRO_DASK_SCHEDULER", None)
    env.pop("REPRO_RAY_ADDRESS", None)
    cmd = [sys.executable, "-m", "repro", "run", "toy-slow", "--jobs", "2", "--quiet", "--backend", backend]
    # SIGINT back to its default in the child: a shell starts background jobs with it ignored
    proc = subprocess.Popen(cmd, cwd=toy_env.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while cached_entries(toy_env, "toy-slow") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Aborted" not in err and "Fatal" not in err
    assert "trial cache is intact" in err
    done = cached_entries(toy_env, "toy-slow")
    assert 2 <= done < 12
    if backend != "loky":
        return  # resuming is backend-independent; save the cluster start-up
    rerun = subprocess.run(cmd, cwd=toy_env.parent, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert cached_entries(toy_env, "toy-slow") == 12
