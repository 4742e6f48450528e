"""Each estimator's ``privacy_guarantee_`` is the one its fit earns (label, relation, ε from the accountant
for the fit's n, q, T, σ), and bad input fails in ``fit`` with one line naming the fix."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.estimators import (
    DPFermiClassifier,
    DPSGDLogisticClassifier,
    LDPLightGBMClassifier,
    PrivatePostProcessingClassifier,
)
from repro.estimators._base import as_generator
from repro.privacy.accounting import dp_sgd_epsilon, opacus_sampling
from repro.privacy.dpfermi_noise import accountant_epsilons
from repro.privacy.guarantee import Label, Neighbouring


def _data(n: int = 240, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    s = (rng.random(n) < 0.4).astype(np.int64)
    y = (X[:, 0] + s + rng.normal(size=n) > 0.3).astype(np.int64)
    return X, y, s


def test_dp_sgd_guarantee_is_the_pld_epsilon_of_the_fits_q_and_t():
    X, y, _ = _data()
    est = DPSGDLogisticClassifier(noise_multiplier=1.3, batch_size=50, epochs=2, delta=1e-4, random_state=0).fit(X, y)
    q, T = opacus_sampling(240, 50, 2)
    g = est.privacy_guarantee_
    assert (est.sampling_probability_, est.steps_) == (q, T) == (0.2, 10)
    assert g.epsilon == dp_sgd_epsilon(1.3, q, T, 1e-4) and g.delta == 1e-4
    assert g.label is Label.ACCOUNTED and g.relation is Neighbouring.ADD_OR_REMOVE_ONE
    none = DPSGDLogisticClassifier(noise_multiplier=0.0, batch_size=50, epochs=1, random_state=0).fit(X, y)
    assert none.privacy_guarantee_.label is Label.NON_PRIVATE and math.isinf(none.privacy_guarantee_.epsilon)


def test_post_processing_adds_eps0_eps1_and_carries_the_group_size_caveat():
    X, y, s = _data()
    base = DPSGDLogisticClassifier(noise_multiplier=1.3, batch_size=50, epochs=2, delta=1e-4, random_state=0).fit(
        X, y, sensitive_features=s)
    pp = PrivatePostProcessingClassifier(estimator=base, eps0=0.05, eps1=0.1, random_state=1).fit(
        X, y, sensitive_features=s)
    g = pp.privacy_guarantee_
    assert g.epsilon == pytest.approx(base.privacy_guarantee_.epsilon + 0.15, abs=1e-12)
    assert g.label is Label.PUBLIC_STATISTICS and "n0, n1" in g.caveat
    # a base without a guarantee gives no end-to-end claim
    from sklearn.linear_model import LogisticRegression
    plain = PrivatePostProcessingClassifier(estimator=LogisticRegression().fit(X, y), random_state=1).fit(
        X, y, sensitive_features=s)
    assert plain.privacy_guarantee_.label is Label.NOMINAL and math.isinf(plain.privacy_guarantee_.epsilon)


def test_post_processing_predict_proba_is_the_frequency_of_predict():
    """predict draws Ŷ with the probabilities predict_proba states (statistical check)."""
    X, y, s = _data(n=400)
    base = DPSGDLogisticClassifier(noise_multiplier=0.0, batch_size=50, epochs=2, random_state=0).fit(X, y)
    pp = PrivatePostProcessingClassifier(estimator=base, eps0=0.5, eps1=0.5, random_state=2).fit(
        X, y, sensitive_features=s)
    reps = 400
    Xr, sr = np.tile(X, (reps, 1)), np.tile(s, reps)
    pp._predict_rng_state_ = np.random.default_rng(3).bit_generator.state  # a fresh stream for the check
    freq = pp.predict(Xr, sensitive_features=sr).reshape(reps, -1).mean(axis=0)
    p = pp.predict_proba(X, sensitive_features=s)[:, 1]
    # binomial std of a mean of 400 draws ≤ 0.025: 5 std = 0.125
    assert np.max(np.abs(freq - p)) < 0.125
    assert np.any((p > 0) & (p < 1))  # the rule does randomize here


def test_dp_fermi_reference_is_nominal_and_states_the_joint_rdp_epsilon():
    X, y, s = _data()
    est = DPFermiClassifier(epsilon=1.0, epochs=2, batch_size=60, random_state=0).fit(X, y, sensitive_features=s)
    g = est.privacy_guarantee_
    assert g.label is Label.NOMINAL and g.relation is Neighbouring.REPLACE_SENSITIVE_ATTRIBUTE
    assert g.epsilon == 1.0 and g.delta == 1 / 240**2
    joint = accountant_epsilons(240, 2 * 4, 60, 1.0, 1 / 240**2)["joint"]
    assert f"{joint:.3g}" in g.caveat and joint > 1.0
    inf = DPFermiClassifier(epsilon=math.inf, epochs=1, batch_size=60, random_state=0).fit(X, y, sensitive_features=s)
    assert inf.privacy_guarantee_.label is Label.NON_PRIVATE and inf.config_.sigma_theta == 0.0


def test_ldp_guarantees_are_local_and_opt_carries_the_caveat():
    X, y, s = _data()
    kw = dict(epsilon=0.7, n_estimators=5, max_depth=2, learning_rate=0.3, random_state=0)
    grr = LDPLightGBMClassifier(mechanism="GRR", **kw).fit(X, y, sensitive_features=s).privacy_guarantee_
    assert grr.relation is Neighbouring.LOCAL and grr.label is Label.ACCOUNTED and grr.epsilon == pytest.approx(0.7)
    opt = LDPLightGBMClassifier(mechanism="OPT", **kw).fit(X, y, sensitive_features=s).privacy_guarantee_
    assert opt.label is Label.PUBLIC_STATISTICS and opt.epsilon == pytest.approx(0.7)
    ss = LDPLightGBMClassifier(mechanism="SS", **kw).fit(X, y, sensitive_features=s).privacy_guarantee_
    assert ss.epsilon == 0.7 and ss.label is Label.ACCOUNTED
    assert LDPLightGBMClassifier(mechanism="none", **kw).fit(
        X, y, sensitive_features=s).privacy_guarantee_.label is Label.NON_PRIVATE


def test_random_state_int_reproduces_generator_continues_and_global_rng_untouched():
    X, y, s = _data()
    kw = dict(noise_multiplier=1.0, batch_size=60, epochs=1)
    a = DPSGDLogisticClassifier(random_state=4, **kw).fit(X, y).coef_
    b = DPSGDLogisticClassifier(random_state=4, **kw).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    g = np.random.default_rng(4)
    first = DPSGDLogisticClassifier(random_state=g, **kw).fit(X, y).coef_
    second = DPSGDLogisticClassifier(random_state=g, **kw).fit(X, y).coef_
    np.testing.assert_array_equal(first, a)
    assert not np.array_equal(first, second)  # the stream continued
    # None draws OS entropy, never the legacy global generator (read here only to show it is untouched)
    state = np.random.get_state()[1].copy()  # noqa: NPY002
    DPSGDLogisticClassifier(random_state=None, **kw).fit(X, y)
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # noqa: NPY002
    with pytest.raises(InvalidParameterError, match="random_state must be"):
        as_generator(np.random.RandomState(0))


@pytest.mark.parametrize("call, match", [
    (lambda X, y, s: DPFermiClassifier(epochs=1).fit(X, y), "needs sensitive_features"),
    (lambda X, y, s: DPFermiClassifier(epochs=1).fit(X, y, sensitive_features=s[:-1]), "240"),
    (lambda X, y, s: DPFermiClassifier(epochs=1).fit(X, y, sensitive_features=np.zeros_like(s)), "at least 2 groups"),
    (lambda X, y, s: DPFermiClassifier(epochs=1).fit(X, y % 2 + (s * 2), sensitive_features=s), "Only binary"),
    (lambda X, y, s: DPFermiClassifier(variant="strictest", epochs=1).fit(X, y, sensitive_features=s), "variant"),
    (lambda X, y, s: DPSGDLogisticClassifier(epsilon=1.0, noise_multiplier=1.0).fit(X, y), "exactly one"),
    (lambda X, y, s: PrivatePostProcessingClassifier().fit(X, y, sensitive_features=s), "estimator="),
])
def test_bad_input_fails_in_fit_with_one_line(call, match):
    X, y, s = _data()
    with pytest.raises(ValueError, match=match) as err:
        call(X, y, s)
    assert "\n" not in str(err.value)


def test_predict_rejects_groups_unseen_in_fit():
    X, y, s = _data()
    base = DPSGDLogisticClassifier(noise_multiplier=1.0, batch_size=60, epochs=1, random_state=0).fit(
        X, y, sensitive_features=s)
    with pytest.raises(ValueError, match="not seen in fit"):
        base.predict(X, sensitive_features=s + 5)
    with pytest.raises(ValueError, match="predict needs sensitive_features"):
        base.predict(X)


def test_pf_ld_and_jagielski_report_their_accountants_epsilon_for_the_fit():
    from repro.estimators import Jagielski2019Classifier, PFLDClassifier
    from repro.privacy.accounting import epsilon as accountant_epsilon

    X, y, s = _data(n=200)
    pf = PFLDClassifier(epsilon=1.0, epochs=1, batch_size=100, random_state=0).fit(X, y, sensitive_features=s)
    g = pf.privacy_guarantee_
    assert g.label is Label.NOMINAL and 0.9 < g.epsilon <= 1.0 and g.delta == 1 / 200**2
    jag = Jagielski2019Classifier(epsilon=1.0, rounds=2, learner_epochs=1, batch_size=100, random_state=0).fit(
        X, y, sensitive_features=s)
    g = jag.privacy_guarantee_
    assert g.label is Label.PUBLIC_STATISTICS and "cell sizes" in g.caveat
    assert g.epsilon == accountant_epsilon(jag.result_.event, 1 / 200**2) and g.epsilon <= 1.0


def test_estimators_read_the_learners_declarations_instead_of_restating_them():
    """Written once (issue 20 item 4): an estimator's guarantee is its learner's declaration (minus the studies'
    standardisation caveat: an estimator standardises nothing), never a Guarantee built in repro/estimators."""
    from pathlib import Path

    import repro.estimators as pkg
    from repro.estimators import Jagielski2019Classifier, PFLDClassifier, Tran2021aClassifier
    from repro.estimators._base import fitted_guarantee
    from repro.fairness.private_postprocessing import guarantee as pp_guarantee
    from repro.learners import dp_sgd
    from repro.learners.baselines import jagielski_2019, pf_ld, tran_2021a
    from repro.privacy.guarantee import STANDARDISED_FEATURES

    for path in Path(pkg.__file__).parent.glob("*.py"):
        assert "Guarantee(" not in path.read_text(encoding="utf-8"), f"{path.name} builds its own Guarantee"
    X, y, s = _data(n=200)
    kw = dict(epsilon=1.0, batch_size=100, random_state=0)
    fits = [(Tran2021aClassifier(epochs=1, **kw), tran_2021a.guarantee),
            (PFLDClassifier(epochs=1, **kw), pf_ld.guarantee),
            (Jagielski2019Classifier(rounds=2, learner_epochs=1, **kw), jagielski_2019.guarantee),
            (DPSGDLogisticClassifier(epochs=1, delta=1e-5, **kw), dp_sgd.guarantee)]
    for est, declared in fits:
        g = est.fit(X, y, sensitive_features=s).privacy_guarantee_
        learner = declared(g.epsilon, g.delta)
        assert g == fitted_guarantee(learner), type(est).__name__
        assert (g.relation, g.protects, g.accountant) == (learner.relation, learner.protects, learner.accountant)
        assert STANDARDISED_FEATURES not in g.caveat and g.caveat in learner.caveat
    assert fits[-1][0].privacy_guarantee_.label is Label.ACCOUNTED  # DP-SGD: only the standardisation caveat
    base = fits[-1][0]
    pp = PrivatePostProcessingClassifier(estimator=base, eps0=0.1, eps1=0.2, random_state=0).fit(X, y, sensitive_features=s)
    step = pp_guarantee(0.1, 0.2)
    assert step.caveat in pp.privacy_guarantee_.caveat and step.accountant in pp.privacy_guarantee_.accountant
    assert pp.privacy_guarantee_.epsilon == pytest.approx(base.privacy_guarantee_.epsilon + 0.3, abs=1e-12)
