"""CPU evidence for issue 37: how the authors' test-time normalisation moves Figure 5's error.

One CPU-sized run of the Figure 5 ``reference`` path per ε: 32 px, the whole training split (a seeded 3:1
split of the 23,705 usable images, as the study draws it), batch 64, η_θ = 0.001, η_W = 0.005, L = D = 2,
Theorem 3.3(a) noise (σ = 0 at ε = ∞), λ = 0, the code's 9 × 9 W. After every epoch the *same* iterate is
evaluated on the test split twice:

- ``running``: the InstanceNorm running statistics (momentum 0.1, one update per training batch), what the
  authors' ``model.eval()`` uses (the new ``reference``);
- ``instance``: each test image normalised by its own statistics (our earlier choice, now the ablation
  ``--set test_norm=instance``).

The two columns differ only in evaluation: training is the same in both modes (PyTorch's training mode uses
instance statistics), so one run gives both. The other change of issue 37, W's shape (``w_rows``), cannot
move anything at λ = 0: θ's gradient has no W term there and the W noise is scaled by λ, so it only
changes which random numbers later steps draw; it is not measured here.

    python benchmarks/utkface_authors_path.py [--epochs 3] [--epsilons 100,inf] [--seed 0]

Needs the vision extra and the UTKFace data (``REPRO_DATA_MIRROR``); prints a Markdown table with the load
average. Spec: seed-004 §7.5 (Update 2026-11-28).
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

#: released Figure 5 points at λ = 0 (128 px, the released run's epochs), spec Appendix A.2 [D]
RELEASED_LAMBDA0 = {10.0: (0.586, 0.204), 100.0: (0.300, 0.235)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--epsilons", default="100,inf")
    parser.add_argument("--resolution", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from repro.datasets import registry
    from repro.datasets.split import split
    from repro.datasets.utkface import load_images
    from repro.learners import dp_fermi_cnn_unit as cnn_unit
    from repro.learners.dp_fermi_cnn import predict, train_dp_fermi_jax
    from repro.privacy.dpfermi_noise import group_floor
    from repro.studies.dpfermi.utkface import N_CLASSES, dp_violation_multiclass

    entry = registry.get_dataset("utkface")
    index = entry.load("clean")
    parts = split(entry, "clean", n=index.n, rng=np.random.default_rng(args.seed), train_fraction=0.75)
    train, test = parts.train, parts.test
    images = load_images(args.resolution, np.concatenate([train, test]))
    Xtr, Xte = images[: train.size], images[train.size:]
    ytr, yte, s_tr, s_te = index.y[train], index.y[test], index.s[train], index.s[test]
    n, B = train.size, 64
    print(f"UTKFace {args.resolution} px: {n} training / {test.size} test images, batch {B}, {args.epochs} epochs "
          f"({args.epochs * math.ceil(n / B)} steps), λ = 0; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores", flush=True)
    rows = []
    for eps in (float(e) for e in args.epsilons.split(",")):
        # the CNN unit's reference configuration: Theorem 3.3(a)'s σ's (none at ε = ∞), L = D = 2, λ = 0
        cfg = cnn_unit.configure("reference", n=n, epsilon=eps, rho=group_floor(s_tr), lr_theta=0.001, lr_w=0.005,
                                 batch_size=B, epochs=args.epochs, clip_norm=2.0, w_radius=2.0, lam=0.0).config

        t0 = time.perf_counter()

        def evaluate(epoch: int, params, running, eps: float = eps, t0: float = t0) -> None:
            out = {}
            for mode, stats in (("running", running), ("instance", None)):
                pred, _ = predict(params, Xte, device="cpu", running_stats=stats)
                out[mode] = (float(np.mean(pred != yte)), dp_violation_multiclass(pred, s_te, N_CLASSES))
            rows.append((eps, epoch, out, time.perf_counter() - t0))
            print(f"  ε = {eps:g}, epoch {epoch}: running {out['running']}, instance {out['instance']} "
                  f"({rows[-1][3]:.0f} s)", flush=True)

        train_dp_fermi_jax(Xtr, ytr, s_tr, cfg, rng=np.random.default_rng(args.seed + 1), model="vgg",
                           device="cpu", n_classes=N_CLASSES, norm_stats="running", w_rows="classes",
                           on_epoch=evaluate)
    print(f"load average after: {os.getloadavg()[0]:.2f}\n")
    print("| ε | epoch | error, running stats (authors) | error, instance stats (ours before) | difference "
          "| violation, running | violation, instance | released λ = 0 (128 px) | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for eps, epoch, out, wall in rows:
        (er, vr), (ei, vi) = out["running"], out["instance"]
        rel = RELEASED_LAMBDA0.get(eps)
        print(f"| {eps:g} | {epoch} | {er:.3f} | {ei:.3f} | {er - ei:+.3f} | {vr:.3f} | {vi:.3f} | "
              f"{'—' if rel is None else f'{rel[0]:.3f} / {rel[1]:.3f}'} | {wall:.0f} |")


if __name__ == "__main__":
    main()
