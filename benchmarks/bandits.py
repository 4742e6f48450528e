"""Benchmark of the Private-Fair-Greedy simulator (spec seed-001 §7.3; anchors in measured-anchors.md).

Prints, for one seed at horizon T (default 50,000):

- seconds per (policy, seed) for OFUL, Fair-Greedy and Private-Fair-Greedy run together (the rank
  policies' shared window projections are split evenly between them), and for a 4-configuration
  Private-Fair-Greedy sweep;
- a memory-traffic lower bound: the bytes the window projections and comparisons must stream at
  least once, divided by this machine's measured streaming bandwidth;
- the authors' code on the same machine kind for comparison (≈ 638 s per PFG run at T = 50,000).

Usage: ``python benchmarks/bandits.py [--T 50000] [--env acs-ca-extract|synthetic]`` (the extract
needs ``REPRO_DATA_MIRROR``; without it the synthetic environment is used).

``--compare`` instead runs the per-round reference simulator (before issue 34,
:mod:`repro._testing.bandits_reference`) and the block simulator on the same seed, for the policy sets of
``bandit-regret`` (OFUL + Fair-Greedy + Private-Fair-Greedy) and ``bandit-sweep-eps`` (4 Private-Fair-Greedy
configurations), checks that their actions are equal, and prints CPU seconds per round of each (default
T = 20,000: the reference's cost grows as T², so divide by T and compare at one T).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from repro.bandits import environments as envs
from repro.bandits.policies import OFUL, FairGreedy, PrivateFairGreedy, split_index
from repro.bandits.simulate import draw_stream, simulate, stream_contexts, within_group_basis

AUTHORS_SECONDS = {"OFUL": 6.0, "FairGreedy": 640.0, "PrivateFairGreedy": 638.0}  # measured-anchors.md, T = 50,000


def bandwidth_gbs() -> float:
    """Streaming read bandwidth (GB/s) of one core: best of a few sums over a 200 MB array."""
    a = np.ones(25_000_000)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - t)
    return a.nbytes / best / 1e9


def traffic_bytes(T: int, K: int, r: int, C: int) -> float:
    """Bytes streamed by the window work: at each θ̂ change (every 2nd round) the window's reduced
    coordinates (N·K·r doubles) are read once and its N·K·C projections written once and read twice
    (the comparisons of two rounds)."""
    total = 0.0
    for t in range(3, T + 1, 2):
        N = t - 1 - split_index(t, "reference")
        total += N * K * (r + 3 * C) * 8
    return total


def run(env: envs.BanditEnvironment, T: int, configs: list[dict], with_baselines: bool,
        simulator=simulate) -> dict[str, float]:
    stream = draw_stream(env, T, data_rng=np.random.default_rng(0), noise_rng=np.random.default_rng(1))
    X = stream_contexts(env, stream)
    xs = float(np.linalg.norm(env.pools, axis=-1).max())
    normals = np.random.default_rng(2).standard_normal((T, env.n_arms))
    K, d = env.n_arms, env.dim
    pols = []
    if with_baselines:
        pols += [OFUL(d), FairGreedy(K, d, T, variant="reference", rng=np.random.default_rng(3), history=X, x_scale=xs)]
    for cfg in configs:
        pols.append(PrivateFairGreedy(K, d, T, variant="reference", rng=np.random.default_rng(3), history=X, x_scale=xs,
                                      L_tilde=env.L_tilde, reg_rng=np.random.default_rng(4), rank_normals=normals, **cfg))
    t0, c0 = time.perf_counter(), time.process_time()
    with threadpool_limits(1):
        traces, _ = simulator(env, pols, stream, contexts=X)
    wall = time.perf_counter() - t0
    out = {f"{tr.name}#{i}": tr.seconds for i, tr in enumerate(traces)}
    out["wall"] = wall
    out["cpu"] = time.process_time() - c0
    out["actions"] = np.stack([tr.actions for tr in traces])
    return out


def compare(env: envs.BanditEnvironment, T: int) -> None:
    """Per-round reference vs block simulator: CPU seconds per round, same actions."""
    from repro._testing.bandits_reference import simulate_reference

    main_cfg = {"epsilon": 15.0, "delta": 0.1, "alpha_eps": 0.9, "alpha_delta": 0.9}
    sets = {"bandit-regret policies (OFUL, FG, PFG)": ([main_cfg], True),
            "bandit-sweep-eps policies (4 PFG configurations)": ([{**main_cfg, "epsilon": e} for e in (1.0, 5.0, 15.0,
                                                                                                      50.0)], False)}
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for label, (configs, baselines) in sets.items():
        before = run(env, T, configs, baselines, simulator=simulate_reference)
        after = run(env, T, configs, baselines)
        same = bool(np.array_equal(before["actions"], after["actions"]))
        print(f"{label}, T = {T:,}: per-round reference {before['cpu'] / T * 1e3:.3f} ms CPU per round, "
              f"block simulator {after['cpu'] / T * 1e3:.3f} ms (×{before['cpu'] / after['cpu']:.1f}); "
              f"actions equal: {same}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--T", type=int, default=50_000)
    ap.add_argument("--env", default="acs-ca-extract", choices=["acs-ca-extract", "synthetic"])
    ap.add_argument("--compare", action="store_true", help="per-round reference vs block simulator (T default 20,000)")
    args = ap.parse_args()
    rng = np.random.Generator(np.random.PCG64(42))
    if args.env == "acs-ca-extract" and os.environ.get("REPRO_DATA_MIRROR"):
        env = envs.load_acs_ca_extract(n_per_group=50_001, rng=rng)
    else:
        env = envs.make_synthetic(n_per_group=50_001, rng=rng)
    if args.compare:
        compare(env, args.T if args.T != 50_000 else 20_000)
        return
    T, K = args.T, env.n_arms
    r = max(within_group_basis(env.pools[k]).shape[1] for k in range(K))
    print(f"environment {env.name}: K={K}, d={env.dim}, reduced window dimension r={r}, T={T:,}")
    bw = bandwidth_gbs()
    print(f"streaming read bandwidth (1 core): {bw:.1f} GB/s")

    main_cfg = {"epsilon": 15.0, "delta": 0.1, "alpha_eps": 0.9, "alpha_delta": 0.9}
    cpu0 = time.process_time()
    res = run(env, T, [main_cfg], with_baselines=True)
    cpu = time.process_time() - cpu0
    print(f"\nFigure 1/2 seed (OFUL + Fair-Greedy + Private-Fair-Greedy): wall {res['wall']:.1f} s, CPU {cpu:.1f} s")
    for key, sec in res.items():
        if key in ("wall", "cpu", "actions"):
            continue
        name = key.split("#")[0]
        print(f"  {name:<18} {sec:7.1f} s per (policy, seed)   authors' code: {AUTHORS_SECONDS[name]:6.0f} s"
              f"   speed-up ×{AUTHORS_SECONDS[name] / max(sec, 1e-9):.0f}")
    lb = traffic_bytes(T, K, r, 2) / (bw * 1e9)
    print(f"  memory-traffic lower bound of the shared window work (C=2): {traffic_bytes(T, K, r, 2) / 1e9:.0f} GB "
          f"→ {lb:.1f} s")

    sweep = [{**main_cfg, "epsilon": e} for e in (1.0, 5.0, 15.0, 50.0)]
    cpu0 = time.process_time()
    res = run(env, T, sweep, with_baselines=False)
    cpu = time.process_time() - cpu0
    per = [v for k, v in res.items() if k not in ("wall", "cpu", "actions")]
    print(f"\nA.1 seed (4 Private-Fair-Greedy configurations batched): wall {res['wall']:.1f} s, CPU {cpu:.1f} s, "
          f"{np.mean(per):.1f} s per (configuration, seed)")
    lb4 = traffic_bytes(T, K, r, 4) / (bw * 1e9)
    print(f"  memory-traffic lower bound (C=4): {traffic_bytes(T, K, r, 4) / 1e9:.0f} GB → {lb4:.1f} s")
    print("\nAuthors' code, whole set (3 policies × 10 seeds + 9 more PFG configurations × 10 seeds): ≈ 20 h "
          "(measured-anchors.md).")


if __name__ == "__main__":
    main()
