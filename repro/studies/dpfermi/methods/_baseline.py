"""What the three baselines of the tabular DP-FERMI figures share: their inputs and privacy row (not a method).

Spec: seed-004-dpfermi.md §8 (baselines); each is (ε, δ)-DP by its own accountant (documented in
:mod:`repro.learners.baselines`), with δ = 1/n².
"""

from __future__ import annotations

from typing import Any

import numpy as np

from repro.engine.trial import TrialContext


def setup(method: str, params: dict[str, Any], ctx: TrialContext, Xtr: np.ndarray
          ) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """(learner keyword arguments incl. ``rng=ctx.rng()``, epochs, the privacy row so far)."""
    eps = float(params["epsilon"])
    n = Xtr.shape[0]
    delta = 1.0 / n**2
    common = dict(epsilon=eps, delta=delta, batch_size=int(params["batch_size"]),
                  lr=float(params["baseline_lr"]), clip_norm=float(params["baseline_clip"]),
                  rng=ctx.rng())
    epochs = int(params["baseline_epochs"])
    privacy: dict[str, Any] = {"method": method, "epsilon": eps, "delta": delta, "n_train": n}
    return common, epochs, privacy
