"""The units' ``Configured``, its named deviations and the one privacy row (``repro.learners.unit``), against the
closed forms and the accountant calls they replace; the notion and scope objects that own their rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.fairness.metrics import eq_odds_gap, sp_gap
from repro.fairness.notion import Fairness
from repro.learners import dp_fermi_unit, dp_sgd, dp_sgd_unit
from repro.learners.baselines import dpsgd_unit
from repro.learners.unit import privacy_row
from repro.privacy.accounting import dp_sgd_epsilon
from repro.privacy.dpfermi_noise import accountant_epsilons, theorem33_noise
from repro.privacy.strict_accountant import strict_epsilon
from repro.studies.methods import Style


def test_the_reference_carries_theorem_33_and_the_papers_model_of_it() -> None:
    """σ's, z and the RDP ε of one block and of the joint release: the numbers the studies recorded through
    ``accountant_epsilons`` (spec §5 caveat 1), to the last bit."""
    n, B, epochs, eps, rho = 2000, 64, 3, 1.0, 0.1
    c = dp_fermi_unit.configure("reference", n=n, epsilon=eps, rho=rho, batch_size=B, epochs=epochs, warn=False)
    acc = accountant_epsilons(n, c.steps, B, eps, 1 / n**2)
    noise = theorem33_noise(n, c.steps, B, rho, eps, 1 / n**2, warn=False)
    assert c.noise_multiplier == acc["z"]
    assert c.epsilon(accountant="rdp") == acc["joint"] and c.epsilon(accountant="rdp", part="block") == acc["block"]
    assert (c.sigma["sigma_theta"], c.sigma["sigma_w"]) == (noise.sigma_theta, noise.sigma_w)
    assert c.conditions == noise.conditions and c.guarantee.label.value == "nominal"
    row = privacy_row(c, "sigma_theta", "steps", eps_block_rdp="block_epsilon_rdp", eps_joint_rdp="epsilon_rdp")
    assert row == {"sigma_theta": noise.sigma_theta, "steps": c.steps, "eps_block_rdp": acc["block"],
                   "eps_joint_rdp": acc["joint"]}
    with pytest.raises(InvalidParameterError, match="not calibrated by a noise multiplier"):
        c.with_noise_multiplier(1.0)
    # the thesis's all-feature noise has no accountant: no event, ε = ∞
    a = dp_fermi_unit.configure("reference", n=n, epsilon=eps, rho=rho, batch_size=B, epochs=epochs,
                                noise_scope="all", warn=False)
    assert a.event is None and math.isinf(a.epsilon()) and a.guarantee.relation.value == "replace one record"


def test_dp_sgd_claims_the_pld_epsilon_of_the_noise_it_uses() -> None:
    n, eps, delta = 1000, 1.0, 1e-5
    c = dp_sgd_unit.configure(n=n, epsilon=eps, delta=delta, batch_size=100, epochs=2)
    q, T = c.sampling_probability, c.steps
    assert c.noise_multiplier == dp_sgd.calibrate_noise(eps, delta, q, T)
    assert c.guarantee.epsilon == c.epsilon() == dp_sgd_epsilon(c.noise_multiplier, q, T, delta)
    assert c.epsilon(accountant="rdp") == dp_sgd_epsilon(c.noise_multiplier, q, T, delta, "rdp")
    row = privacy_row(c, "noise_multiplier", noise_std="sigma", q="sampling_probability")
    assert row == {"noise_multiplier": c.noise_multiplier, "noise_std": c.noise_multiplier * 1.5, "q": q}
    with pytest.raises(InvalidParameterError, match="cannot name 'sigma_w'") as err:
        privacy_row(c, "sigma_w")
    assert "\n" not in str(err.value)
    assert math.isinf(dp_sgd_unit.configure(n=n, epsilon=math.inf, delta=delta).epsilon())


def test_a_deviation_keeps_the_claim_and_changes_the_mechanism() -> None:
    """The audits' broken controls: half the noise (DP-SGD) and the old amplified accounting (DP-FERMI strict)."""
    c = dp_sgd_unit.configure(n=999, epsilon=1.0, delta=1e-3, batch_size=1000, epochs=2, clip_norm=0.01)
    half = c.with_noise_multiplier(c.noise_multiplier / 2, "half")
    assert half.guarantee == c.guarantee and half.deviation == "half"
    assert half.config.noise_multiplier == c.noise_multiplier / 2 and half.sigma["sigma"] == half.noise_multiplier * 0.01
    assert half.epsilon() == dp_sgd_epsilon(c.noise_multiplier / 2, 1.0, 2, 1e-3) > 2 * c.epsilon()
    n = 40
    s = dp_fermi_unit.configure("strict", n=n, epsilon=3.0, batch_size=10, epochs=1)
    old = dp_fermi_unit.amplified_accounting(s)
    assert old.noise_multiplier == dp_sgd.calibrate_noise(3.0, 1 / n**2, 0.25, 4) < s.noise_multiplier
    assert old.guarantee == s.guarantee and "defect 1" in old.deviation
    assert old.epsilon() == strict_epsilon(old.noise_multiplier, 0.25, 4, 1 / n**2) > 1.5 * s.guarantee.epsilon


def test_the_baselines_core_is_nominal_with_a_penalty_and_plain_dp_sgd_without() -> None:
    with_penalty = dpsgd_unit.configure(n=500, epsilon=1.0, delta=1e-5, batch_size=50, epochs=1)
    plain = dpsgd_unit.configure(n=500, epsilon=1.0, delta=1e-5, batch_size=50, epochs=1, penalized=False)
    assert with_penalty.sampling_probability == 50 / 500 and with_penalty.guarantee.label.value == "nominal"
    assert plain.guarantee == dp_sgd.guarantee(plain.epsilon(), 1e-5)
    assert with_penalty.guarantee.epsilon == with_penalty.epsilon() <= 1.0


def test_the_notion_and_the_scope_own_their_rules() -> None:
    rng = np.random.default_rng(0)
    pred, s, y = rng.random(50), rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    assert Fairness.of("dp").violation(pred, s, y) == sp_gap(pred, s)
    assert Fairness.of("eo").violation(pred, s, y) == eq_odds_gap(pred, s, y)
    assert Fairness.DP == "dp" and hash(Fairness.EO) == hash("eo")          # the text the files carry
    for bad, what in ((lambda: Fairness.of("sp"), "fairness"), (lambda: dp_fermi_unit.NoiseScope.of("x"), "noise_scope"),
                      (lambda: Style.of({"colour": "red"}), "colour")):
        with pytest.raises(InvalidParameterError, match=what) as err:
            bad()
        assert "\n" not in str(err.value)
    assert dict(Style.of({"color": "C0", "marker": "s"})) == {"color": "C0", "marker": "s"}


def test_with_config_and_observed_are_deviations_that_keep_the_claim() -> None:
    """The audits' other two deviations: ``with_config`` draws the run from another configuration (the sampler
    at 2q: B and epochs doubled keep T) and ``observed`` accounts the same T steps at a measured (z, q); both
    keep the calibrated claim, and their ε is the accountant's at the new (z, q, T), exactly."""
    from dataclasses import replace

    c = dp_sgd_unit.configure(n=3000, epsilon=1.0, delta=1e-5, batch_size=100, epochs=2, clip_norm=1.0)
    doubled = c.with_config(replace(c.config, batch_size=200, epochs=4), "sampler at 2q")
    assert doubled.sampling_probability == pytest.approx(2 * c.sampling_probability) and doubled.steps == c.steps
    assert doubled.guarantee == c.guarantee and doubled.deviation == "sampler at 2q"
    assert doubled.epsilon() == dp_sgd_epsilon(c.noise_multiplier, doubled.sampling_probability, c.steps, 1e-5)
    assert doubled.epsilon() > 1.5 * c.epsilon()
    seen = c.observed(c.noise_multiplier / 2, c.sampling_probability)
    assert seen.guarantee == c.guarantee and seen.steps == c.steps
    assert seen.epsilon() == dp_sgd_epsilon(c.noise_multiplier / 2, c.sampling_probability, c.steps, 1e-5)
    s = dp_fermi_unit.configure("strict", n=3000, epsilon=3.0, batch_size=100, epochs=2, clip_norm=1.0, lam=1.0)
    q_seen = 1.5 * s.sampling_probability
    assert s.observed(s.noise_multiplier, q_seen).epsilon() == strict_epsilon(s.noise_multiplier, q_seen, s.steps,
                                                                               s.delta)
    r = dp_fermi_unit.configure("reference", n=3000, epsilon=1.0, rho=0.1, batch_size=100, epochs=2, warn=False)
    with pytest.raises(InvalidParameterError, match="no observed deviation"):
        r.observed(1.0, 0.1)
