"""Each estimator gives exactly the numbers of the learner call its study makes, for the same generator
(issue 20, item 7): the estimator is a thin shell, never a second implementation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from repro.estimators import (
    DPFermiClassifier,
    DPSGDLogisticClassifier,
    FairProjectionClassifier,
    Jagielski2019Classifier,
    LDPLightGBMClassifier,
    PFLDClassifier,
    PrivatePostProcessingClassifier,
    Tran2021aClassifier,
)
from repro.fairness import fair_projection as fp
from repro.fairness.private_postprocessing import algorithm2, apply_rule
from repro.learners.baselines import train_jagielski_2019, train_pf_ld, train_tran_2021a
from repro.learners.dp_fermi import (
    REFERENCE,
    STRICT_ALL_FEATURES,
    STRICT_SENSITIVE,
    calibrate_privacy,
)
from repro.learners.dp_fermi_unit import train_batch
from repro.learners.dp_sgd_unit import DPSGDConfig, train
from repro.privacy.accounting import dp_sgd_epsilon, opacus_sampling
from repro.privacy.dpfermi_noise import group_floor, theorem33_noise, thesis_all_feature_noise
from repro.privacy.ldp_mechanisms import grr_matrix, optimal_binary_matrix, perturb, subset_selection


def _data(n: int = 360, d: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    s = (rng.random(n) < 0.4).astype(np.int64)
    y = (X[:, 0] + 0.8 * s + rng.normal(size=n) > 0.3).astype(np.int64)
    return X, y, s


def test_dp_sgd_equals_the_trainer_on_x_and_a():
    X, y, s = _data()
    est = DPSGDLogisticClassifier(noise_multiplier=1.1, batch_size=64, epochs=2, random_state=7).fit(
        X, y, sensitive_features=s)
    res = train(np.hstack([X, s[:, None]]), y, DPSGDConfig(noise_multiplier=1.1, batch_size=64, epochs=2),
                rng=np.random.default_rng(7))
    np.testing.assert_array_equal(est.coef_[0], res.model.w)
    assert est.intercept_[0] == res.model.b
    Xa = np.hstack([X, s[:, None]])
    np.testing.assert_array_equal(est.predict(X, sensitive_features=s), res.model.predict(Xa))
    np.testing.assert_array_equal(est.predict_proba(X, sensitive_features=s)[:, 1], res.model.predict_proba(Xa))
    assert (est.sampling_probability_, est.steps_) == (res.sampling_probability, res.steps)


def test_dp_sgd_then_algorithm2_equals_the_part1_study_sequence():
    """part1_tables._run_alg2: one generator for DP-SGD, Algorithm 2 and the rule on the test set."""
    X, y, s = _data(n=600)
    fit, post, test = np.arange(0, 300), np.arange(300, 450), np.arange(450, 600)
    rng = np.random.default_rng(11)
    base = DPSGDLogisticClassifier(noise_multiplier=0.9, batch_size=64, epochs=2, random_state=rng).fit(
        X[fit], y[fit], sensitive_features=s[fit])
    pp = PrivatePostProcessingClassifier(estimator=base, eps0=0.1, eps1=0.05, random_state=rng).fit(
        X[post], y[post], sensitive_features=s[post])
    got = pp.predict(X[test], sensitive_features=s[test])

    ref = np.random.default_rng(11)
    Xa = np.hstack([X, s[:, None]])
    res = train(Xa[fit], y[fit], DPSGDConfig(noise_multiplier=0.9, batch_size=64, epochs=2), rng=ref)
    rule, rates = algorithm2(res.model.predict(Xa[post]), s[post], 0.1, 0.05, rng=ref)
    want = apply_rule(res.model.predict(Xa[test]), s[test], rule, rng=ref)
    np.testing.assert_array_equal(got, want)
    assert pp.rule_ == rule and pp.rates_ == rates
    np.testing.assert_array_equal(pp.predict(X[test], sensitive_features=s[test]), got)  # reproducible
    h = res.model.predict(Xa[test])
    p1 = np.where(h == 1, np.asarray(rule.keep)[s[test]], np.asarray(rule.flip)[s[test]])
    np.testing.assert_array_equal(pp.predict_proba(X[test], sensitive_features=s[test])[:, 1], p1)
    # the study's eps_total: DP-SGD's PLD epsilon + eps0 + eps1
    q, steps = opacus_sampling(300, 64, 2)
    assert pp.privacy_guarantee_.epsilon == pytest.approx(dp_sgd_epsilon(0.9, q, steps, 1e-5) + 0.15, abs=1e-12)


def test_dp_fermi_reference_equals_the_engine_with_the_studys_config():
    """tradeoff_figures (Theorem 3.3(a) noise, δ = 1/n², the privileged group's trace term)."""
    X, y, s = _data()
    n, B, epochs, eps = X.shape[0], 64, 2, 1.0
    est = DPFermiClassifier(variant="reference", epsilon=eps, lam=0.5, epochs=epochs, batch_size=B,
                            random_state=5).fit(X, y, sensitive_features=s)
    steps = epochs * math.ceil(n / B)
    noise = theorem33_noise(n, steps, B, group_floor(s), eps, 1 / n**2, scope="sensitive", lipschitz=5.0,
                            w_radius=5.0, warn=False)
    group = int(np.argmax([y[s == g].mean() for g in (0, 1)]))
    cfg = REFERENCE.with_(lam=0.5, epochs=epochs, batch_size=B, code_group=group, sigma_theta=noise.sigma_theta,
                          sigma_w=noise.sigma_w)
    assert est.config_ == cfg
    res = train_batch(X, y, s, [cfg], rng=np.random.default_rng(5))[0]
    np.testing.assert_array_equal(est.coef_[0], res.model.w)
    np.testing.assert_array_equal(est.predict(X), res.model.predict(X))


def test_dp_fermi_reference_equals_the_thesis_part1_call():
    """The thesis Part I DP-FERMI row (``thesis.methods._fermi.run_fermi``, reference variant): the thesis's
    all-feature noise, δ = 1e-5, the group named in the file."""
    X, y, s = _data()
    n, B, epochs, eps = X.shape[0], 64, 2, 3.0
    est = DPFermiClassifier(variant="reference", epsilon=eps, delta=1e-5, lam=0.3, epochs=epochs, batch_size=B,
                            noise_scope="all", code_group=1, clip_norm=5.0, w_radius=5.0,
                            random_state=6).fit(X, y, sensitive_features=s)
    sigma_theta, sigma_w = thesis_all_feature_noise(n, epochs * math.ceil(n / B), group_floor(s), eps, 1e-5,
                                                    w_radius=5.0, lipschitz=5.0)
    cfg = REFERENCE.with_(lam=0.3, epochs=epochs, batch_size=B, sigma_theta=sigma_theta, sigma_w=sigma_w,
                          code_group=1, clip_norm=5.0, w_radius=5.0)
    assert est.config_ == cfg
    res = train_batch(X, y, s, [cfg], rng=np.random.default_rng(6))[0]
    np.testing.assert_array_equal(est.coef_[0], res.model.w)
    assert est.privacy_guarantee_.label == "nominal" and est.privacy_guarantee_.protects.startswith("every feature")


@pytest.mark.parametrize("variant, engine", [("strict", STRICT_SENSITIVE), ("strict-all", STRICT_ALL_FEATURES)])
def test_dp_fermi_strict_variants_equal_the_engine_with_calibrated_noise(variant, engine):
    X, y, s = _data(n=240)
    n, B, epochs, eps = X.shape[0], 80, 1, 1.0
    est = DPFermiClassifier(variant=variant, epsilon=eps, lam=1.0, epochs=epochs, batch_size=B,
                            random_state=3).fit(X, y, sensitive_features=s)
    q, T = opacus_sampling(n, B, epochs)
    z = calibrate_privacy(engine, eps, 1 / n**2, q, T)
    cfg = engine.with_(lam=1.0, epochs=epochs, batch_size=B, noise_multiplier=z)
    assert est.config_ == cfg
    res = train_batch(X, y, s, [cfg], rng=np.random.default_rng(3))[0]
    np.testing.assert_array_equal(est.coef_[0], res.model.w)
    assert est.privacy_guarantee_.epsilon <= eps


def test_baselines_equal_their_trainers():
    X, y, s = _data(n=240)
    kw = dict(epsilon=math.inf, delta=1e-4, batch_size=64, lr=0.1, clip_norm=1.0)
    tran = Tran2021aClassifier(gamma=0.7, epochs=2, random_state=1, **kw).fit(X, y, sensitive_features=s)
    res = train_tran_2021a(X, y, s, gammas=[0.7], epochs=2, rng=np.random.default_rng(1), **kw)
    np.testing.assert_array_equal(tran.coef_[0], res.models[0].w)
    pfld = PFLDClassifier(epochs=2, random_state=2, **kw).fit(X, y, sensitive_features=s)
    res = train_pf_ld(X, y, s, epochs=2, rng=np.random.default_rng(2), **kw)
    np.testing.assert_array_equal(pfld.coef_[0], res.model.w)
    jag = Jagielski2019Classifier(bound=2.0, rounds=3, learner_epochs=1, random_state=4, **kw).fit(
        X, y, sensitive_features=s)
    res = train_jagielski_2019(X, y, s, bounds=[2.0], rounds=3, learner_epochs=1, rng=np.random.default_rng(4), **kw)
    np.testing.assert_array_equal(jag.predict_proba(X)[:, 1], res.predict_proba(X)[:, 0])


def test_private_baselines_equal_their_trainers_and_report_the_fits_epsilon():
    X, y, s = _data(n=240)  # (ε, δ, q, T) as the strict-all test: the calibration is cached
    kw = dict(epsilon=1.0, delta=1 / 240**2, batch_size=80, lr=0.1, clip_norm=1.0)
    tran = Tran2021aClassifier(gamma=0.7, epochs=1, random_state=1, **kw).fit(X, y, sensitive_features=s)
    res = train_tran_2021a(X, y, s, gammas=[0.7], epochs=1, rng=np.random.default_rng(1), **kw)
    np.testing.assert_array_equal(tran.coef_[0], res.models[0].w)
    g = tran.privacy_guarantee_
    assert g.label == "nominal" and g.epsilon == dp_sgd_epsilon(res.noise_multiplier, res.sampling_probability,
                                                                   res.steps, 1 / 240**2)
    assert 0.95 < g.epsilon <= 1.0


def test_fair_projection_equals_the_table_study_sequence():
    X, y, s = _data(n=400)
    tr, te = np.arange(300), np.arange(300, 400)
    base = LogisticRegression()
    est = FairProjectionClassifier(estimator=base, constraint="sp", tolerance=0.01, divergence="kl", max_iter=60,
                                   random_state=9).fit(X[tr], y[tr], sensitive_features=s[tr])
    got = est.predict_proba(X[te], sensitive_features=s[te])

    rng = np.random.default_rng(9)
    fitted = LogisticRegression().fit(X[tr], y[tr])
    p_tr, p_te = fp.smooth(fitted.predict_proba(X[tr])), fp.smooth(fitted.predict_proba(X[te]))
    p_ys = fp.group_marginals(y[tr], s[tr])
    G = fp.build_constraints("sp", 0.01, p_tr, fp.one_hot(s[tr]), p_ys, rng=rng)
    res = fp.admm(G, p_tr, divergence="kl", max_iter=60)
    G_te = fp.build_constraints("sp", 0.01, p_te, fp.one_hot(s[te]), p_ys, rng=rng)
    want = fp.predict_projected(p_te, G_te, res.lam, "kl")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(est.predict(X[te], sensitive_features=s[te]), (want[:, 1] > 0.5).astype(int))
    assert est.privacy_guarantee_.label == "non-private"


@pytest.mark.parametrize("mechanism", ["OPT", "GRR", "SS", "none"])
def test_ldp_lightgbm_equals_the_figure_study_sequence(mechanism):
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    X = np.eye(3, dtype=np.float32)[rng.integers(0, 3, size=300)]
    a = (rng.random(300) < 0.3).astype(np.int64)
    y = ((X[:, 0] + a + rng.random(300)) > 1.0).astype(np.int64)
    est = LDPLightGBMClassifier(mechanism=mechanism, epsilon=1.0, n_estimators=15, max_depth=4, learning_rate=0.1,
                                lightgbm_random_state=123, random_state=8).fit(X, y, sensitive_features=a)
    eye = np.eye(2, dtype=np.float32)
    g = np.random.default_rng(8)
    if mechanism == "OPT":
        enc = eye[perturb(a, optimal_binary_matrix(1.0, int(np.argmin(np.bincount(a)))), rng=g)]
    elif mechanism == "GRR":
        enc = eye[perturb(a, grr_matrix(2, 1.0), rng=g)]
    elif mechanism == "SS":
        enc = subset_selection(a, 2, 1.0, rng=g).astype(np.float32)
    else:
        enc = eye[a]
    model = lgb.LGBMClassifier(objective="binary", n_estimators=15, max_depth=4, learning_rate=0.1,
                               random_state=123, n_jobs=1, verbose=-1).fit(np.hstack([X, enc]), y)
    want = model.predict(np.hstack([X, eye[a]]))
    np.testing.assert_array_equal(est.predict(X, sensitive_features=a), want)
