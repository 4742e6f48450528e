"""``repro plot``: redraw figures from saved results (never recomputes)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from repro.cli._common import out_option, parse_set, profile_option, resolve_ids, results_root, variant_option
from repro.engine.results import ResultBundle, draw_figures, result_dir
from repro.engine.runner import RunConfig, drop_inert_overrides
from repro.errors import InvalidParameterError, NoResultsError


@click.command("plot")
@click.argument("ids", nargs=-1, metavar="ID...")
@profile_option
@variant_option
@out_option
@click.option("--set", "set_", multiple=True, metavar="KEY=V[,V...]",
              help="The --set overrides the run was made with (they select its results folder).")
def plot(ids: tuple[str, ...], profile: str, variant: str | None, out: Path | None, set_: tuple[str, ...]) -> None:
    """Redraw the figures of ID from its saved results (PNG and PDF beside the CSVs)."""
    root = out or results_root()
    overrides = parse_set(set_)
    for spec in resolve_ids(ids):
        chosen = spec.check_variant(variant)
        settable = spec.settable_keys(profile)
        for key in overrides:   # as `repro run` checks them: an unknown key names no run
            if key not in settable:
                raise InvalidParameterError(f"--set {key}: {spec.id!r} has no parameter {key!r}; settable: "
                                            f"{', '.join(sorted(settable))}")
        typed = spec.coerce_overrides(overrides)
        # a key without effect made no folder of its own (repro run dropped it, with a warning): find the run's
        typed = dict(drop_inert_overrides(spec, RunConfig(profile=profile, variant=chosen, overrides=typed)).overrides)
        directory = result_dir(root, spec.id, profile, chosen, spec.default_variant, typed)
        if not (directory / "run.json").exists():   # name the run that makes this folder, flags included
            flags = [*([f"--profile {profile}"] if profile != "smoke" else []),
                     *([f"--variant {chosen}"] if chosen != spec.default_variant else []),
                     *(f"--set {shlex.quote(item)}" for item in set_), *([f"--out {shlex.quote(str(out))}"] if out else [])]
            raise NoResultsError(f"no completed results for {spec.id!r} in {directory}; run "
                                 f"`{' '.join(['repro run', spec.id, *flags])}` first")
        bundle = ResultBundle.load(spec, directory)
        paths = draw_figures(bundle, bundle.directory)
        if not paths:
            click.echo(f"{spec.id}: this result has no figures")
        for p in paths:
            click.echo(str(p))
