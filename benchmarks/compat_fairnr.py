"""Cost of the Cummings et al. (2019) simulations: FTPL oracle calls (Private-FairNR) and the Alg. 1 audit.

Prints, single-threaded: ms per CSC(H) oracle call (one FTPL* sample: exact per-type Laplace sums
plus one |H| × types matrix-vector product) on the synthetic data and on Adult (needs
``REPRO_DATA_MIRROR`` or the raw files), seconds per full-profile Private-FairNR trial, and seconds
per exact replace-one audit of Algorithm 1 (K = 10, |H| = 121, all neighbours).

    python benchmarks/compat_fairnr.py [--calls 200]
"""

from __future__ import annotations

import argparse
import time
import tomllib
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from repro.engine.trial import TrialContext
from repro.studies.cummings2019 import fairnr as study
from repro.theory import expmech_learner as em
from repro.theory import fairnr as fn

ROOT = Path(__file__).resolve().parents[1]


def oracle_ms(counts: np.ndarray, y: np.ndarray, g: np.ndarray, pred: np.ndarray, calls: int) -> float:
    data = fn.TypeData(counts, y, g)
    fdata, fpred = fn.flip_labels(data, pred)
    cum = fn.cumulative_loss(fdata, 10, 5.0)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(calls):
        fn.ftpl_oracle(fpred, fdata, cum, 0.01, rng=rng)
    return 1e3 * (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    params = tomllib.loads((ROOT / "experiments" / "compat-fairnr.toml").read_text())["params"]
    ctx = TrialContext("bench", "s", "m", 0)
    with threadpool_limits(limits=1):
        for ds in ("synthetic", "adult"):
            try:
                counts, _, y, g, pred, _ = study._data({**params, "dataset": ds}, ctx)
            except Exception as err:  # noqa: BLE001 - a missing dataset only skips that line
                print(f"{ds}: skipped ({err})")
                continue
            print(f"{ds}: |H| = {pred.shape[0]}, types = {pred.shape[1]}, n = {int(counts.sum())}: "
                  f"{oracle_ms(counts, y, g, pred, args.calls):.2f} ms per oracle call")
            start = time.perf_counter()
            study.run_trial({**params, "dataset": ds, "mode": "corrected", "epsilon": 1.0}, ctx)
            print(f"{ds}: {time.perf_counter() - start:.1f} s per full-profile trial "
                  f"(T = {params['T']}, m = {params['m']})")
        hyp, _ = em.threshold_class(10)
        counts = em.sample_counts(em.logistic_population(10), 400, rng=np.random.default_rng(0))
        start = time.perf_counter()
        res = em.audit_replace_one(counts, hyp, 1.0, (1.0, 2.0))
        print(f"Alg. 1 audit: {len(res.rows)} neighbours in {time.perf_counter() - start:.1f} s "
              f"(realised ε = {res.realised_epsilon:.3f} at ε = 1, n = 400)")


if __name__ == "__main__":
    main()
