"""Privacy profiles and trade-off curves (issue 38 item 1): the profile at the claimed δ gives the claimed ε,
and the trade-off curve of a Gaussian mechanism derived from its PLD or closed form matches
f(α) = Φ(Φ⁻¹(1 − α) − μ)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.privacy.accounting import calibrate_noise_multiplier, dp_sgd_epsilon, dp_sgd_event, laplace_event
from repro.privacy.profile import (
    gaussian_profile,
    gaussian_tradeoff,
    pld_profile,
    point_profile,
    strict_profile,
)
from repro.privacy.strict_accountant import calibrate_strict_noise_multiplier, strict_epsilon
from repro.studies.audit.bounds import gaussian_epsilon, gaussian_mu

ALPHA = np.r_[1e-4, 1e-3, np.linspace(0.01, 0.99, 50)]


def test_profile_at_the_claimed_delta_gives_the_claimed_epsilon() -> None:
    # DP-SGD (PLD, q = 1 as audited, and a subsampled setting): the calibration's (ε, δ) is a profile point
    for q, steps in ((1.0, 2), (0.1, 20)):
        z = calibrate_noise_multiplier(1.0, 1e-3, q, steps)
        prof = pld_profile(dp_sgd_event(z, q, steps))
        assert prof.epsilon(1e-3) == pytest.approx(dp_sgd_epsilon(z, q, steps, 1e-3), abs=2e-3)
        assert prof.epsilon(1e-3) <= 1.0 + 1e-9
        assert float(prof.delta(prof.epsilon(1e-3))[0]) == pytest.approx(1e-3, rel=1e-3)
    # DP-FERMI strict: the exact strict accountant
    z = calibrate_strict_noise_multiplier(3.0, 0.25, 4, 1 / 1600)
    prof = strict_profile(z, 0.25, 4)
    assert prof.epsilon(1 / 1600) == pytest.approx(strict_epsilon(z, 0.25, 4, 1 / 1600), rel=1e-6)
    assert prof.epsilon(1 / 1600) == pytest.approx(3.0, rel=1e-6)
    # Gaussian closed form, Laplace PLD (pure ε: δ(ε₀) = 0 up to the PLD's rounding), a point claim
    mu = gaussian_mu(1.0, 1e-2)
    assert gaussian_profile(mu).epsilon(1e-2) == pytest.approx(gaussian_epsilon(mu, 1e-2), rel=1e-8)
    lap = pld_profile(laplace_event(1.0))
    assert float(lap.delta(1.0)[0]) < 1e-6 and lap.epsilon(1e-6) == pytest.approx(1.0, abs=1e-2)
    assert float(lap.delta(0.5)[0]) == pytest.approx(1 - math.exp(-0.25), abs=1e-3)   # 1 − e^{(ε − ε₀)/2}
    pt = point_profile(1.0, 1e-3)
    assert pt.epsilon(1e-3) == pytest.approx(1.0, abs=1e-8) and float(pt.delta(2.0)[0]) == 1e-3
    with pytest.raises(InvalidParameterError):
        pt.epsilon(1.5)


def test_gaussian_tradeoff_from_pld_and_closed_form_profile() -> None:
    """f from the profile by Dong, Roth & Su's Proposition 2.12 against Φ(Φ⁻¹(1 − α) − μ)."""
    z = 1.3
    exact = gaussian_tradeoff(ALPHA, 1 / z)
    from_pld = pld_profile(dp_sgd_event(z, 1.0, 1)).tradeoff(ALPHA)
    from_closed = gaussian_profile(1 / z).tradeoff(ALPHA)
    assert np.max(np.abs(from_closed - exact)) < 2e-3
    assert np.max(np.abs(from_pld - exact)) < 5e-3
    assert np.all(from_closed <= exact + 1e-9)        # a sup over a finite ε grid stays below f
    # T = 4 steps at q = 1 compose to μ = 2/z (Dong, Roth & Su, Corollary 2)
    four = pld_profile(dp_sgd_event(z, 1.0, 4)).tradeoff(ALPHA)
    assert np.max(np.abs(four - gaussian_tradeoff(ALPHA, 2 / z))) < 5e-3
    # strict at q = 1: T Gaussian mechanisms of ratio 1/z
    assert np.max(np.abs(strict_profile(z, 1.0, 4).tradeoff(ALPHA) - gaussian_tradeoff(ALPHA, 2 / z))) < 2e-3


def test_point_profile_is_the_kairouz_curve() -> None:
    eps, delta = 1.0, 0.01
    f = point_profile(eps, delta).tradeoff(ALPHA)
    want = np.maximum.reduce([np.zeros_like(ALPHA), 1 - delta - math.exp(eps) * ALPHA,
                              math.exp(-eps) * (1 - delta - ALPHA)])
    assert np.allclose(f, want)
