"""Where one trial's time goes: run a single planned trial of an experiment under cProfile.

Plans the experiment exactly as ``repro run`` does (profile, variant, ``--set``), picks one trial
(the first whose cell matches every ``--cell KEY=VALUE``, repetition ``--rep``), runs it twice in
this process pinned to one thread the way the runner pins its workers (``single_threaded``): once to
warm the per-process caches (data loading, one-hot encoding, LP solutions), once under cProfile
(``--cold`` profiles the first run instead, data loading included). Prints the CPU and wall seconds,
the own time (tottime) grouped by where it is spent, and the top functions by cumulative time.
No trial cache is read or written.

    REPRO_DATA_MIRROR=../shared/data python benchmarks/profile_trial.py thesis-fig-5.1 --profile full \\
        --cell method=GRR --cell epsilon=1.0 [--cold] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections import defaultdict

#: (label, substring of a profiled function's file or name), first match wins
GROUPS = (
    ("LightGBM (fit, predict, Dataset)", "lightgbm"),
    ("scikit-learn", "sklearn"),
    ("data loading (pandas, csv, repro.datasets)", "pandas"),
    ("data loading (pandas, csv, repro.datasets)", "repro/datasets"),
    ("SciPy (LP, optimisation, special functions)", "scipy"),
    ("JAX", "jax"),
    ("repro.learners (Python per-step code)", "repro/learners"),
    ("repro.bandits (Python per-round code)", "repro/bandits"),
    ("repro.privacy / fairness / theory", "repro/privacy"),
    ("repro.privacy / fairness / theory", "repro/fairness"),
    ("repro.privacy / fairness / theory", "repro/theory"),
    ("repro.studies (trial glue)", "repro/studies"),
    ("numpy (BLAS products, array calls)", "numpy"),
    ("numpy (BLAS products, array calls)", "method '"),
    ("numpy (BLAS products, array calls)", "built-in method numpy"),
)


def _group(func: tuple[str, int, str]) -> str:
    where = f"{func[0]} {func[2]}"
    for label, needle in GROUPS:
        if needle in where:
            return label
    return "other (Python builtins, interpreter)"


def add_trial_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that name one planned trial (shared with ``warm_trial.py``)."""
    parser.add_argument("experiment")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--variant", default=None)
    parser.add_argument("--cell", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--rep", type=int, default=0)


def planned_trial(args: argparse.Namespace):
    """(task, its study module, number of planned trials): the first trial of ``args.experiment`` planned as
    ``repro run`` plans it whose cell matches every ``--cell`` at repetition ``--rep``; no trial cache."""
    import importlib

    from repro.engine.runner import RunConfig, plan_trials
    from repro.engine.spec import get_experiment

    spec = get_experiment(args.experiment)
    tasks = plan_trials(spec, RunConfig(profile=args.profile, variant=args.variant, use_cache=False))
    wanted = dict(c.split("=", 1) for c in args.cell)
    matches = [t for t in tasks if t.context.repetition == args.rep
               and all(str(t.cell.get(k)) == v for k, v in wanted.items())]
    if not matches:
        raise SystemExit(f"no trial of {args.experiment} [{args.profile}] matches {wanted} at repetition {args.rep}")
    return matches[0], importlib.import_module(matches[0].module), len(tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trial_arguments(parser)
    parser.add_argument("--cold", action="store_true", help="profile the first run (data loading included)")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()

    from repro.engine.backends import single_threaded

    task, module, n_tasks = planned_trial(args)
    print(f"{args.experiment} [{args.profile}] trial {task.index + 1}/{n_tasks}: cell {task.cell}, rep {args.rep}")
    with single_threaded():
        if not args.cold:
            c0, w0 = time.process_time(), time.perf_counter()
            module.run_trial(dict(task.params), task.context)
            print(f"first (warm-up) run: {time.process_time() - c0:.3f} s CPU, {time.perf_counter() - w0:.3f} s wall")
        prof = cProfile.Profile(time.process_time)  # CPU seconds: the shares hold on a loaded machine
        c0, w0 = time.process_time(), time.perf_counter()
        prof.enable()
        module.run_trial(dict(task.params), task.context)
        prof.disable()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(f"profiled run: {cpu:.3f} s CPU, {wall:.3f} s wall (cProfile overhead included; the tables below are CPU seconds)")
    stats = pstats.Stats(prof)
    own: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    total = 0.0
    for func, (_cc, nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        own[_group(func)] += tt
        calls[_group(func)] += nc
        total += tt
    print(f"\n{'own time by group':52s} {'s':>8s} {'share':>7s} {'calls':>10s}")
    for label, seconds in sorted(own.items(), key=lambda kv: -kv[1]):
        print(f"{label:52s} {seconds:8.3f} {seconds / total:7.1%} {calls[label]:10d}")
    print()
    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
