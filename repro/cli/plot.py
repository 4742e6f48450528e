"""``repro plot``: redraw figures from saved results (never recomputes).

A run is addressed by the options of ``repro run`` that name its folder (``--profile``, ``--variant``,
``--set``, ``--seeds``, ``--base-seed``, ``--with``); :func:`address_run` is shared with ``repro report``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from repro.cli._common import out_option, parse_set, profile_option, resolve_ids, results_root, variant_option
from repro.engine.results import ResultBundle, draw_figures, run_dir
from repro.engine.runner import RunConfig, drop_inert_overrides
from repro.engine.spec import ExperimentSpec
from repro.errors import InvalidParameterError, NoResultsError

__all__ = ["RunAddress", "address_run", "run_address_options"]


@dataclass(frozen=True)
class RunAddress:
    """The options of ``repro run`` that name a run's folder, as typed on the command line."""

    profile: str = "smoke"
    variant: str | None = None
    set_: tuple[str, ...] = ()
    seeds: int | None = None
    base_seed: int | None = None
    with_: tuple[str, ...] = ()

    def given(self) -> bool:
        """True when any option other than the default profile was given."""
        return self != RunAddress()

    def flags(self, out: Path | None = None) -> list[str]:
        """The ``repro run`` flags that make this run (for the one-line error that names the command)."""
        return [*([f"--profile {self.profile}"] if self.profile != "smoke" else []),
                *([f"--variant {self.variant}"] if self.variant else []),
                *(f"--set {shlex.quote(item)}" for item in self.set_),
                *([f"--seeds {self.seeds}"] if self.seeds is not None else []),
                *([f"--base-seed {self.base_seed}"] if self.base_seed is not None else []),
                *(f"--with {shlex.quote(ref)}" for ref in self.with_),
                *([f"--out {shlex.quote(str(out))}"] if out else [])]


def run_address_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--profile --variant --set --seeds --base-seed --with``, as ``repro run`` takes them."""
    options = [
        profile_option,
        variant_option,
        click.option("--set", "set_", multiple=True, metavar="KEY=V[,V...]",
                     help="The --set overrides the run was made with (they select its results folder)."),
        click.option("--seeds", type=int, default=None, metavar="N", help="The --seeds the run was made with."),
        click.option("--base-seed", type=int, default=None, metavar="INT",
                     help="The --base-seed the run was made with."),
        click.option("--with", "with_", multiple=True, metavar="FILE.py|MOD:CLS",
                     help="The --with methods the run was made with (repeatable)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def address_run(spec: ExperimentSpec, address: RunAddress, root: Path) -> Path:
    """The folder ``repro run`` wrote for ``spec`` under ``address`` (whether or not it exists).

    Refused in one line, as ``repro run`` refuses it: an unknown variant or ``--set`` key, a ``--with`` method
    the result does not take, ``--seeds`` < 1.
    """
    from repro.cli.run import _with_user_methods  # the same checks and the same cells as the run made

    chosen = spec.check_variant(address.variant)
    if address.base_seed is not None and address.base_seed < 0:
        raise InvalidParameterError(f"--base-seed must be >= 0 (it seeds numpy's SeedSequence); got {address.base_seed}")
    overrides = parse_set(address.set_)
    settable = spec.settable_keys(address.profile)
    for key in overrides:   # as `repro run` checks them: an unknown key names no run
        if key not in settable:
            raise InvalidParameterError(f"--set {key}: {spec.id!r} has no parameter {key!r}; settable: "
                                        f"{', '.join(sorted(settable))}")
    (spec,) = _with_user_methods([spec], address.with_)
    typed = spec.coerce_overrides(overrides)
    config = RunConfig(profile=address.profile, variant=chosen, overrides=typed, seeds=address.seeds,
                       base_seed=address.base_seed, out=root)
    # a key without effect made no folder of its own (repro run dropped it, with a warning): find the run's
    config = drop_inert_overrides(spec, config)
    return run_dir(spec, config, chosen)


def load_addressed(spec: ExperimentSpec, address: RunAddress, root: Path, out: Path | None) -> ResultBundle:
    """The saved run of ``spec`` under ``address``; :class:`NoResultsError` naming the command that makes it."""
    directory = address_run(spec, address, root)
    if not (directory / "run.json").exists():   # name the run that makes this folder, flags included
        raise NoResultsError(f"no completed results for {spec.id!r} in {directory}; run "
                             f"`{' '.join(['repro run', spec.id, *address.flags(out)])}` first")
    return ResultBundle.load(spec, directory)


@click.command("plot")
@click.argument("ids", nargs=-1, metavar="ID...")
@run_address_options
@out_option
def plot(ids: tuple[str, ...], profile: str, variant: str | None, set_: tuple[str, ...], seeds: int | None,
         base_seed: int | None, with_: tuple[str, ...], out: Path | None) -> None:
    """Redraw the figures of ID from its saved results (PNG and PDF beside the CSVs).

    The run is named by the options it was made with: `repro plot dpfermi-fig-2 --seeds 8` redraws the run of
    `repro run dpfermi-fig-2 --seeds 8`.
    """
    root = out or results_root()
    address = RunAddress(profile, variant, set_, seeds, base_seed, with_)
    for spec in resolve_ids(ids):
        bundle = load_addressed(spec, address, root, out)
        paths = draw_figures(bundle, bundle.directory)
        if not paths:
            click.echo(f"{spec.id}: this result has no figures")
        for p in paths:
            click.echo(str(p))
