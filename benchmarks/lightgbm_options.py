"""Is there a LightGBM option that keeps a Part II model identical and fits it faster?

One full-profile Adult fit of thesis Figures 5.1/5.2 (gender, the spec §6.1 parameters of
:func:`repro.studies.thesis.ldp_figures.lgbm_params`, one 80 % split, the true attribute one-hot) is
fitted with the study's parameters and with each option changed; prints CPU seconds of boosting and of
predicting the test rows, and whether the model (its trees, as text) equals the study's.

Options: ``force_col_wise`` instead of ``force_row_wise``; ``enable_bundle = false`` (no exclusive
feature bundling); ``is_enable_sparse = false``; ``two_round = true`` (binning in two passes).
Needs the data (REPRO_DATA_MIRROR=../shared/data or a cached copy); run on an idle machine.

    python benchmarks/lightgbm_options.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

OPTIONS = {
    "study (force_row_wise)": {},
    "force_col_wise": {"force_row_wise": False, "force_col_wise": True},
    "enable_bundle = false": {"enable_bundle": False},
    "is_enable_sparse = false": {"is_enable_sparse": False},
    "two_round = true": {"two_round": True},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="fits per option (the minimum is printed)")
    args = parser.parse_args()
    import lightgbm as lgb

    from repro.studies.thesis.ldp_figures import lgbm_params, prepared, stratified_split

    data = prepared("adult", "gender", "auto")
    train, test = stratified_split(data["y"], test_size=0.2, subsample=1.0, rng=np.random.default_rng(1))
    eye = np.eye(data["k"], dtype=np.float32)
    x_train = np.hstack([data["x"][train], eye[data["a"][train]]])
    x_test = np.hstack([data["x"][test], eye[data["a"][test]]])
    print(f"load average {os.getloadavg()[0]:.2f}; lightgbm {lgb.__version__}; training rows {x_train.shape}")
    print(f"{'option':28s} {'boost cpu s':>12s} {'predict cpu s':>14s}  same model")
    reference = None
    for name, change in OPTIONS.items():
        params = lgbm_params(n_estimators=1100, max_depth=38, learning_rate=0.02255696731716368, seed=123)
        params.update(change)
        if not params["force_row_wise"]:
            params.pop("force_row_wise")
        boost, predict = [], []
        for _ in range(args.repeat):
            c0 = time.process_time()
            booster = lgb.train(params, lgb.Dataset(x_train, label=data["y"][train], params=params),
                                num_boost_round=1100, keep_training_booster=True)
            c1 = time.process_time()
            booster.predict(x_test, num_threads=1)
            boost.append(c1 - c0)
            predict.append(time.process_time() - c1)
        text = booster.model_to_string()
        trees = text[:text.find("parameters:")]
        reference = trees if reference is None else reference
        print(f"{name:28s} {min(boost):12.2f} {min(predict):14.2f}  {trees == reference}")


if __name__ == "__main__":
    main()
