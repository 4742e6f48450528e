"""``repro report``: write results/REPORT.md from saved results."""

from __future__ import annotations

from pathlib import Path

import click

from repro.cli._common import out_option, results_root
from repro.engine.spec import get_experiment, load_all


@click.command("report")
@click.argument("ids", nargs=-1, metavar="[ID...]")
@out_option
def report(ids: tuple[str, ...], out: Path | None) -> None:
    """Write DIR/REPORT.md: paper vs ours for every completed run of ID (default: all).

    With IDs, only their sections are replaced; the other sections of an existing report are kept.
    """
    from repro.engine.report import write_report

    specs = [get_experiment(i) for i in ids] if ids else list(load_all().values())
    path = write_report(specs, out or results_root(), only=bool(ids))
    click.echo(str(path))
