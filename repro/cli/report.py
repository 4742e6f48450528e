"""``repro report``: write results/REPORT.md, or with ``--html`` a static results site, from saved results."""

from __future__ import annotations

from pathlib import Path

import click

from repro.cli._common import out_option, resolve_ids, results_root
from repro.cli.plot import RunAddress, load_addressed, run_address_options
from repro.engine.spec import get_experiment, load_all
from repro.errors import InvalidParameterError


@click.command("report")
@click.argument("ids", nargs=-1, metavar="[ID...]")
@run_address_options
@out_option
@click.option("--html", is_flag=True,
              help="Write a static site instead (index.html and one page per result; no server, no network) "
                   "into --out DIR (default: $REPRO_RESULTS_DIR/site or ./results/site).")
@click.option("--from", "from_", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="With --html: the results folder to read (default: $REPRO_RESULTS_DIR or ./results), e.g. "
                   "docs/results, the published full-profile runs.")
def report(ids: tuple[str, ...], profile: str, variant: str | None, set_: tuple[str, ...], seeds: int | None,
           base_seed: int | None, with_: tuple[str, ...], out: Path | None, html: bool, from_: str | None) -> None:
    """Write DIR/REPORT.md: paper vs ours for every completed run of ID (default: all).

    With IDs, only their sections are replaced; the other sections of an existing report are kept. With the
    options of the run (`repro report dpfermi-fig-2 --seeds 8`), only that run's section is written.

    With --html, write a results site built from saved runs only: an index (the fidelity dashboard, filterable)
    and a page per result with its runs; a result without saved runs shows "not run".
    """
    address = RunAddress(profile, variant, set_, seeds, base_seed, with_)
    if html:
        from repro.engine.site import write_site

        if address.given():
            raise InvalidParameterError("--html shows every saved run of each result; drop the run options "
                                        "(--profile, --variant, --set, --seeds, --base-seed, --with)")
        source = Path(from_) if from_ else results_root()
        specs = resolve_ids(ids) if ids else list(load_all().values())
        index = write_site(specs, source, out or results_root() / "site")
        click.echo(str(index))
        return
    if from_:
        raise InvalidParameterError("--from goes with --html; REPORT.md is written into the results folder "
                                    "named by --out DIR")
    from repro.engine.report import write_report

    root = out or results_root()
    specs = [get_experiment(i) for i in ids] if ids else list(load_all().values())
    if address.given():
        if not ids:
            raise click.UsageError("name the result whose run you mean, e.g. `repro report dpfermi-fig-2 --seeds 8`")
        bundles = [load_addressed(spec, address, root, out) for spec in specs]
        path = write_report(specs, root, bundles=bundles)
    else:
        path = write_report(specs, root, only=bool(ids))
    click.echo(str(path))
