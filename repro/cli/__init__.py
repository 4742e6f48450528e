"""The ``repro`` command line: a thin click layer over the library.

Errors a user can cause (:class:`repro.errors.ReproError`) are printed as one line naming the
cause and the fix, with exit code 1; ``--debug`` (or ``REPRO_DEBUG=1``) shows the traceback.
Ctrl-C prints one line and exits with 130 (128 + SIGINT), after the workers have been stopped.
"""

from __future__ import annotations

import logging
import os
import sys

import click

from repro import __version__
from repro.errors import ReproError

__all__ = ["main"]


EXIT_INTERRUPTED = 130
INTERRUPTED_RUN = ("interrupted (Ctrl-C); the trial cache is intact: every completed trial is kept and no "
                   "partial result folder was written; rerun the same command to resume from the cache")
INTERRUPTED = "interrupted (Ctrl-C); files are written atomically, so nothing was left half-written"


class ReproGroup(click.Group):
    """Click group that turns ReproError into a clean message and exit code 1, Ctrl-C into 130."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, click.Abort) as exc:
            if isinstance(exc, click.Abort) and not isinstance(exc.__context__, KeyboardInterrupt):
                raise
            if (ctx.obj or {}).get("debug") or os.environ.get("REPRO_DEBUG") == "1":
                raise
            message = INTERRUPTED_RUN if ctx.invoked_subcommand == "run" else INTERRUPTED
            click.echo(f"\nrepro: {message}", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except ReproError as exc:
            debug = (ctx.obj or {}).get("debug") or os.environ.get("REPRO_DEBUG") == "1"
            if debug:
                for tb in getattr(exc, "tracebacks", []):
                    click.echo(tb, err=True)
                raise
            click.echo(f"repro: error: {exc}", err=True)
            ctx.exit(1)


@click.group(cls=ReproGroup, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(__version__, prog_name="repro")
@click.option("--debug", is_flag=True, help="Show full tracebacks (and trial failures) instead of one-line errors.")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.pass_context
def main(ctx: click.Context, debug: bool, verbose: int) -> None:
    """Reproduce results on differential privacy and fairness, one command per result.

    \b
    Typical use:
      repro list                          what can be reproduced
      repro show ID                       one result: grid, settable keys, data modes, paper values
      repro run compat-impossibility      run it (smoke profile), print paper vs ours
      repro run ID --profile full         the paper's full configuration
      repro plot ID                       redraw figures from saved results
      repro report                        write results/REPORT.md
      repro data verify                   check dataset files against their sha256
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def _register() -> None:
    from repro.cli.audit import audit
    from repro.cli.data import data
    from repro.cli.list_cmd import list_cmd
    from repro.cli.plot import plot
    from repro.cli.report import report
    from repro.cli.run import run
    from repro.cli.show import show

    for command in (list_cmd, show, run, plot, report, data, audit):
        main.add_command(command)


_register()
