"""The one place that imports JAX for the compiled learners, with XLA's CPU thread pool pinned.

A compiled step sums in an order that XLA may choose by its thread count; the project promises the same
bytes for any ``--jobs`` and backend, so the Eigen pool of XLA's CPU backend runs single-threaded unless the
user set ``XLA_FLAGS`` themselves (a process runs one trial batch per core anyway). The flag must be in the
environment before JAX starts its backend, so every compiled learner imports JAX through this module.
"""

from __future__ import annotations

import os
import sys

from repro.errors import MissingExtraError

_PINNED = "--xla_cpu_multi_thread_eigen=false"

if "jax" not in sys.modules and "XLA_FLAGS" not in os.environ:
    os.environ["XLA_FLAGS"] = _PINNED

try:
    import jax
    import jax.numpy as jnp
except ImportError as err:  # pragma: no cover - JAX is a core dependency; only a broken install gets here
    raise MissingExtraError(
        "the compiled learners need JAX: reinstall the project with `pip install -e .` "
        '(CPU wheel; `pip install "jax[cuda12]"` for an NVIDIA GPU).') from err

__all__ = ["jax", "jnp", "float64"]


def float64():
    """Context in which JAX computes in float64 (the compiled learners' numbers equal the numpy engine's)."""
    return jax.enable_x64(True)
