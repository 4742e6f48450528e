"""Per-result wall-time table (markdown) of a results folder, beside the previous times.

Reads every ``run.json`` under the results folder (``<id>/<profile>[...]/run.json``), keeps the
complete runs of one profile (``--profile``, default ``full``) made without ``--set`` overrides (the
newest when a result ran more than once; only its default variant, what ``repro run all`` runs), and prints one row per result: wall time, trials (how many
came from the trial cache: a cached trial costs nothing, so such a wall time understates the
cost), jobs, summed trial seconds, the seconds the experiment file declares for the profile
(``est_seconds``, what ``repro run all`` bases its ETA on) and the measured/declared ratio, and the
previous time from ``previous_full_costs.csv`` (the README's "What the full profiles cost" table;
idle, loaded or estimated, as stated there; ``--profile full`` only). The closing row sums the wall
times: the cost of ``repro run all`` at that profile, result after result.

Several results folders may be given (runs made in separate sessions); the newest run of a result
wins. With ``--profile full``, a result whose full profile needs an accelerator (its file offers a
``cpu`` profile) counts with its ``cpu`` run, as ``repro run all --profile full`` runs it on a machine
without one; such rows are marked and a second total leaves them out.

``--previous-results DIR ...`` takes the previous column from other results folders instead of the CSV
(e.g. each result's own run beside the same results measured by one ``repro run all``), labelled
``--previous-label``.

    python benchmarks/cost_table.py [RESULTS_DIR ...] [--profile full] [--experiments experiments]
        [--previous benchmarks/previous_full_costs.csv | --previous-results DIR ... [--previous-label TEXT]]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

PREVIOUS = Path(__file__).with_name("previous_full_costs.csv")
EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


@dataclass(frozen=True)
class Previous:
    """A previous wall time (seconds, or None where only a group total is known) and its conditions."""

    seconds: float | None
    condition: str
    note: str
    same_profile: bool = False  # measured at the profile the table counts (a cpu stand-in row keeps it)


def read_previous(path: Path = PREVIOUS) -> dict[str, Previous]:
    """result id -> previous wall time, from the CSV kept beside this script."""
    out = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            value = row["previous_seconds"].strip()
            out[row["result_id"]] = Previous(float(value) if value else None, row["condition"].strip(),
                                             row["note"].strip())
    return out


def read_runs(results: Path, profile: str, default_variants: dict[str, str] | None = None) -> dict[str, dict]:
    """result id -> its newest complete run.json of ``profile`` without overrides, of the result's default
    variant (``default_variants``: result id -> the first variant its file lists; what ``repro run all`` runs)."""
    default_variants = default_variants or {}
    runs: dict[str, dict] = {}
    for path in sorted(results.rglob("run.json")):
        if ".cache" in path.parts:
            continue
        try:
            run = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if run.get("status") != "complete" or run.get("profile") != profile or run.get("overrides"):
            continue
        rid = str(run.get("result_id", path.parent.parent.name))
        if run.get("variant") is not None and run["variant"] != default_variants.get(rid, run["variant"]):
            continue  # another variant (`--variant strict`): not what `repro run all` costs
        if rid not in runs or str(run.get("finished_at", "")) > str(runs[rid].get("finished_at", "")):
            runs[rid] = run
    return runs


def read_all_runs(folders: list[Path], profile: str, default_variants: dict[str, str] | None = None,
                  cpu_stand_ins: set[str] | frozenset[str] = frozenset()) -> dict[str, dict]:
    """:func:`read_runs` over several folders, the newest run of a result winning; at ``full``, the ``cpu``
    run of each result of ``cpu_stand_ins`` that has no full run (marked ``"stand_in": "cpu"``)."""
    runs: dict[str, dict] = {}
    for profile_read in (profile, "cpu") if profile == "full" and cpu_stand_ins else (profile,):
        for folder in folders:
            for rid, run in read_runs(folder, profile_read, default_variants).items():
                if profile_read != profile:
                    if rid not in cpu_stand_ins or runs.get(rid, {}).get("profile") == profile:
                        continue
                    run = {**run, "stand_in": "cpu"}
                if rid not in runs or str(run.get("finished_at", "")) > str(runs[rid].get("finished_at", "")):
                    runs[rid] = run
    return runs


def read_cpu_profiles(experiments: Path) -> set[str]:
    """Result ids (and aliases) whose experiment offers a ``cpu`` profile (their full one needs an accelerator),
    from the merged specs (:func:`repro.engine.spec.load_all`, as :func:`read_default_variants`)."""
    from repro.engine.spec import load_all

    return {rid for spec in load_all(experiments).values() if "cpu" in spec.profiles
            for rid in (spec.id, *spec.aliases)}


def read_declared(experiments: Path, profile: str) -> dict[str, float]:
    """result id (and its aliases) -> the ``est_seconds`` its experiment file declares for ``profile``, or
    the file it ``extends`` (a path relative to the file's folder), and so on up the chain."""

    def load(path: Path) -> dict | None:
        try:
            return tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def declared(data: dict, folder: Path, seen: frozenset[Path]) -> float | None:
        est = data.get("profiles", {}).get(profile, {}).get("est_seconds")
        if est is not None or "extends" not in data:
            return est
        base = (folder / str(data["extends"])).resolve()
        parent = None if base in seen else load(base)
        return None if parent is None else declared(parent, base.parent, seen | {base})

    out = {}
    for path in sorted(experiments.glob("*.toml")):
        data = load(path)
        if data is None:
            continue
        est = declared(data, path.parent, frozenset({path.resolve()}))
        if est is not None and "id" in data:
            for rid in (data["id"], *data.get("aliases", ())):
                out[str(rid)] = float(est)
    return out


def read_default_variants(experiments: Path) -> dict[str, str]:
    """result id (and its aliases) -> its default variant, from the merged experiment specs
    (:func:`repro.engine.spec.load_all`, which follows ``extends``); files that do not load are skipped there."""
    from repro.engine.spec import load_all

    return {rid: spec.default_variant for spec in load_all(experiments).values() for rid in (spec.id, *spec.aliases)}


def previous_from_runs(runs: dict[str, dict], label: str) -> dict[str, Previous]:
    """result id -> its wall time in ``runs`` (from :func:`read_all_runs`), as a previous time labelled ``label``."""
    return {rid: Previous(float(run.get("wall_seconds", 0.0)), label, "", same_profile=True)
            for rid, run in runs.items()}


def duration(seconds: float | None) -> str:
    """``42 s``, ``3 min 05 s``; ``—`` for unknown."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "—"
    s = int(round(seconds))
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


def table(runs: dict[str, dict], previous: dict[str, Previous], declared: dict[str, float] | None = None) -> str:
    """The markdown table, one row per result (sorted by id), and a total row."""
    declared = declared or {}
    lines = ["| result | wall time | trials (cached) | jobs | trial seconds | declared | measured/declared "
             "| previous | change |",
             "|---|---|---|---|---|---|---|---|---|"]
    total = total_declared = stand_in_total = 0.0
    for rid in sorted(runs):
        run = runs[rid]
        wall = float(run.get("wall_seconds", 0.0))
        total += wall
        stand_in = run.get("stand_in")
        if stand_in:
            stand_in_total += wall
        prev = previous.get(rid)
        if prev is None:
            before, change = "—", ""
        else:
            shown = duration(prev.seconds) if prev.seconds is not None else (prev.note or "—")
            before = f"{shown} ({prev.condition})" if prev.condition else shown
            change = f"{wall / prev.seconds:.2f}×" if prev.seconds else ""
        cached = int(run.get("n_cached", 0))
        trials = f"{run.get('n_trials', '?')} ({cached})" if cached else str(run.get("n_trials", "?"))
        est = declared.get(f"{rid}@{stand_in}" if stand_in else rid)
        total_declared += est or 0.0
        ratio = f"{wall / est:.2f}" if est else ""
        if stand_in and not (prev is not None and prev.same_profile):
            before, change = f"{stand_in} profile: no full run without an accelerator", ""
        label = f"`{rid}` ({stand_in} profile)" if stand_in else f"`{rid}`"
        lines.append(f"| {label} | {duration(wall)} | {trials} | {run.get('jobs', '?')} | "
                     f"{float(run.get('trial_seconds_total', 0.0)):.0f} | {duration(est)} | {ratio} | "
                     f"{before} | {change} |")
    lines.append(f"| **all {len(runs)} results** | **{duration(total)}** | | | | {duration(total_declared)} | | | |")
    n_stand_in = sum(1 for run in runs.values() if run.get("stand_in"))
    if n_stand_in:
        lines.append(f"| **without the {n_stand_in} cpu-profile row{'s' if n_stand_in > 1 else ''}** | "
                     f"**{duration(total - stand_in_total)}** | | | | | | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="*", type=Path, default=[Path("results")])
    parser.add_argument("--profile", default="full")
    parser.add_argument("--previous", type=Path, default=PREVIOUS)
    parser.add_argument("--previous-results", type=Path, nargs="+", default=None,
                        help="results folders whose runs give the previous column instead of --previous")
    parser.add_argument("--previous-label", default="own run",
                        help="condition shown beside each time taken from --previous-results")
    parser.add_argument("--experiments", type=Path, default=EXPERIMENTS)
    args = parser.parse_args(argv)
    stand_ins = read_cpu_profiles(args.experiments) if args.profile == "full" else set()
    variants = read_default_variants(args.experiments)
    runs = read_all_runs(args.results, args.profile, variants, stand_ins)
    if not runs:
        raise SystemExit(f"no complete {args.profile!r} run.json under {', '.join(map(str, args.results))}; "
                         f"run `repro run all --profile {args.profile}` first")
    if args.previous_results:
        previous = previous_from_runs(read_all_runs(args.previous_results, args.profile, variants, stand_ins),
                                      args.previous_label)
    else:
        previous = read_previous(args.previous) if args.profile == "full" else {}
    declared = read_declared(args.experiments, args.profile)
    declared.update({f"{rid}@cpu": est for rid, est in read_declared(args.experiments, "cpu").items()})
    print(table(runs, previous, declared))


if __name__ == "__main__":
    main()
