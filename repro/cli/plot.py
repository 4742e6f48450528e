"""``repro plot``: redraw figures from saved results (never recomputes)."""

from __future__ import annotations

from pathlib import Path

import click

from repro.cli._common import out_option, profile_option, resolve_ids, results_root, variant_option
from repro.results import ResultBundle, draw_figures, result_dir


@click.command("plot")
@click.argument("ids", nargs=-1, metavar="ID...")
@profile_option
@variant_option
@out_option
def plot(ids: tuple[str, ...], profile: str, variant: str | None, out: Path | None) -> None:
    """Redraw the figures of ID from its saved results (PNG and PDF beside the CSVs)."""
    root = out or results_root()
    for spec in resolve_ids(ids):
        chosen = spec.check_variant(variant)
        bundle = ResultBundle.load(spec, result_dir(root, spec.id, profile, chosen, spec.default_variant))
        paths = draw_figures(bundle, bundle.directory)
        if not paths:
            click.echo(f"{spec.id}: this result has no figures")
        for p in paths:
            click.echo(str(p))
