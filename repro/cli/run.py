"""``repro run``: run experiments (parallel, cached, resumable) and print paper vs ours."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from repro.cli._common import out_option, parse_set, profile_option, resolve_ids, results_root, variant_option
from repro.report import comparison_rows, format_text, verdict_counts
from repro.results import write_results
from repro.runner import BACKENDS, RunConfig, plan_trials, run_experiment


def _dataset_checksums(names: tuple[str, ...]) -> dict[str, str]:
    if not names:
        return {}
    from repro.datasets import dataset_checksums

    return dataset_checksums(names)


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
@click.option("--no-cache", "no_cache", is_flag=True, help="Neither read nor write the trial cache.")
@click.option("--base-seed", type=int, default=None, metavar="INT",
              help="Base seed mixed into every trial's seed (default: the experiment's base_seed, usually 0).")
@click.option("--set", "set_", multiple=True, metavar="KEY=V[,V...]",
              help="Override a grid axis or fixed parameter, e.g. --set epsilon=1,3 (repeatable).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no table.")
def run(ids: tuple[str, ...], profile: str, seeds: int | None, jobs: int, backend: str, variant: str | None,
        out: Path | None, force: bool, no_cache: bool, base_seed: int | None, set_: tuple[str, ...],
        quiet: bool) -> None:
    """Run ID (or `all`): trials over grid x seeds, then CSVs, figures and run.json in DIR/ID/PROFILE.

    Completed trials are cached in DIR/.cache, so an interrupted run resumes where it stopped and a
    rerun only recomputes what changed. At the end it prints the paper's values beside ours.
    """
    specs = resolve_ids(ids)
    config = RunConfig(profile=profile, seeds=seeds, jobs=jobs, backend=backend, variant=variant,
                       out=out or results_root(), force=force, use_cache=not no_cache,
                       base_seed=base_seed, overrides=parse_set(set_))
    for spec in specs:  # validate everything (variant, --set keys) before running anything
        plan_trials(spec, config)
    command = "repro " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv else "repro run"
    for spec in specs:
        outcome = _run_one(spec, config, quiet)
        directory = write_results(outcome, command=command, dataset_sha256=_dataset_checksums(spec.datasets))
        if quiet:
            continue
        ok, judged = verdict_counts(outcome.summary)
        rows = comparison_rows(outcome.summary, only_paper=True) or comparison_rows(outcome.summary)
        shown = rows[:40]
        click.echo("")
        click.echo(click.style(f"{spec.id}: {spec.title}", bold=True))
        click.echo(format_text(shown))
        if len(rows) > len(shown):
            click.echo(f"... {len(rows) - len(shown)} more rows in {directory / 'summary.csv'}")
        verdict = f"{ok}/{judged} paper comparisons within tolerance" if judged else "no paper values to compare"
        click.echo(f"{verdict}; {outcome.n_trials} trials ({outcome.n_cached} cached) in "
                   f"{outcome.wall_seconds:.1f} s -> {directory}")


def _run_one(spec, config: RunConfig, quiet: bool):
    if quiet:
        return run_experiment(spec, config)
    state = {"last": 0}
    with click.progressbar(length=1, label=f"{spec.id} [{config.profile}]", show_eta=True, show_pos=True,
                           file=sys.stderr) as bar:

        def progress(done: int, total: int) -> None:
            bar.length = total
            bar.update(done - state["last"])
            state["last"] = done

        return run_experiment(spec, config, progress=progress)
