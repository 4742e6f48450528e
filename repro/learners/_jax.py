"""The one place that imports JAX for the compiled learners, with XLA's CPU thread pool pinned.

A compiled step sums in an order that XLA chooses by its thread count (a dot product split over two threads
gives other bits than one thread), and the project promises the same bytes for any ``--jobs``, backend and
machine, so XLA's CPU intra-op pool has one thread unless the user set ``XLA_FLAGS`` themselves (a process
runs one trial batch per core anyway). ``--xla_cpu_multi_thread_eigen=false`` alone does not do it: XLA sizes
the pool by the CPUs the process may run on when its backend starts, so the backend is started while the
process is allowed one CPU (Linux; elsewhere the pool keeps its size), and then every thread of the process,
the ones the backend started included, gets the process's CPU set back (a thread started inside the window
inherits the one-CPU set, and XLA runs its programs on such threads: left there, every worker of a
``--jobs 2`` run would compute on the same CPU). Every compiled learner imports JAX through this module.
"""

from __future__ import annotations

import os
import sys

from repro.errors import MissingExtraError

_PINNED = "--xla_cpu_multi_thread_eigen=false"

if "jax" not in sys.modules and "XLA_FLAGS" not in os.environ:
    os.environ["XLA_FLAGS"] = _PINNED

_PIN_POOL = os.environ.get("XLA_FLAGS") == _PINNED and "jax" not in sys.modules

try:
    import jax
    import jax.numpy as jnp
except ImportError as err:  # pragma: no cover - JAX is a core dependency; only a broken install gets here
    raise MissingExtraError(
        "the compiled learners need JAX: reinstall the project with `pip install -e .` "
        '(CPU wheel; `pip install "jax[cuda12]"` for an NVIDIA GPU).') from err


def _start_backend_with_one_pool_thread() -> None:
    """Start JAX's backends while this process may use one CPU, so XLA's CPU intra-op pool gets one thread,
    then give every thread of the process its CPUs back (see the module docstring)."""
    get, set_ = getattr(os, "sched_getaffinity", None), getattr(os, "sched_setaffinity", None)
    if get is None or set_ is None:  # pragma: no cover - not Linux
        jax.devices()
        return
    cpus = get(0)
    set_(0, {min(cpus)})
    try:
        jax.devices()
    finally:
        _restore_every_thread(set_, cpus)


def _restore_every_thread(set_, cpus: set[int]) -> None:
    """Give each thread of this process the CPU set ``cpus`` (Linux: a thread id is a valid target)."""
    set_(0, cpus)
    try:
        threads = os.listdir("/proc/self/task")
    except OSError:  # pragma: no cover - no procfs: only the calling thread can be restored
        return
    for tid in threads:
        try:
            set_(int(tid), cpus)
        except (OSError, ValueError):  # pragma: no cover - a thread that ended meanwhile
            pass


if _PIN_POOL:
    _start_backend_with_one_pool_thread()

#: folder of compiled programs kept across processes (JAX's persistent compilation cache), or unset / "off"
XLA_CACHE_ENV = "REPRO_XLA_CACHE"
#: most bytes of kept programs per folder (the least recently used go first; a tabular figure keeps ≈ 75 KB)
XLA_CACHE_BYTES = 2 * 1024**3


def _keep_compiled_programs() -> None:
    """Keep compiled programs on disk in ``$REPRO_XLA_CACHE`` (``repro run`` sets it to its results folder's
    ``.cache/xla``), so that every worker and every later run loads a program compiled once instead of
    compiling it again. JAX keys an entry by the program, the compile options, the XLA flags (the pinned pool
    included) and the JAX and jaxlib versions, so a loaded program is the one a compilation would give. A
    size limit turns on JAX's file lock, so that no process reads an entry another is still writing."""
    where = os.environ.get(XLA_CACHE_ENV, "")
    if where.lower() in ("", "off", "0", "none"):
        return
    jax.config.update("jax_compilation_cache_dir", where)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_compilation_cache_max_size", XLA_CACHE_BYTES)


_keep_compiled_programs()

__all__ = ["jax", "jnp", "float64"]


def float64():
    """Context in which JAX computes in float64 (the compiled learners' numbers equal the numpy engine's)."""
    return jax.enable_x64(True)
