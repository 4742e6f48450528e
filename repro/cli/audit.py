"""``repro audit``: the friendly front end of the ``audit`` experiment (issue 20 item 5, issue 21 item 3).

``repro audit [NAME...|all]`` runs the named mechanisms' audits (claimed instance and broken control)
through the runner, cache and seeds of ``repro run audit --set mechanism=...``, writes the results to
``DIR/audit/PROFILE[+set-…]/`` (``tables/audit.csv``, the figure ``audit.png``/``.pdf``) and prints
claimed / achievable / audited ε per mechanism. Exit status 1 only when an *accounted* or
*public-statistics* claim is violated; a beaten *nominal* claim is reported as "nominal: exceeded".
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import click

from repro.cli._common import results_root
from repro.errors import InvalidParameterError, suggest

_ALL = "all"


#: the groups `repro audit` takes (its help lists them): every mechanism named ``<group>-…``
GROUP_PREFIXES = ("ldp", "dp-fermi", "pfg")


def groups(mechanisms: Sequence[str]) -> dict[str, list[str]]:
    """The audit groups of :data:`GROUP_PREFIXES` over the experiment's ``mechanisms``."""
    return {g: [m for m in mechanisms if m.startswith(f"{g}-")] for g in GROUP_PREFIXES}


def resolve_names(names: tuple[str, ...], mechanisms: list[str],
                  groups: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The audited mechanisms (values of the experiment's ``mechanism`` axis) for ``names``: ``all`` (or
    nothing) is every one, a group name (``groups``: ``ldp``, ``dp-fermi``, ``pfg``) its members; duplicates
    are dropped, the experiment's order kept. An unknown name raises one line with the close matches."""
    groups = dict(groups or {})
    unknown = [n for n in names if n != _ALL and n not in mechanisms and n not in groups]
    if unknown:
        message = suggest(unknown[0], [*mechanisms, *groups, _ALL], what="mechanism", listed=len(mechanisms)).replace(
            "run `repro list` to see all", "`repro audit --help` lists all")
        raise InvalidParameterError(f"{message} (groups: {', '.join(groups)})")
    if not names or _ALL in names:
        return list(mechanisms)
    wanted = {m for n in names for m in groups.get(n, (n,))}
    return [m for m in mechanisms if m in wanted]


def _check_out(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("is empty; pass a folder, e.g. --out results", ctx=ctx, param=param)
    return Path(value)


@click.command("audit")
@click.argument("names", nargs=-1, metavar="[MECHANISM|GROUP...|all]")
@click.option("--profile", type=click.Choice(["smoke", "full"]), default="smoke", show_default=True,
              help="smoke: few runs per side (CI, about a minute); full: the table of docs/privacy-audit.md.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Base seed of the audit's SeedSequence (>= 0).")
@click.option("--out", callback=_check_out, default=None, metavar="DIR",
              help="Results folder (default: $REPRO_RESULTS_DIR or ./results); results in DIR/audit/PROFILE "
                   "(PROFILE+set-<hash> when only some mechanisms run).")
@click.option("--jobs", "-j", type=int, default=1, metavar="N", help="Parallel workers (-1: all cores).")
@click.option("--force", is_flag=True, help="Recompute every audit, ignoring the trial cache.")
def audit(names: tuple[str, ...], profile: str, seed: int, out: Path | None, jobs: int, force: bool) -> None:
    """Attack each mechanism on worst-case neighbours; 'violated' (exit 1) if an accounted claim is beaten.

    Mechanisms: laplace-step, dp-sgd, dp-fermi-strict, dp-fermi-strict-all, ldp-grr, ldp-binary-thm14,
    ldp-subset-selection, ldp-optimal-5.5.9, pfg-tree-mechanism, pfg-rank-noise, pfg-policy,
    cummings-alg1-expmech, fairnr-corrected-ftpl-step, tran-2021a, pf-ld, and the audits at shipped settings
    (dp-sgd-shipped, dp-fermi-strict-all-shipped, dp-fermi-strict-shipped, tran-2021a-shipped, pf-ld-shipped,
    jagielski-2019-shipped, fairnr-corrected-auditor-step, dp-fermi-cnn-strict-step); groups: ldp, dp-fermi, pfg.
    """
    from repro.engine.results import ResultBundle, check_output_dir, report_hook, write_results
    from repro.engine.runner import RunConfig, run_experiment
    from repro.engine.spec import get_experiment
    from repro.privacy.guarantee import fails_when_violated

    spec = get_experiment("audit")
    every = list(spec.grid["mechanism"])
    mechanisms = resolve_names(names, every, groups(every))
    config = RunConfig(profile=profile, jobs=jobs, out=out or results_root(), force=force, base_seed=seed,
                       overrides={} if mechanisms == every else {"mechanism": mechanisms})
    check_output_dir(config.out)  # before any audit runs: a bad --out fails now, in one line
    spec.expand_cells(profile, config.overrides)
    outcome = run_experiment(spec, config)
    command = "repro " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv else "repro audit"
    directory = write_results(outcome, command=command, dataset_sha256={})
    click.echo(report_hook(spec, "report_markdown")(ResultBundle.load(spec, directory)))
    click.echo(f"{outcome.n_trials} audits ({outcome.n_cached} cached) in {outcome.wall_seconds:.1f} s -> {directory}")
    table = outcome.tables["audit"]
    if (table["verdict"] == "CONTROL NOT FLAGGED").any():
        missed = ", ".join(table.loc[table["verdict"] == "CONTROL NOT FLAGGED", "mechanism"])
        why = ("smoke profile: too few runs for them; --profile full runs enough" if profile == "smoke"
               else "the audit could not fail there")
        click.echo(f"warning: broken control(s) not flagged: {missed} ({why})", err=True)
    violated = ((table["instance"] == "claimed") & (table["verdict"] == "violated")
                & table["label"].map(fails_when_violated))
    if violated.any():
        raise SystemExit(1)
