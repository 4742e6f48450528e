"""Unreachable clusters are one line, quickly; loky workers die with their driver (issue #24, item 5).

Only loopback addresses are used: 127.0.0.1 with a port that was just closed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.engine.backends import ClusterUnreachableError, _host_port, check_reachable

ROOT = Path(__file__).parents[2]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_host_port_parsing() -> None:
    assert _host_port("tcp://127.0.0.1:8786", 1) == ("127.0.0.1", 8786)
    assert _host_port("ray://10.0.0.2:10001", 1) == ("10.0.0.2", 10001)
    assert _host_port("10.0.0.2", 6379) == ("10.0.0.2", 6379)
    assert _host_port("auto", 6379) is None


def test_check_reachable_names_the_variable_and_the_fix() -> None:
    address = f"tcp://127.0.0.1:{closed_port()}"
    with pytest.raises(ClusterUnreachableError) as info:
        check_reachable(address, what="Dask scheduler", variable="REPRO_DASK_SCHEDULER", default_port=8786)
    message = str(info.value)
    assert "\n" not in message and address in message and "REPRO_DASK_SCHEDULER" in message and "unset" in message


@pytest.mark.parametrize("backend, variable, extra, scheme",
                         [("dask", "REPRO_DASK_SCHEDULER", "distributed", "tcp://"),
                          ("ray", "REPRO_RAY_ADDRESS", "ray", "")])
def test_unreachable_cluster_is_one_line_before_any_trial(toy_env: Path, monkeypatch: pytest.MonkeyPatch,
                                                          backend: str, variable: str, extra: str,
                                                          scheme: str) -> None:
    pytest.importorskip(extra, reason=f"the {backend} extra is not installed")
    monkeypatch.setenv(variable, f"{scheme}127.0.0.1:{closed_port()}")
    monkeypatch.setenv("REPRO_CLUSTER_TIMEOUT", "2")
    start = time.monotonic()
    result = CliRunner().invoke(main, ["run", "toy", "--backend", backend, "--jobs", "2", "--quiet"])
    assert time.monotonic() - start < 20
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output
    assert "cannot reach the" in lines[0] and variable in lines[0]
    assert not (toy_env / "toy").exists()


def test_bad_cluster_timeout_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_CLUSTER_TIMEOUT", "soon")
    with pytest.raises(Exception, match="REPRO_CLUSTER_TIMEOUT='soon'"):
        check_reachable("127.0.0.1:1", what="x", variable="V", default_port=1)


DRIVER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from repro.engine.backends import run_tasks
    from repro._testing.sleeper import sleeper
    for _ in run_tasks(sleeper, [sys.argv[1]] * 4, backend="loky", jobs=2):
        pass
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_loky_workers_exit_when_the_driver_is_killed(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path)], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while len([p for p in tmp_path.iterdir() if p.name.isdigit()]) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = [int(p.name) for p in tmp_path.iterdir() if p.name.isdigit()]
    assert len(workers) == 2, "the workers did not start"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [pid for pid in workers if _alive(pid)]
    for pid in survivors:  # do not leave them behind if the test fails
        os.kill(pid, signal.SIGKILL)
    assert not survivors, "loky workers ran on after the driver was killed"
    time.sleep(2)  # the resource tracker's last words, if any, come right after the workers exit
    assert "leaked" not in log.read_text()
