"""XLA's CPU intra-op pool has one thread, so a compiled learner's bytes do not depend on how many CPUs the
process may use (:mod:`repro.learners._jax`; the project's same-bytes promise for any ``--jobs``, backend and
machine). Each check runs in a fresh interpreter: the pool is sized once, when JAX's backend starts."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

_SCRIPT = r"""
import hashlib, json, os, sys
if sys.argv[1] != "all":
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import repro.learners._jax  # first: it starts JAX's backend with the pinned pool
import jax.monitoring
hits = []
jax.monitoring.register_event_listener(lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None)
import numpy as np
from repro.learners import dp_fermi_unit as unit
rng = np.random.default_rng(0)
n, d = 4000, 102
X = rng.standard_normal((n, d))
y = (rng.random(n) < 0.4).astype(float)
s = (rng.random(n) < 0.3).astype(int)
cfgs = [unit.configure("strict", n=n, epsilon=1.0, lam=lam, epochs=1).config for lam in (0.0, 1.0)]
out = unit.fit_many(X, y, s, [cfgs] * 2, [np.random.default_rng(i) for i in range(2)])
h = hashlib.sha256()
for trial in out:
    for r in trial:
        h.update(np.asarray(r.model.w).tobytes())
        h.update(np.asarray(r.model.b).tobytes())
        for w in r.W:
            h.update(np.asarray(w).tobytes())
tids = os.listdir("/proc/self/task")
names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in tids]
print(json.dumps({"digest": h.hexdigest(), "pool": names.count("tf_XLAEigen"), "cache_hits": len(hits),
                  "cpus": len(os.sched_getaffinity(0)),
                  "thread_cpus": sorted({len(os.sched_getaffinity(int(t))) for t in tids})}))
"""


@functools.cache  # one fresh interpreter per CPU setting, shared by the tests
def _run(cpus: str, kept: str = "off") -> dict:
    """The script in a fresh interpreter on all or one CPU, with compiled programs kept in ``kept`` ("off":
    every program compiled in the process)."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["REPRO_XLA_CACHE"] = kept
    done = subprocess.run([sys.executable, "-c", _SCRIPT, cpus], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task")
                    or len(os.sched_getaffinity(0)) < 2, reason="needs Linux and at least two usable CPUs")
def test_compiled_bytes_do_not_depend_on_the_cpus_the_process_may_use() -> None:
    """On a 2-CPU process the old pinning flag alone left XLA a 2-thread pool, whose sums gave other bits
    than a 1-CPU process's; now both have one pool thread and equal bytes, and the process keeps its CPUs."""
    many, one = _run("all"), _run("one")
    assert many["cpus"] >= 2 and one["cpus"] == 1
    assert many["pool"] <= 1 and one["pool"] <= 1, (many, one)
    assert many["digest"] == one["digest"]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task")
                    or len(os.sched_getaffinity(0)) < 2, reason="needs Linux and at least two usable CPUs")
def test_every_thread_gets_the_process_cpus_back() -> None:
    """The threads the backend starts inside the one-CPU window (the ones XLA runs its programs on) got the
    process's CPUs back too: before, they kept the first CPU, so every worker of a ``--jobs 2`` run computed
    on that one CPU and two workers took twice as long as one."""
    many = _run("all")
    assert many["thread_cpus"] == [many["cpus"]], many


def test_a_kept_program_gives_the_bytes_of_a_fresh_compilation(tmp_path: Path) -> None:
    """``$REPRO_XLA_CACHE`` (``repro run`` sets it to DIR/.cache/xla): the first process compiles and keeps
    its programs, the next one loads them instead of compiling, and both give the bytes of a process that
    keeps nothing (JAX keys an entry by the program, compile options and XLA flags)."""
    folder = str(tmp_path / "xla")
    cold = _run("all", folder)
    kept = sorted(p.name for p in (tmp_path / "xla").iterdir())
    warm = _run("all", folder + "/")          # another cache key for functools, the same folder
    assert kept and cold["cache_hits"] == 0 and warm["cache_hits"] >= 1, (cold, warm, kept)
    assert cold["digest"] == warm["digest"] == _run("all")["digest"]
