"""The derived numbers the thesis tables' notes print ((q, T), the calibrated σ, the ε the thesis's σ spends) are
what the code computes: the DP-SGD learner unit's ``configure`` (repro/learners/dp_sgd_unit.py) at the note's
n_fit and the file's own parameters. A note that drifts from the code fails here."""

from __future__ import annotations

import re

import pytest

from repro.engine.spec import load_all
from repro.learners import dp_sgd_unit
from repro.privacy.accounting import dp_sgd_epsilon

LINE = re.compile(
    r"privacy numbers \(data = clean, n_fit = (?P<n>[\d,]+)\): thesis σ = (?P<thesis>[\d.]+) at its .*?; "
    r"actual Opacus \(q, T\) = \(1/(?P<k>\d+) = (?P<q>[\d.]+), (?P<T>\d+)\); calibrated σ = (?P<sigma>[\d.]+) "
    r"\(multiplier (?P<z>[\d.]+)\); the thesis's σ on the actual \(q, T\) spends ε = (?P<eps>[\d.]+) "
    r"\(PLD; RDP (?P<rdp>[\d.]+)\) instead of (?P<target>[\d.]+)\.")

SPECS = load_all(strict=True)


def _close(printed: str, value: float) -> bool:
    """``value`` rounds to the printed text (as many decimals as printed)."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return round(value, decimals) == float(printed)


@pytest.mark.parametrize("experiment_id", ["thesis-table-3.1", "thesis-table-3.2", "thesis-table-3.3",
                                           "thesis-table-3.4"])
def test_the_privacy_numbers_of_the_notes_are_the_code_s(experiment_id: str) -> None:
    spec = SPECS[experiment_id]
    (match,) = LINE.finditer(spec.rendered_notes())
    p = spec.fixed_params("full")
    n = int(match["n"].replace(",", ""))
    hyper = {"clip_norm": p["clip_norm"], "lr": p["lr"], "batch_size": p["batch_size"], "epochs": p["epochs"],
             "sampling_rule": p["sampling_rule"]}
    target = p["eps_prime"] - p["eps0"] - p["eps1"]
    calibrated = dp_sgd_unit.configure(n=n, epsilon=target, delta=p["delta"], **hyper)
    thesis_z = p["thesis_sigma"] / p["clip_norm"]
    thesis = dp_sgd_unit.configure(n=n, epsilon=None, delta=p["delta"], noise_multiplier=thesis_z, **hyper)
    q, steps = calibrated.sampling_probability, calibrated.steps
    assert float(match["thesis"]) == p["thesis_sigma"]
    assert 1 / int(match["k"]) == q and _close(match["q"], q) and int(match["T"]) == steps
    assert _close(match["z"], calibrated.config.noise_multiplier)
    assert _close(match["sigma"], calibrated.config.noise_multiplier * p["clip_norm"])
    assert _close(match["eps"], thesis.guarantee.epsilon)
    assert _close(match["rdp"], dp_sgd_epsilon(thesis_z, q, steps, p["delta"], accountant="rdp"))
    assert _close(match["target"], target)
