"""Options and helpers shared by several commands."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from repro.engine.spec import PROFILES, ExperimentSpec, get_experiment, load_all
from repro.errors import InvalidParameterError

__all__ = ["out_option", "parse_set", "profile_option", "resolve_ids", "results_root", "variant_option"]


def results_root() -> Path:
    """``$REPRO_RESULTS_DIR``, or ``./results`` when it is unset or empty."""
    return Path(os.environ.get("REPRO_RESULTS_DIR") or "results")


out_option = click.option(
    "--out", "out", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
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


def _parse_value(text: str) -> Any:
    low = text.strip().lower()
    if low in {"true", "false"}:
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip()


def parse_set(items: Sequence[str]) -> dict[str, list[Any]]:
    """``key=v1,v2`` strings → {key: [values]} (numbers parsed; others kept as strings)."""
    out: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise InvalidParameterError(f"--set expects KEY=VALUE[,VALUE...]; got {item!r}")
        key, _, raw = item.partition("=")
        values = [_parse_value(v) for v in raw.split(",") if v.strip() != ""]
        if not key.strip() or not values:
            raise InvalidParameterError(f"--set expects KEY=VALUE[,VALUE...]; got {item!r}")
        out[key.strip()] = values
    return out
