"""Wall seconds of one warm DP-FERMI trial when one process runs it, and when two processes run it at once
(what ``--jobs 2`` does on a 2-core machine), for the compiled unit and the numpy reference engine.

Each process loads Adult (a 75 % training split: 33,916 rows × 102 features),
trains one trial of ``--lambdas`` models (reference variant, batch 1,024, ``--epochs`` epochs) once to warm
its caches and compile, waits until every process is warm, then times a second trial (wall clock). A
compiled trial that takes twice as long beside a second process is sharing a CPU with it.

    REPRO_DATA_MIRROR=../shared/data OMP_NUM_THREADS=1 python benchmarks/concurrent_trials.py [--epochs 100]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WORKER = r"""
import json, math, sys, time
import numpy as np
engine, epochs, lambdas, barrier = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
from repro.datasets.adult import load_adult
from repro.datasets.tabular import standardize, train_test_indices
from repro.learners.dp_fermi import REFERENCE, train_dp_fermi_batch
from repro.learners.dp_fermi_compiled import fit_many
ds = load_adult()
tr, _ = train_test_indices(ds.n, 0.75, rng=np.random.default_rng(0))
X = standardize(ds.X, tr, ds.numeric_columns)[tr]
y, s = ds.y[tr].astype(np.int64), ds.s[tr].astype(np.int64)
cfgs = [REFERENCE.with_(epochs=epochs, sigma_theta=1.0, sigma_w=1.0, lam=float(lam))
        for lam in np.linspace(0, 3, lambdas)]
def trial():
    if engine == "numpy":
        train_dp_fermi_batch(X, y, s, cfgs, rng=np.random.default_rng(1))
    else:
        fit_many(X, y, s, [cfgs], [np.random.default_rng(1)])
trial()
open(barrier + "." + str(__import__("os").getpid()), "w").close()
while len(__import__("glob").glob(barrier + ".*")) < int(sys.argv[5]):
    time.sleep(0.01)
t = time.perf_counter()
trial()
print(json.dumps({"wall": time.perf_counter() - t, "steps": epochs * math.ceil(len(y) / 1024)}))
"""


def _run(engine: str, processes: int, epochs: int, lambdas: int, tmp: Path) -> list[dict]:
    barrier = tmp / f"{engine}-{processes}-{time.time_ns()}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, engine, str(epochs), str(lambdas), str(barrier),
                               str(processes)], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(processes)]
    return [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=100, help="epochs per trial (the figures use 200–300)")
    parser.add_argument("--lambdas", type=int, default=11, help="models (λ values) per trial")
    args = parser.parse_args()
    import tempfile

    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| engine | processes at once | wall s per trial (each process) | ms per step |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for engine in ("compiled", "numpy"):
            for processes in (1, 2):
                out = _run(engine, processes, args.epochs, args.lambdas, Path(tmp))
                walls = ", ".join(f"{o['wall']:.2f}" for o in out)
                ms = ", ".join(f"{1e3 * o['wall'] / o['steps']:.3f}" for o in out)
                print(f"| {engine} | {processes} | {walls} | {ms} |", flush=True)


if __name__ == "__main__":
    main()
