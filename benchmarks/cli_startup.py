"""Start-up time of the command line: ``repro --help``, ``repro list`` and ``repro list --ids``.

Each command runs in a fresh ``python -m repro`` subprocess (so imports are paid every time, as a
user pays them) ``--repeat`` times; the median wall time and the median CPU time (user + system of
the child, which depends far less on other load on the machine) are printed. Target (issue #24, item 8):
``repro --help`` and ``repro list`` answer in <= 0.5 s. ``--root`` times another checkout (for
a before/after comparison, e.g. the commit before the lazy imports).

    python benchmarks/cli_startup.py [--repeat 9] [--root PATH]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = (["--help"], ["list"], ["list", "--ids"], ["data", "--help"])
TARGET_S = 0.5


def time_command(args: list[str], root: Path, repeat: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of ``python -m repro ARGS`` run from ``root``."""
    env = {"REPRO_EXPERIMENTS_DIR": str(root / "experiments"), **os.environ, "PYTHONPATH": str(root)}
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "repro", *args], cwd=root, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    print(f"{'command':<24} wall s   CPU s  (medians of {args.repeat}; load average {os.getloadavg()[0]:.2f})")
    for command in COMMANDS:
        wall, cpu = time_command(command, args.root, args.repeat)
        targeted = command in (["--help"], ["list"])
        flag = "" if not targeted else "  ok" if wall <= TARGET_S else f"  wall above the {TARGET_S} s target"
        print(f"repro {' '.join(command):<18} {wall:6.2f}  {cpu:6.2f}{flag}")


if __name__ == "__main__":
    main()
