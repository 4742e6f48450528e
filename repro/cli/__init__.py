"""The ``repro`` command line: a thin click layer over the library.

Errors a user can cause (:class:`repro.errors.ReproError`) are printed as one line naming the
cause and the fix, with exit code 1; ``--debug`` (or ``REPRO_DEBUG=1``) shows the traceback.
Ctrl-C prints one line and exits with 130 (128 + SIGINT), after the workers have been stopped.

Commands are imported only when invoked (:class:`LazyGroup`), so ``repro --help`` and ``repro list``
start without loading numpy, pandas or matplotlib (``benchmarks/cli_startup.py`` measures it).
"""

from __future__ import annotations

import importlib
import importlib.util
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
INTERRUPTED_RUN_NO_CACHE = ("interrupted (Ctrl-C); no partial result folder was written and, under --no-cache, "
                            "no trial was kept: rerun the command (without --no-cache to keep completed trials)")
INTERRUPTED = "interrupted (Ctrl-C); files are written atomically, so nothing was left half-written"

# name -> (module, attribute, one-line help shown by `repro --help` without importing the module)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "list": ("repro.cli.list_cmd", "list_cmd", "List every reproducible result and the results saved for it."),
    "show": ("repro.cli.show", "show", "Print one experiment: grid, settable keys, data modes, profiles."),
    "run": ("repro.cli.run", "run", "Run ID (or `all`): trials, CSVs, figures, paper vs ours."),
    "plot": ("repro.cli.plot", "plot", "Redraw the figures of ID from its saved results."),
    "report": ("repro.cli.report", "report", "Write DIR/REPORT.md: paper vs ours for every completed run."),
    "data": ("repro.cli.data", "data", "List, fetch, verify and locate the dataset files."),
    "audit": ("repro.cli.audit", "audit", "Empirical privacy audit: claimed vs audited epsilon."),
}


def _interrupted_message(ctx: click.Context, args: list[str]) -> str:
    """The Ctrl-C line: what was kept depends on the command and on ``--no-cache``."""
    if ctx.invoked_subcommand != "run":
        return INTERRUPTED
    return INTERRUPTED_RUN_NO_CACHE if "--no-cache" in args else INTERRUPTED_RUN


class LazyGroup(click.Group):
    """Click group whose subcommands live in :data:`COMMANDS` and are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = [name for name, (module, _, _) in COMMANDS.items() if module_exists(module)]
        return sorted(set(lazy) | set(self.commands))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands:
            return self.commands[name]
        if name not in COMMANDS or not module_exists(COMMANDS[name][0]):
            return None
        module, attr, _ = COMMANDS[name]
        command = getattr(importlib.import_module(module), attr)
        self.add_command(command, name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        ctx.meta["repro.subcommand_args"] = list(args)  # what the Ctrl-C message needs to know
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # the one-line help of COMMANDS, whether or not the command was imported: one text, always
        rows = [(name, COMMANDS[name][2] if name in COMMANDS else self.commands[name].get_short_help_str())
                for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def module_exists(name: str) -> bool:
    """Whether ``name`` is importable, found without importing it (its parent packages are imported)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class ReproGroup(LazyGroup):
    """Click group that turns ReproError into a clean message and exit code 1, Ctrl-C into 130."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, click.Abort) as exc:
            if isinstance(exc, click.Abort) and not isinstance(exc.__context__, KeyboardInterrupt):
                raise
            if (ctx.obj or {}).get("debug") or os.environ.get("REPRO_DEBUG") == "1":
                raise
            message = _interrupted_message(ctx, ctx.meta.get("repro.subcommand_args", []))
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
