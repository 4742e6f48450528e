"""The DP-SGD mechanism's primitives, shared by every DP-SGD trainer (Opacus semantics).

Spec: seed-003-thesis.md §2.7 steps 3–4: per-sample clipping factors min(1, C/(‖g_i‖ + 1e-6)); Poisson
sampling (each record independently with probability q) is :func:`repro.privacy.sampling.poisson_batch`. The trainers that use them are in
:mod:`repro.learners.dp_sgd` and :mod:`repro.learners.baselines`; the accountant of the resulting
subsampled Gaussian mechanism is :func:`repro.privacy.accounting.dp_sgd_event`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["clip_factors"]


def clip_factors(norms: np.ndarray, clip_norm: float) -> np.ndarray:
    """Opacus's per-sample clipping factors min(1, C / (‖g_i‖ + 1e-6))."""
    return np.minimum(1.0, clip_norm / (norms + 1e-6))


