"""Cost of the pieces of thesis Figures 5.1–5.10: LightGBM fits, mechanism applications, LP solves.

Prints seconds (CPU time of this process, and wall time) per LightGBM fit on Adult-26k and LSAC
(spec §6.1 hyper-parameters, n_jobs = 1, one 80 % training split), per application of GRR, SS and
OPT to the training attribute (k = 2, 5, 10), and per solve of problem (5.5.9) (k = 5 and k = 10,
ζ = 1 and ζ = ζ_min). The full grid is 5 settings × 8 ε × 3 mechanisms × 20 seeds = 2,400 fits
plus 100 non-private fits; multiply the fit time by 2,500 / jobs for the full-profile budget.

``--trials`` also times whole full-profile trials (``run_trial``) of the Adult and LSAC figures two
ways: the scikit-learn wrapper path the study used before (``LGBMClassifier.fit`` + ``predict``) and
the study's lean path (``fit_predict``), checks that their records are identical, and splits one
lean trial into its parts (split + encoding, ``Dataset`` construction, boosting, prediction).

Needs the data (REPRO_DATA_MIRROR=../shared/data or a cached copy).

    python benchmarks/thesis_part2.py [--fits 2] [--repeat 20] [--trials 2]
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
from repro.studies.thesis import ldp_figures
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
    parser.add_argument("--trials", type=int, default=0, help="whole trials per path (0: skip)")
    args = parser.parse_args()
    import lightgbm as lgb

    if args.trials:
        compare_trials(args.trials)

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


def _wrapper_fit_predict(x_train, y_train, x_test, *, n_estimators, max_depth, learning_rate, seed):
    """The study's fit before it was made lean (kept here to time against)."""
    import lightgbm as lgb

    model = lgb.LGBMClassifier(objective="binary", n_estimators=n_estimators, max_depth=max_depth,
                               learning_rate=learning_rate, random_state=seed, n_jobs=1, verbose=-1)
    return model.fit(x_train, y_train).predict(x_test).astype(np.int64)


def compare_trials(n: int) -> None:
    """CPU/wall seconds per full-profile trial, wrapper path vs lean path; records must be equal."""
    from repro.engine.trial import TrialContext

    lean = ldp_figures.fit_predict
    cases = (("adult", "gender", 2, 38, 0.02255696731716368, "GRR", 1.0),
             ("adult", "race_gender", 10, 38, 0.02255696731716368, "OPT", 1.0),
             ("lsac", "fam_inc", 5, 9, 0.18177994587365698, "SS", 1.0))
    print(f"{'full-profile trial':58s} {'cpu s':>9s} {'wall s':>9s}")
    for dataset, attribute, k, depth, lr, method, eps in cases:
        params = dict(dataset=dataset, attribute=attribute, k=k, n_estimators=1100, max_depth=depth,
                      learning_rate=lr, test_size=0.2, subsample=1.0, data_source="auto", method=method,
                      epsilon=eps, variant="reference")
        prepared(dataset, attribute, "auto")
        out = {}
        for name, fitter in (("wrapper", _wrapper_fit_predict), ("lean", lean)):
            ldp_figures.fit_predict = fitter
            ctxs = [TrialContext("bench", f"method={method}", method, r) for r in range(n)]
            recs = []
            c0, w0 = time.process_time(), time.perf_counter()
            for ctx in ctxs:
                recs.append(ldp_figures.run_trial(params, ctx).records)
            cpu, wall = (time.process_time() - c0) / n, (time.perf_counter() - w0) / n
            out[name] = recs
            print(f"{f'{dataset}-{attribute} {method} ε={eps:g}, {name} path':58s} {cpu:9.3f} {wall:9.3f}")
        ldp_figures.fit_predict = lean
        print(f"{'  records identical':58s} {str(out['wrapper'] == out['lean']):>9s}")
        _parts(params)


def _parts(params) -> None:
    """One lean trial cut into its parts (CPU seconds)."""
    import lightgbm as lgb

    data = prepared(params["dataset"], params["attribute"], "auto")
    rng = np.random.default_rng(0)
    t = time.process_time()
    train, test = stratified_split(data["y"], test_size=0.2, subsample=1.0, rng=rng)
    eye = np.eye(data["k"], dtype=np.float32)
    x_train = np.hstack([data["x"][train], eye[data["a"][train]]])
    x_test = np.hstack([data["x"][test], eye[data["a"][test]]])
    t_split = time.process_time() - t
    kw = dict(n_estimators=1100, max_depth=params["max_depth"], learning_rate=params["learning_rate"], seed=1)
    lp = ldp_figures.lgbm_params(**kw)
    t = time.process_time()
    ds = lgb.Dataset(x_train, label=data["y"][train], params=lp).construct()
    t_ds = time.process_time() - t
    t = time.process_time()
    booster = lgb.train(lp, ds, num_boost_round=1100, keep_training_booster=True)
    t_boost = time.process_time() - t
    t = time.process_time()
    booster.predict(x_test, num_threads=1)
    t_pred_all = time.process_time() - t
    t = time.process_time()
    ldp_figures.predict_labels(booster, x_test)
    t_pred = time.process_time() - t
    n_unique = np.unique(x_test, axis=0).shape[0]
    print(f"  parts: split+encode {t_split:.3f}, Dataset {t_ds:.3f}, boosting {t_boost:.3f}, "
          f"predict all {x_test.shape[0]} rows {t_pred_all:.3f}, predict {n_unique} distinct rows {t_pred:.3f}")


if __name__ == "__main__":
    main()
