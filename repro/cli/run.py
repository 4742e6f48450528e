"""``repro run``: run experiments (parallel, cached, resumable) and print paper vs ours."""

from __future__ import annotations

import dataclasses
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from repro.cli import progress as run_progress
from repro.cli._common import (
    check_mirror,
    out_option,
    parse_set,
    profile_option,
    resolve_ids,
    results_root,
    variant_option,
)
from repro.engine.report import comparison_rows, format_text, verdict_line
from repro.engine.results import check_output_dir, write_results
from repro.engine.runner import (
    BACKENDS,
    Plan,
    RunConfig,
    build_plan,
    check_plan,
    plan_estimate,
    run_experiment,
    typed_config,
)
from repro.engine.spec import ExperimentSpec, study_of
from repro.engine.user_method import USER_KEY, load_user_method, with_user_method
from repro.errors import InvalidParameterError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from repro.engine.cost import Estimate

#: above this many trials, planning takes seconds: say so before starting
PLAN_WARN_TRIALS = 50_000
#: up to this many cells, the plan is built (and every cell checked) before the run starts (about 0.1 ms a cell)
CHECK_CELLS = 5_000
SMOKE_NOTE = ("smoke profile: wiring check, not a reproduction (reduced data and grids); the paper's values are "
              "shown as context, not comparable. Run with --profile full to reproduce.")
PROFILE_NOTE = ("{profile} profile: a reduced run; the paper's values are shown as context, not comparable. "
                "Run with --profile full to reproduce.")


def _dataset_checksums(spec: ExperimentSpec, config: RunConfig) -> dict[str, str]:
    """sha256 of the raw files of the datasets the run loaded (the file's ``datasets`` when the run names no
    registered dataset), and the authors' rebuilt files by git blob."""
    from repro.engine.results import datasets_ran

    ran = datasets_ran(spec, config)
    names = tuple(dict.fromkeys(n for d in ran for n in d["sources_sha256"])) if ran else spec.datasets
    if not names:
        return {}
    from repro.cli.data import authors_checksums
    from repro.datasets import dataset_checksums

    return {**dataset_checksums(names), **authors_checksums(names)}


@click.command("run")
@click.argument("ids", nargs=-1, metavar="ID...|all")
@profile_option
@click.option("--seeds", type=int, default=None, metavar="N",
              help="Repetitions per cell (default: the profile's number, as in the paper for `full`).")
@click.option("--jobs", "-j", type=int, default=1, metavar="N",
              help="Parallel workers (-1: all cores). Results are identical for any N.")
@click.option("--backend", type=click.Choice(BACKENDS), default="loky",
              help="joblib backend: loky (local processes), dask or ray (clusters; needs the extra).")
@variant_option
@out_option
@click.option("--force", is_flag=True, help="Recompute every trial, ignoring (and overwriting) the trial cache.")
@click.option("--no-cache", "no_cache", is_flag=True, help="Neither read nor write the trial cache, nor keep compiled programs (DIR/.cache/xla).")
@click.option("--base-seed", type=int, default=None, metavar="INT",
              help="Base seed mixed into every trial's seed (default: the experiment's base_seed, usually 0).")
@click.option("--set", "set_", multiple=True, metavar="KEY=V[,V...]",
              help="Override a grid axis or fixed parameter, e.g. --set epsilon=1,3 (repeatable).")
@click.option("--with", "with_", multiple=True, metavar="FILE.py|MOD:CLS",
              help="Also train your own method (a scikit-learn-style class declaring privacy_guarantee) on the same "
                   "splits, seeds and privacy budget; see docs/bring-your-own-method.md (repeatable).")
@click.option("--timeout", type=float, default=None, metavar="SECONDS",
              help="Stop a trial that runs longer than this and report it as failed (default: no limit).")
@click.option("--allow-large", "allow_large", is_flag=True,
              help="Run even when the estimated cost exceeds the bound (24 h of one core, or half the memory).")
@click.option("--audit", is_flag=True,
              help="After each result, a one-run privacy audit of its accountant-calibrated DP-SGD cells (the "
                   "DP-FERMI figures' baselines and strict-all cells, Algorithm 2's DP-SGD part) at their own n, q, "
                   "T and noise, seeded by the run's base seed (tables/one_run_audit.csv; audited_epsilon beside "
                   "eps_label in privacy.csv and summary.csv). A result with no such cell is refused before it runs.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no table.")
@click.option("--debug", is_flag=True, help="Show full tracebacks (and trial failures), as `repro --debug run`.")
def run(ids: tuple[str, ...], profile: str, seeds: int | None, jobs: int, backend: str, variant: str | None,
        out: Path | None, force: bool, no_cache: bool, base_seed: int | None, set_: tuple[str, ...],
        with_: tuple[str, ...], timeout: float | None, allow_large: bool, audit: bool, quiet: bool,
        debug: bool) -> None:
    """Run ID (or `all`): trials over grid x seeds, then CSVs, figures and run.json in DIR/ID/PROFILE
    (suffixed for another --variant, --set, --seeds, --base-seed or --with, so a profile's own results are
    never replaced by a different run).

    Completed trials are cached in DIR/.cache, so an interrupted run resumes where it stopped and a
    rerun only recomputes what changed; JAX's compiled programs are kept in DIR/.cache/xla and shared by
    the workers ($REPRO_XLA_CACHE: another folder, or off). At the end it prints the paper's values beside
    ours.
    """
    if debug:   # the group's error handler reads the shared context object
        click.get_current_context().ensure_object(dict)["debug"] = True
    specs = _with_user_methods(resolve_ids(ids), with_)
    if base_seed is not None and base_seed < 0:
        raise InvalidParameterError(f"--base-seed must be >= 0 (it seeds numpy's SeedSequence); got {base_seed}")
    config = RunConfig(profile=profile, seeds=seeds, jobs=jobs, backend=backend, variant=variant,
                       out=out or results_root(), force=force, use_cache=not no_cache,
                       base_seed=base_seed, overrides=parse_set(set_), timeout=timeout, allow_large=allow_large)
    check_output_dir(config.out)  # before any trial runs: a bad --out fails now, in one line
    if any(spec.datasets for spec in specs):
        from repro.datasets.store import check_data_dir

        check_data_dir()
        check_mirror()
    configs = _per_result_configs(specs, config, run_all="all" in ids)
    audited = _audited(specs, configs, run_all="all" in ids) if audit else set()
    # validate everything (variant, --set, rules, cost) before running anything; each result's plan is built
    # once, here (or, for a plan of very many cells, when its run starts)
    checked = [_plan_with_feedback(spec, spec_config, quiet) for spec, spec_config in zip(specs, configs, strict=True)]
    plans = [plan for plan, _ in checked]
    if not quiet:
        for spec, spec_config, (_, est) in zip(specs, configs, checked, strict=True):
            click.echo(f"{spec.id} [{spec_config.profile}]: {est.line()}", err=True)
    command = "repro " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv else "repro run"
    tracker = _tracker(specs, configs) if len(specs) > 1 and not quiet else None
    clock = run_progress.Clock()
    for index, (spec, spec_config, plan) in enumerate(zip(specs, configs, plans, strict=True)):
        if tracker is not None:
            click.echo(f"[{index + 1}/{len(specs)}] {spec.id}: "
                       + run_progress.status_line(tracker, tracker.start(index, clock())), err=True)
        outcome = _run_one(spec, spec_config, quiet, tracker, plan)
        spec_config = outcome.config   # typed, the keys without effect dropped
        directory = write_results(outcome, command=command, dataset_sha256=_dataset_checksums(spec, spec_config))
        if spec.id in audited:
            _one_run_audit(directory, quiet)
        if tracker is not None:
            tracker.finish(index, outcome.wall_seconds, cached_only=outcome.n_cached == outcome.n_trials)
        if quiet:
            continue
        rows = comparison_rows(outcome.summary, only_paper=True) or comparison_rows(outcome.summary)
        yours = _user_method_rows(spec, spec_config, outcome.summary)   # no paper value, always shown
        rows = [r for r in rows if r not in yours]
        shown = rows[:max(0, 40 - len(yours))] + yours
        click.echo("")
        click.echo(click.style(f"{spec.id}: {spec.title}", bold=True))
        click.echo(format_text(shown))
        if len(rows) + len(yours) > len(shown):
            click.echo(f"... {len(rows) + len(yours) - len(shown)} more rows in {directory / 'summary.csv'}")
        click.echo(f"{verdict_line(outcome.summary)}; {outcome.n_trials} trials ({outcome.n_cached} cached) in "
                   f"{outcome.wall_seconds:.1f} s -> {directory}")
        if spec.expected:
            click.echo(f"Expected: {' '.join(spec.expected.split())}")
        if spec_config.profile not in spec.reference_defaults.profiles and spec.references:
            click.echo(SMOKE_NOTE if spec_config.profile == "smoke" else PROFILE_NOTE.format(profile=spec_config.profile))
    if tracker is not None:
        click.echo(run_progress.closing_line(tracker, clock()), err=True)


def _audited(specs: list[ExperimentSpec], configs: list[RunConfig], *, run_all: bool) -> set[str]:
    """``--audit``: the results whose cells the one-run audit can cover (repro/studies/audit/run_audit.py). A
    named result that cannot hold one is refused in one line before any trial runs; with ``all``, those results
    run unaudited and each is named in one line."""
    import importlib

    refusal = importlib.import_module("repro.studies.audit.run_audit").audit_refusal
    audited = set()
    for spec, config in zip(specs, configs, strict=True):
        why = refusal(spec.id, spec.trial, config.variant or spec.default_variant)
        if why is None:
            audited.add(spec.id)
        elif run_all:
            click.echo(f"{why.split('; ', 1)[0]}; it runs without the audit", err=True)
        else:
            raise InvalidParameterError(why)
    return audited


def one_run_audit_rng(run: dict, *labels: object) -> np.random.Generator:
    """The generator of one cell of ``repro run ID --audit``: ``SeedSequence([base_seed, *stable_words(result_id,
    "one-run-audit", *labels)])``, the run's base seed (``run.json``) mixed with the cell's labels, as the runner
    seeds a trial (repro/engine/trial.py), so the audit is deterministic given the run and another
    ``--base-seed`` draws other canaries."""
    from repro.engine.identity import stable_words
    from repro.engine.trial import StreamSeed

    words = stable_words(str(run.get("result_id", "")), "one-run-audit", *labels)
    return StreamSeed((int(run.get("base_seed") or 0), *words)).rng()


def _one_run_audit(directory: Path, quiet: bool) -> None:
    """``--audit``: the one-run audit of the result's cells (its module is loaded by name, as the runner loads a
    study), written beside the result (``tables/one_run_audit.csv``, and the bound beside the claimed label in
    ``tables/privacy.csv`` and ``summary.csv``) and summarised in one line per audited cell. Each cell's
    generator derives from the run's base seed and the cell (:func:`one_run_audit_rng`)."""
    import importlib
    import json

    run = json.loads((directory / "run.json").read_text())
    table = importlib.import_module("repro.studies.audit.run_audit").audit_result(
        directory, lambda *labels: one_run_audit_rng(run, *labels))
    audited = table[table["status"].astype(str).str.startswith("audited")] if not table.empty else table
    if table.empty:
        click.echo("one-run audit: this run recorded no privacy cells; nothing audited", err=True)
        return
    if audited.empty:
        click.echo(f"one-run audit: none of the {len(table)} privacy cells of this run is auditable (reasons in "
                   f"{directory / 'tables' / 'one_run_audit.csv'}); privacy.csv and summary.csv unchanged", err=True)
        return
    if quiet:
        return
    beside = [p.name for p in (directory / "tables" / "privacy.csv", directory / "summary.csv")
              if p.is_file() and "audited_epsilon" in p.read_text(encoding="utf-8").split("\n", 1)[0].split(",")]
    click.echo(f"one-run audit: {len(audited)} of {len(table)} privacy cells audited -> "
               f"{directory / 'tables' / 'one_run_audit.csv'}"
               + (f" (audited_epsilon beside eps_label in {' and '.join(beside)})" if beside else ""))
    for _, r in audited.iterrows():
        click.echo(f"  {r['method']} ({r['variant']}, {r['data']}): claimed ε = {r['epsilon']:g} ({r['label']}), "
                   f"audited ε ≥ {r['audited_epsilon']:.3f} (95 %, {int(r['canaries'])} canaries, one run)")


def _user_method_rows(spec: ExperimentSpec, config: RunConfig, summary: pd.DataFrame) -> list[list[str]]:
    """The summary rows of the run's ``--with`` methods (they have no paper value to be shown beside)."""
    names = {c["method"] for c in spec.expand_cells(config.profile) if USER_KEY in c}
    if not names:
        return []
    return comparison_rows(summary[summary["method"].isin(names)])


def _per_result_configs(specs: list[ExperimentSpec], config: RunConfig, *, run_all: bool) -> list[RunConfig]:
    """The run's config for each result: ``repro run all --profile full`` runs an experiment whose full
    profile needs an accelerator (it offers ``cpu``, spec.py) at its reduced ``cpu`` profile when none is
    visible, and says so; named on its own, an experiment runs at the profile asked for, with a warning."""
    needs = [spec.id for spec in specs if config.profile == "full" and "cpu" in spec.profiles]
    if not needs:
        return [config] * len(specs)
    from repro.engine.backends import accelerator_visible

    if accelerator_visible():
        return [config] * len(specs)
    reduced = dataclasses.replace(config, profile="cpu")
    for spec_id in needs:
        if run_all:
            click.echo(f"{spec_id}: its full profile needs an accelerator and JAX sees none here; `all` runs its "
                       f"reduced cpu profile instead (results in {spec_id}/cpu; on a GPU machine: "
                       f"repro run {spec_id} --profile full)", err=True)
        else:
            click.echo(f"{spec_id}: its full profile needs an accelerator and JAX sees none here; on these CPUs it "
                       f"takes days (--profile cpu is the reduced run meant for CPUs)", err=True)
    return [reduced if run_all and spec.id in needs else config for spec in specs]


def _tracker(specs: list[ExperimentSpec], configs: list[RunConfig]) -> run_progress.RunProgress:
    """Declared seconds of every result of a multi-result run, in run order."""
    timings = []
    for spec, config in zip(specs, configs, strict=True):
        prof = spec.profile(config.profile)
        timings.append(run_progress.ResultTiming(
            spec.id, run_progress.declared_seconds(prof.est_seconds, config.seeds, prof.seeds)))
    return run_progress.RunProgress(timings)


def _with_user_methods(specs: list[ExperimentSpec], refs: tuple[str, ...]) -> list[ExperimentSpec]:
    """The specs with each ``--with`` method added, checked (contract, study support) before anything runs."""
    if not refs:
        return specs
    methods = [load_user_method(ref) for ref in refs]
    names = [m.name for m in methods]
    if len(set(names)) != len(names):
        raise InvalidParameterError(f"--with: two methods share the name {sorted(n for n in names if names.count(n) > 1)[0]!r}; "
                                    "rename one class.")
    out = []
    for spec in specs:
        if not study_of(spec).user_methods:
            raise InvalidParameterError(f"--with: {spec.id!r} does not take your own method (its study declares "
                                        "user_methods=False; `repro show ID` says 'user methods (--with): yes' "
                                        "for the results that do)")
        for method in methods:
            spec = with_user_method(spec, method)
        out.append(spec)
    return out


def _plan_with_feedback(spec: ExperimentSpec, config: RunConfig, quiet: bool) -> tuple[Plan | None, Estimate]:
    """Validate ``spec`` under ``config`` (unknown keys and typed values, counts, rules, estimated cost), then
    plan it (once: the plan is what runs; a plan of more than :data:`CHECK_CELLS` cells is checked by the
    study's own checks and built when its run starts); announce a plan large enough to take a while."""
    config = typed_config(spec, config)   # unknown keys and values refused in one line; typed once
    est = plan_estimate(spec, config)   # refused in one line when it cannot fit or costs too much
    large = est.trials > PLAN_WARN_TRIALS
    if large:
        click.echo(f"{spec.id}: planning {est.trials:,} trials ({est.cells:,} cells x {est.seeds:,} seeds); "
                   "large plans take seconds to hash and minutes or more to run (fewer --seeds is quicker)",
                   err=True)
    start = time.perf_counter()
    if est.cells <= CHECK_CELLS:
        plan = build_plan(spec, config, size=(est.trials, est.cells, est.seeds))
    else:   # the study's own checks and declaration; the cells' keys are built when the run starts
        check_plan(spec, config)
        study_of(spec)
        plan = None
    if large and not quiet:
        done = (f"planned its {est.trials:,} trials" if plan is not None
                else f"checked its {est.cells:,} cells; the {est.trials:,} trials are planned when the run starts")
        click.echo(f"{spec.id}: {done} in {time.perf_counter() - start:.1f} s", err=True)
    return plan, est


def _run_one(spec, config: RunConfig, quiet: bool, tracker: run_progress.RunProgress | None = None,
             plan: Plan | None = None):
    if quiet:
        return run_experiment(spec, config, plan=plan)
    state = {"last": 0, "cached": None}
    clock = run_progress.Clock()

    def overall(_item: object) -> str | None:  # the whole run's ETA after the bar (multi-result runs)
        if tracker is None or state["cached"] is None:
            return None
        eta = tracker.eta(elapsed_current=clock(), trials_done=state["last"], trials_cached=state["cached"],
                          trials_total=bar.length)
        return f"all: {tracker.n_done}/{len(tracker.results)} done, ETA {run_progress.format_duration(eta)}"

    with click.progressbar(length=1, label=f"{spec.id} [{config.profile}]", show_eta=True, show_pos=True,
                           file=sys.stderr, item_show_func=overall) as bar:

        def progress(done: int, total: int) -> None:
            if state["cached"] is None:  # the runner reports the cached trials first
                state["cached"] = done
            bar.length = total
            step, state["last"] = done - state["last"], done
            bar.update(step, current_item=done)

        return run_experiment(spec, config, plan=plan, progress=progress)
