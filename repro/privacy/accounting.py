"""Privacy accounting with Google's ``dp_accounting``: DP-SGD and Laplace events, calibration.

Spec: seed-003-thesis.md §3.2 (PRV-accountant calibration of the DP-SGD noise, (q, T) per dataset),
§10 P4 and P6 (recalibrate for the actual (q, T); report PRV-like and RDP ε).

The thesis calibrates with the PRV accountant (``prv-accountant`` 0.2.0). We use the privacy-loss
distribution (PLD) accountant of ``dp_accounting``, which is also a numerically tight accountant
for the Poisson-subsampled Gaussian mechanism (both give ε within a few hundredths of each other at
these settings), and the Rényi (RDP) accountant for the loose reference figure. Every mechanism in
the package exposes its privacy cost as a :class:`dp_accounting.DpEvent` built here.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Literal

import dp_accounting as dpa
from dp_accounting import pld, rdp

from repro.errors import InvalidParameterError

if TYPE_CHECKING:
    from repro.privacy.strict_accountant import StrictEvent

__all__ = [
    "ACCOUNTED",
    "NOMINAL",
    "PUBLIC_STATISTICS",
    "EPS_LABELS",
    "Accountant",
    "dp_sgd_event",
    "laplace_event",
    "epsilon",
    "dp_sgd_epsilon",
    "calibrate_noise_multiplier",
    "opacus_sampling",
]

Accountant = Literal["pld", "rdp"]
_PLD_DISCRETIZATION = 1e-4
_PLD_SEARCH_DISCRETIZATION = 1e-3
#: Integer Rényi orders (fractional orders < 2 make dp_accounting's series fail to converge and warn).
_RDP_ORDERS = tuple(range(2, 65)) + (80, 96, 128, 192, 256, 512, 1024)


#: Labels every reported ε carries (issue 14): a proof and an accountant; the paper's formula, not a
#: guarantee; accounted, but statistics of the training data (group sizes, P̂_S) are treated as public.
ACCOUNTED, NOMINAL, PUBLIC_STATISTICS = "accounted", "nominal", "public-statistics caveat"
EPS_LABELS = (ACCOUNTED, NOMINAL, PUBLIC_STATISTICS)


def _check_eps_delta(eps: float | None, delta: float) -> None:
    if eps is not None and not eps > 0:
        raise InvalidParameterError(f"target epsilon must be > 0; got {eps}. Pass a positive epsilon.")
    if not 0 < delta < 1:
        raise InvalidParameterError(f"delta must lie in (0, 1); got {delta}. Use e.g. 1e-5.")


def dp_sgd_event(noise_multiplier: float, sampling_probability: float, steps: int) -> dpa.DpEvent:
    """``steps`` compositions of a Poisson-subsampled Gaussian mechanism (DP-SGD).

    ``noise_multiplier`` = noise std / clipping norm; ``sampling_probability`` = q.
    Spec: seed-003 §3.2 (Opacus DP-SGD with Poisson sampling).
    """
    if not noise_multiplier > 0:
        raise InvalidParameterError(
            f"noise_multiplier must be > 0; got {noise_multiplier}. Use a positive multiplier.")
    if not 0 < sampling_probability <= 1:
        raise InvalidParameterError(
            f"sampling_probability must lie in (0, 1]; got {sampling_probability}. Use q = B/n.")
    if steps < 1:
        raise InvalidParameterError(f"steps must be >= 1; got {steps}.")
    return dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(sampling_probability, dpa.GaussianDpEvent(noise_multiplier)), int(steps))


def laplace_event(epsilon: float) -> dpa.DpEvent:
    """A Laplace mechanism with scale Δ/ε (ε-DP): ``LaplaceDpEvent(noise_multiplier = 1/ε)``.

    Spec: seed-003 §2.4 (Algorithm 2: Lap(1/(n_a ε_a)) on a mean with sensitivity 1/n_a).
    """
    _check_eps_delta(epsilon, 0.5)
    return dpa.LaplaceDpEvent(1.0 / epsilon)


def _accountant(kind: Accountant, discretization: float = _PLD_DISCRETIZATION) -> dpa.PrivacyAccountant:
    if kind == "pld":
        return pld.PLDAccountant(value_discretization_interval=discretization)
    if kind == "rdp":
        return rdp.RdpAccountant(orders=_RDP_ORDERS)
    raise InvalidParameterError(f"accountant must be 'pld' or 'rdp'; got {kind!r}.")


def epsilon(event: dpa.DpEvent | StrictEvent, delta: float, *, accountant: Accountant = "pld") -> float:
    """ε at ``delta`` of ``event`` under the chosen accountant (add/remove adjacency).

    A :class:`repro.privacy.strict_accountant.StrictEvent` (DP-FERMI ``strict``) is accounted exactly by its
    own closed form whatever ``accountant`` says (no ``dp_accounting`` event describes it). Cached: events are
    frozen values, so a process accounts each (event, δ, accountant) once (a PLD composition costs seconds,
    and every trial of a cell configures the same event)."""
    _check_eps_delta(None, delta)
    return _epsilon(_ByValue(event), float(delta), accountant)


class _ByValue:
    """An event as a cache key: equal when their ``repr`` (every field, floats exactly) is equal; composed
    events hold lists, so they do not hash themselves."""

    def __init__(self, event: dpa.DpEvent | StrictEvent) -> None:
        self.event, self.key = event, repr(event)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByValue) and other.key == self.key


@functools.lru_cache(maxsize=1024)
def _epsilon(keyed: _ByValue, delta: float, accountant: Accountant) -> float:
    from repro.privacy.strict_accountant import StrictEvent

    event = keyed.event
    if isinstance(event, StrictEvent):
        return event.epsilon(delta)
    acc = _accountant(accountant)
    acc.compose(event)
    return float(acc.get_epsilon(delta))


@functools.lru_cache(maxsize=256)
def dp_sgd_epsilon(noise_multiplier: float, sampling_probability: float, steps: int, delta: float,
                   accountant: Accountant = "pld") -> float:
    """ε of DP-SGD with these (σ/C, q, T) at ``delta`` (cached)."""
    return epsilon(dp_sgd_event(noise_multiplier, sampling_probability, steps), delta,
                   accountant=accountant)


@functools.lru_cache(maxsize=256)
def calibrate_noise_multiplier(target_epsilon: float, target_delta: float, sampling_probability: float,
                               steps: int, accountant: Accountant = "pld") -> float:
    """Smallest noise multiplier σ/C whose DP-SGD ε at ``target_delta`` is ≤ ``target_epsilon``.

    Bracketed with ``dp_accounting.calibrate_dp_mechanism`` on the RDP accountant, then bisection
    with the PLD accountant to a relative tolerance of 0.2 % in the multiplier; the returned value
    always meets the target (ε ≤ target at ``target_delta``, fine PLD grid). Cached, so a worker
    calibrates each (ε, δ, q, T) once.

    Spec: seed-003 §10 P4 (recompute the multiplier for the actual (q, T)).
    """
    _check_eps_delta(target_epsilon, target_delta)

    def make(nm: float) -> dpa.DpEvent:
        return dp_sgd_event(nm, sampling_probability, steps)

    # Bracket with the fast RDP accountant first: RDP's ε upper-bounds the tight ε, so the RDP-calibrated
    # multiplier is feasible for PLD too; the PLD optimum lies within a factor 2 below it here.
    hi = float(dpa.calibrate_dp_mechanism(
        lambda: _accountant("rdp"), make, target_epsilon, target_delta,
        bracket_interval=dpa.LowerEndpointAndGuess(1e-3, 1.0), tol=1e-4))
    if accountant == "rdp":
        return hi
    lo = 0.5 * hi

    def pld_eps(nm: float, disc: float) -> float:
        acc = _accountant("pld", disc)
        acc.compose(make(nm))
        return float(acc.get_epsilon(target_delta))

    while pld_eps(lo, _PLD_SEARCH_DISCRETIZATION) <= target_epsilon:
        hi, lo = lo, 0.5 * lo
    # Bisection on a coarse PLD grid (fast), then step up until the fine-grid ε meets the target.
    while hi - lo > 2e-3 * hi:
        mid = 0.5 * (lo + hi)
        if pld_eps(mid, _PLD_SEARCH_DISCRETIZATION) <= target_epsilon:
            hi = mid
        else:
            lo = mid
    while pld_eps(hi, _PLD_DISCRETIZATION) > target_epsilon:
        hi *= 1.001
    return float(hi)


def opacus_sampling(n: int, batch_size: int, epochs: int, *, rule: str = "opacus") -> tuple[float, int]:
    """(q, T) of Opacus DP-SGD over ``n`` records.

    ``rule="opacus"``: what ``PrivacyEngine.make_private`` does, q = 1/⌈n/B⌉ with ⌈n/B⌉ steps per
    epoch; ``rule="B/n"``: q = B/n (what the thesis's accountant notebook assumed), same steps.
    Spec: seed-003 §2.7 step 4, §3.2, §10 P6.
    """
    if n < 1 or batch_size < 1 or epochs < 1:
        raise InvalidParameterError(
            f"n, batch_size and epochs must be >= 1; got {n}, {batch_size}, {epochs}.")
    per_epoch = math.ceil(n / batch_size)
    if rule == "opacus":
        q = 1.0 / per_epoch
    elif rule == "B/n":
        q = min(1.0, batch_size / n)
    else:
        raise InvalidParameterError(f"sampling rule must be 'opacus' or 'B/n'; got {rule!r}.")
    return q, int(per_epoch * epochs)
