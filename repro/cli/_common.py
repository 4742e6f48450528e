"""Options and helpers shared by several commands."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import click

from repro.engine.spec import PROFILES, ExperimentSpec, get_experiment, load_all
from repro.errors import InvalidParameterError

__all__ = ["check_mirror", "out_option", "parse_set", "profile_option", "resolve_ids", "results_root", "variant_option"]


def results_root() -> Path:
    """``$REPRO_RESULTS_DIR``, or ``./results`` when it is unset or empty."""
    return Path(os.environ.get("REPRO_RESULTS_DIR") or "results")


def check_mirror() -> None:
    """Refuse, in one line, a ``$REPRO_DATA_MIRROR`` that names a file (it is read as a folder of data files)."""
    raw = os.environ.get("REPRO_DATA_MIRROR")
    if raw and Path(raw).expanduser().is_file():
        raise InvalidParameterError(f"REPRO_DATA_MIRROR={raw} is a file, not a folder; set it to the folder holding "
                                    "the data files, or unset it")


def _check_out(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """``--out ''`` would write into the current folder: refused, before anything runs."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("is empty; name a results folder, e.g. --out results")
    return Path(value)


out_option = click.option(
    "--out", "out", type=click.Path(file_okay=False), default=None, metavar="DIR",
    callback=_check_out,
    help="Results folder (default: $REPRO_RESULTS_DIR or ./results). The trial cache lives in DIR/.cache.",
)
profile_option = click.option(
    "--profile", type=click.Choice(PROFILES), default="smoke", show_default=True,
    help="smoke: small and fast (what CI runs); full: the paper's configuration; cpu: a reduced run, "
         "offered only by experiments whose full profile needs an accelerator.",
)
variant_option = click.option(
    "--variant", default=None, metavar="NAME",
    help="Variant of the method where paper and authors' code differ (e.g. paper|reference); "
         "default: the experiment's first variant. `repro list` shows each experiment's variants.",
)


def resolve_ids(ids: Sequence[str]) -> list[ExperimentSpec]:
    """Experiments named by ``ids`` (``all`` expands to every registered one)."""
    if not ids:
        raise click.UsageError("name at least one experiment id (or `all`); `repro list --ids` prints them")
    if "all" in ids:
        return list(load_all().values())
    return [get_experiment(i) for i in ids]


def parse_set(items: Sequence[str]) -> dict[str, list[str]]:
    """``key=v1,v2`` strings → {key: [text values]}, kept as text.

    Values are typed later by the experiment file, which declares each key's type
    (:meth:`repro.engine.spec.ExperimentSpec.coerce_overrides`): the command line does not guess,
    so ``epsilon=1`` and ``epsilon=1.0`` are one value. Raises on an empty item (``1,,3``) or a key
    given twice.
    """
    out: dict[str, list[str]] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        key = key.strip()
        shown = item if item.isprintable() else repr(item)   # one line, whatever was typed
        if not eq or not key:
            raise InvalidParameterError(f"--set expects KEY=VALUE[,VALUE...]; got {item!r}")
        if not key.isidentifier():
            raise InvalidParameterError(f"--set {key!r}: a key is a parameter name such as epsilon; `repro show ID` "
                                        "lists them")
        values = [v.strip() for v in raw.split(",")]
        if any(v == "" for v in values):
            raise InvalidParameterError(
                f"--set {shown}: an empty value; give KEY=V1,V2 with no empty item (e.g. --set {key}=1,3)")
        if key in out:
            raise InvalidParameterError(
                f"--set {key} is given twice; give it once with every value, e.g. --set {key}=V1,V2")
        out[key] = values
    return out
