"""Would scoring the test set during boosting (as a LightGBM validation set) beat predicting afterwards?

Thesis Part II trials fit LightGBM and then predict the test rows (≈ 17 % of a trial). LightGBM can instead
keep the test rows' scores up to date as a validation set while it boosts. This script fits the spec §6.1
parameters (:func:`repro.studies.thesis.ldp_figures.lgbm_params`) on a synthetic 0/1 matrix both ways and
reports whether the test probabilities are equal bit for bit and the CPU seconds of fit + scoring.

    python benchmarks/lightgbm_valid_scoring.py [--rows 20000] [--features 60] [--trees 300]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--features", type=int, default=60)
    parser.add_argument("--trees", type=int, default=300)
    args = parser.parse_args()
    import lightgbm as lgb

    from repro.studies.thesis.ldp_figures import lgbm_params

    rng = np.random.default_rng(0)
    X = (rng.random((args.rows, args.features)) < 0.2).astype(np.float32)
    y = (X[:, :5].sum(axis=1) + rng.random(args.rows) > 1.2).astype(int)
    X_test = (rng.random((args.rows // 4, args.features)) < 0.2).astype(np.float32)
    params = lgbm_params(n_estimators=args.trees, max_depth=38, learning_rate=0.05, seed=3)

    t0 = time.process_time()
    booster = lgb.train(params, lgb.Dataset(X, label=y, params=params), num_boost_round=args.trees)
    after = booster.predict(X_test, num_threads=1)
    t_after = time.process_time() - t0

    t0 = time.process_time()
    valid_params = {**params, "metric": "None"}
    train = lgb.Dataset(X, label=y, params=valid_params)
    booster = lgb.train(valid_params, train, num_boost_round=args.trees,
                        valid_sets=[lgb.Dataset(X_test, reference=train)], keep_training_booster=True)
    during = booster._Booster__inner_predict(data_idx=1)  # the validation set's probabilities
    t_during = time.process_time() - t0

    print(f"load {os.getloadavg()[0]:.1f}; {args.rows} x {args.features}, {args.trees} trees")
    print(f"test probabilities equal bit for bit: {np.array_equal(after, during)}")
    print(f"CPU s: fit then predict {t_after:.3f}, scores kept during boosting {t_during:.3f}")


if __name__ == "__main__":
    main()
