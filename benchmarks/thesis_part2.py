"""Cost of the pieces of thesis Figures 5.1–5.10: LightGBM fits, mechanism applications, LP solves.

Prints seconds (CPU time of this process, and wall time) per LightGBM fit on Adult-26k and LSAC
(spec §6.1 hyper-parameters, n_jobs = 1, one 80 % training split), per application of GRR, SS and
OPT to the training attribute (k = 2, 5, 10), and per solve of problem (5.5.9) (k = 5 and k = 10,
ζ = 1 and ζ = ζ_min). The full grid is 5 settings × 8 ε × 3 mechanisms × 20 seeds = 2,400 fits
plus 100 non-private fits; multiply the fit time by 2,500 / jobs for the full-profile budget.

Needs the data (REPRO_DATA_MIRROR=../shared/data or a cached copy).

    python benchmarks/thesis_part2.py [--fits 2] [--repeat 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from repro.privacy.ldp_mechanisms import (
    grr_matrix,
    optimal_binary_matrix,
    optimal_nonbinary_matrix,
    perturb,
    subset_selection,
    zeta_min,
)
from repro.studies.thesis.ldp_figures import prepared, stratified_split

HYPER = {"adult": (38, 0.02255696731716368), "lsac": (9, 0.18177994587365698)}


def timed(fn, repeat: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per call, averaged over ``repeat`` calls."""
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.process_time() - c0) / repeat, (time.perf_counter() - w0) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=2, help="LightGBM fits per dataset")
    parser.add_argument("--repeat", type=int, default=20, help="repetitions of the cheap operations")
    args = parser.parse_args()
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    print(f"{'operation':58s} {'cpu s':>9s} {'wall s':>9s}")
    for dataset, attribute in (("adult", "gender"), ("lsac", "gender")):
        c0 = time.perf_counter()
        prepared.cache_clear()
        data = prepared(dataset, attribute)
        print(f"{'load + one-hot ' + dataset:58s} {'':>9s} {time.perf_counter() - c0:9.3f}")
        train, test = stratified_split(data["y"], test_size=0.2, subsample=1.0, rng=rng)
        x = np.hstack([data["x"], np.eye(data["k"], dtype=np.float32)[data["a"]]])
        depth, lr = HYPER[dataset]

        def fit(x=x, y=data["y"], train=train, test=test, depth=depth, lr=lr):
            m = lgb.LGBMClassifier(objective="binary", n_estimators=1100, max_depth=depth, learning_rate=lr,
                                   random_state=0, n_jobs=1, verbose=-1)
            m.fit(x[train], y[train])
            m.predict(x[test])

        cpu, wall = timed(fit, args.fits)
        print(f"{f'LightGBM fit+predict {dataset} ({train.size} rows, {x.shape[1]} cols)':58s} {cpu:9.3f} {wall:9.3f}")

    n = 36_679  # Adult training split
    for k in (2, 5, 10):
        a = rng.integers(0, k, n)
        for name, fn in (
            ("GRR", lambda a=a, k=k: perturb(a, grr_matrix(k, 1.0), rng=rng)),
            ("SS (multi-hot)", lambda a=a, k=k: subset_selection(a, k, 0.25, rng=rng)),
            ("OPT (sampling from Q)", lambda a=a, k=k: perturb(a, optimal_binary_matrix(1.0, 0) if k == 2
                                                               else grr_matrix(k, 1.0), rng=rng)),
        ):
            cpu, wall = timed(fn, args.repeat)
            print(f"{f'{name}, k = {k}, n = {n}':58s} {cpu:9.5f} {wall:9.5f}")

    for dataset, attribute in (("adult", "race"), ("lsac", "fam_inc"), ("adult", "race_gender")):
        data = prepared(dataset, attribute)
        p, p1 = data["p"], data["p1"]
        for eps in (0.05, 1.0, 8.0):
            cpu, wall = timed(lambda p=p, p1=p1, eps=eps: optimal_nonbinary_matrix(p, p1, eps), 3)
            z = zeta_min(p, eps) + 1e-6
            cpu2, wall2 = timed(lambda p=p, p1=p1, eps=eps, z=z: optimal_nonbinary_matrix(p, p1, eps, zeta=z), 3)
            label = f"LP (5.5.9) {dataset}-{attribute} k = {p.size} ε = {eps:g}"
            print(f"{label + ', ζ = 1':58s} {cpu:9.4f} {wall:9.4f}")
            print(f"{label + ', ζ_min':58s} {cpu2:9.4f} {wall2:9.4f}")


if __name__ == "__main__":
    main()
