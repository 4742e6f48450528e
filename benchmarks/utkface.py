"""Images per second of one DP-FERMI training step of the UTKFace CNN, and the time of one epoch.

Measures, for each profile's input resolution (smoke 16 px, cpu 32 px, full 128 px; ``--resolutions``),
with the paper's batch of 64, L = D = 2 and Theorem 3.3 noise switched on (so the host-side noise draw of
one standard normal per parameter is included):

- the wall time of a first run of ``--steps`` steps (compile of the jitted step included);
- images/s of the step in a second, identical run (steady state, host-side noise draw included);
- the implied time of one epoch on the paper's 17,778 training images (⌈n/64⌉ = 278 steps);
- the same for the ``strict`` variant (per-sample clipping by ``jax.vmap``, Poisson batches of expected
  size 64) at ``--strict-resolutions``.

Runs on every JAX device it finds: the CPU always, and a GPU when JAX sees one (``jax[cuda12]``).
Synthetic uint8 images (the step's cost does not depend on the pixels). The machine may be shared: the
load average is printed with the numbers.

    python benchmarks/utkface.py [--resolutions 16,32,128] [--steps 10]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

N_TRAIN = 17_778
BATCH = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolutions", default="16,32,128")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--strict-resolutions", default="16,32",
                        help="resolutions at which the strict variant (vmap per-sample clip) is timed")
    args = parser.parse_args()
    import jax

    from repro.learners.dp_fermi import STRICT_SENSITIVE, DPFermiConfig
    from repro.learners.dp_fermi_cnn import train_dp_fermi_jax, vgg_param_count

    kinds = ["cpu"] + [k for k in ("gpu", "tpu") if _has(jax, k)]
    print(
        f"jax {jax.__version__}; devices: {', '.join(str(d) for d in jax.devices())}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    print(
        "| device | variant | resolution | parameters | first run, compile included (s) | images/s (step) "
        "| one epoch of 17,778 (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    strict_res = {int(r) for r in args.strict_resolutions.split(",") if r}
    for kind in kinds:
        for res in (int(r) for r in args.resolutions.split(",")):
            rng = np.random.default_rng(0)
            n = BATCH * args.steps
            X = rng.integers(0, 256, size=(n, res, res, 3), dtype=np.uint8)
            y, s = rng.integers(0, 9, size=n), np.arange(n) % 5
            cfg = DPFermiConfig(
                head="softmax",
                ermi_form="full",
                lr_theta=0.001,
                lr_w=0.005,
                batch_size=BATCH,
                epochs=1,
                clip_norm=2.0,
                w_radius=2.0,
                sigma_theta=0.05,
                sigma_w=0.01,
                lam=10.0,
            )
            strict = STRICT_SENSITIVE.with_(head="softmax", lr_theta=0.001, lr_w=0.005, batch_size=BATCH,
                                            epochs=1, noise_multiplier=1.0, lam=10.0)
            variants = [("reference", cfg)] + ([("strict", strict)] if res in strict_res else [])
            for name, c in variants:
                t = time.perf_counter()
                train_dp_fermi_jax(X, y, s, c, rng=np.random.default_rng(1), device=kind, n_classes=9)
                first = time.perf_counter() - t  # compile (the step is jitted per input shape) + the steps
                out = train_dp_fermi_jax(X, y, s, c, rng=np.random.default_rng(1), device=kind, n_classes=9)
                ips = out.images_per_second
                print(
                    f"| {out.device} | {name} | {res} | {vgg_param_count(res):,} | {first:.2f} | {ips:.0f} | "
                    f"{math.ceil(N_TRAIN / BATCH) * BATCH / ips:.0f} |",
                    flush=True,
                )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def _has(jax, kind: str) -> bool:
    try:
        return bool(jax.devices(kind))
    except RuntimeError:
        return False


if __name__ == "__main__":
    main()
