"""``repro list``: every registered result."""

from __future__ import annotations

from pathlib import Path

import click

from repro.cli._common import results_root
from repro.engine.spec import load_all, skipped_files


def _seconds(s: float | None) -> str:
    if s is None:
        return "?"
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


@click.command("list")
@click.option("--ids", is_flag=True, help="Print only the ids, one per line (for scripts).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Results folder whose saved runs are listed (default: $REPRO_RESULTS_DIR or ./results).")
def list_cmd(ids: bool, out: Path | None) -> None:
    """List every reproducible result: id, source, what it reproduces, the study module that computes it,
    datasets, runtime, results."""
    from repro.cli import module_exists  # not engine.results: `repro list` must not load numpy or pandas

    specs = load_all()
    if ids:
        for spec_id in specs:
            click.echo(spec_id)
        return
    for path, exc in skipped_files().items():  # a broken file is named, the others stay usable
        click.echo(f"SKIPPED {path.name}: {exc}", err=True)
    root = out or results_root()
    for spec in specs.values():
        base = root / spec.id
        have = sorted(d.name for d in base.iterdir() if (d / "run.json").exists()) if base.is_dir() else []
        est = ", ".join(f"{name} {_seconds(p.est_seconds)}" for name, p in spec.profiles.items())
        aka = f"  (also: {', '.join(spec.aliases)})" if spec.aliases else ""
        click.echo(click.style(spec.id, bold=True) + f"{aka}  [{spec.kind}]  results: {', '.join(have) or 'none'}")
        click.echo(f"    {spec.document} — {spec.section}")
        click.echo(f"    reproduces: {spec.reproduces}")
        report = f"{spec.trial}_report" if module_exists(f"{spec.trial}_report") else spec.trial
        click.echo(f"    computed by: {spec.trial}  (figures/report: {report})")
        click.echo(f"    datasets: {', '.join(spec.datasets) or 'none'} · est. runtime: {est} · "
                   f"variants: {', '.join(spec.variants)}")
    if specs:
        click.echo("`repro show ID` prints one result in full: grid, settable keys and their domains, data modes, "
                   "paper values")
