"""``repro show ID``: one experiment as the loader sees it, after ``extends`` (issue #20 item 6, #24).

Prints what a user needs to run or change a result without opening its files: source, grid axes and
cells per profile, settable keys with their domains and defaults, data modes, variants, profiles with
seeds and estimated times, datasets (raw files and, for the authors' data mode, the authors' files),
metrics and the paper's values. ``--toml`` prints the merged file instead.
"""

from __future__ import annotations

import json
import textwrap
from fractions import Fraction
from typing import Any

import click

from repro.engine.citations import resolve as resolve_citations
from repro.engine.cost import profile_estimate
from repro.engine.extends import extends_chain, merged_raw
from repro.engine.references import SEEDS, default_conditions
from repro.engine.spec import ExperimentSpec, get_experiment, study_of

WIDTH = 100


def _fmt(value: Any) -> str:
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_fmt(v)}" for k, v in value.items()) + "}"
    return repr(value) if isinstance(value, float) else str(value)


def _domain(spec: ExperimentSpec, key: str) -> str:
    """``key``'s domain in words: its ``[domains]`` entry, else what the file's values imply (never "any")."""
    dom = spec.domains.get(key)
    if dom is None:
        declared = spec.declared_values(key)
        if declared and all(isinstance(d, str) for d in declared):   # the declared names are the domain
            return "one of " + ", ".join(_fmt(d) for d in dict.fromkeys(declared))
        kind = spec.param_type(key)
        words = {"bool": "true or false", "int": "an integer", "float": "a finite number"}
        if kind in words:
            return words[kind]
        return "a list, as in the file" if spec.is_list_param(key) else "as declared in the file"
    if dom == "path":
        return "a path (checked when the run uses it)"
    if isinstance(dom, list):
        return "one of " + ", ".join(_fmt(d) for d in dom)
    if "values_of" in dom:
        names = ", ".join(dict.fromkeys(str(v) for v in spec.declared_values(dom["values_of"])))
        return f"one of the result's {dom['values_of']}s: {names}"
    parts = ["rational"] if dom.get("rational") else ["integer"] if dom.get("integer") else []
    if dom.get("unit_fraction"):
        parts.append("1/k,")
    if "multiple_of" in dom:
        parts.append(f"multiple of {dom['multiple_of']},")
    def bound(v: Any) -> str:
        return str(Fraction(v).limit_denominator(10**6)) if dom.get("rational") else _fmt(v)

    lo = f">= {bound(dom['min'])}" if "min" in dom else f"> {bound(dom['gt'])}" if "gt" in dom else ""
    hi = f"<= {bound(dom['max'])}" if "max" in dom else f"< {bound(dom['lt'])}" if "lt" in dom else ""
    text = " ".join([*parts, " and ".join(b for b in (lo, hi) if b)]).strip() or "a number"
    if spec.is_list_param(key):
        text = f"a list of numbers {text}"
    also = [w for w in dom.get("also", ()) if w != ""]
    return text + (f", or {', '.join(_fmt(w) for w in also)}" if also else "")


def _line(text: str, indent: int = 2) -> None:
    click.echo(textwrap.fill(text, WIDTH, initial_indent=" " * indent, subsequent_indent=" " * (indent + 4),
                             break_on_hyphens=False))


def _seconds(s: float | None) -> str:
    if s is None:
        return "?"
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h"


def _grid(spec: ExperimentSpec, profile: str) -> dict[str, list[Any]]:
    grid = dict(spec.grid or {})
    grid.update(spec.profiles[profile].grid or {})
    return grid


def _datasets(spec: ExperimentSpec, modes: list[Any]) -> None:
    click.echo("datasets (raw files; `repro data verify` checks them):")
    _line(", ".join(spec.datasets) or "none")
    if "authors" not in modes:
        return
    from repro.datasets.registry import authors_files

    files = authors_files()
    names = {v for v in spec.declared_values("dataset") if isinstance(v, str)}
    for name in sorted(names & set(files)):
        f = files[name]
        state = ("rebuilt byte-identical to the authors' git blob when verified" if f.canonical
                 else "an INFERRED reconstruction (no authors' bytes to match)")
        _line(f"data=authors: {f.filename} ({name}-authors), rebuilt from {', '.join(f.sources)}; git blob "
              f"{f.git_blob[:12]}; {state}; verification state: run `repro data verify`")


def show_spec(spec: ExperimentSpec) -> None:
    """Print ``spec`` readably at :data:`WIDTH` columns."""
    click.echo(click.style(spec.id, bold=True) + f"  [{spec.kind}]" +
               (f"  (also: {', '.join(spec.aliases)})" if spec.aliases else ""))
    _line(spec.title, 0)
    for label, value in (("source", f"{spec.document} — {spec.section}"), ("spec", resolve_citations(spec.spec)),
                         ("reproduces", spec.reproduces), ("computed by", spec.trial), ("file", str(spec.path))):
        _line(f"{label}: {value}")
    if spec.path is not None:
        for base in extends_chain(spec.path):
            _line(f"extends: {base.relative_to(spec.path.parent.resolve()) if base.is_relative_to(spec.path.parent.resolve()) else base}")

    full = "full" if "full" in spec.profiles else next(iter(spec.profiles))
    click.echo("grid (axes; a run covers every cell x seeds):")
    for name in spec.profiles:
        cells = spec.expand_cells(name)
        axes = "; ".join(f"{k} = {_fmt(v)}" for k, v in _grid(spec, name).items())
        listed = spec.profiles[name].cells if spec.profiles[name].cells is not None else spec.cells
        extra = f"{len(listed)} listed cells" if listed is not None else ""
        shape = " x ".join(part for part in (extra, axes) if part)
        _line(f"{name}: {len(cells)} cells" + (f" ({shape})" if shape else ""))
    listed = spec.profiles[full].cells if spec.profiles[full].cells is not None else spec.cells
    if listed is not None:
        click.echo(f"listed cells ({full}):")
        for cell in listed:
            _line(", ".join(f"{k} = {_fmt(v)}" for k, v in cell.items()), 4)

    grid = _grid(spec, full)
    fixed = spec.fixed_params(full)
    click.echo(f"settable keys (--set KEY=V[,V...]; default = the {full} profile's value):")
    keys = [*grid, *(k for c in (listed or ()) for k in c if k not in grid), *fixed]
    for key in dict.fromkeys(keys):
        default = _fmt(grid[key]) if key in grid else _fmt(fixed[key]) if key in fixed else "per cell"
        _line(f"{key} = {default}    domain: {_domain(spec, key)}")

    modes = list(grid.get("data", []))
    rules = spec.domains.get("rules", [])
    if rules:
        click.echo("rules between keys ([domains] rules; checked before any trial):")
        for rule in rules:
            _line(rule)
    click.echo("data modes (--set data=...): " + (", ".join(map(str, modes)) if modes else "none (one data source)"))
    click.echo(f"variants (--variant; default {spec.default_variant}):")
    for v in spec.variants:
        _line(f"{v}: {spec.variant_help.get(v, '')}".rstrip(": "))
    click.echo("profiles (--profile):")
    for name, p in spec.profiles.items():
        over = ", ".join(f"{k} = {_fmt(v)}" for k, v in p.params.items())
        _line(f"{name}: {p.seeds} seeds, est. {_seconds(p.est_seconds)}" + (f"; sets {over}" if over else "")
              + f"; {profile_estimate(spec, name).line()}")
    _datasets(spec, modes)
    click.echo(f"study ({spec.trial}, declared by its STUDY):")
    for line in study_of(spec).describe():
        _line(line)
    if spec.scopes:
        click.echo("random-stream scopes ([scopes]; shared by every experiment declaring the same family):")
        for name, scope in spec.scopes.items():
            _line(f"{name}: family {scope.family}, seeded by " + (f"the parameter {scope.seed}" if scope.seed
                                                                   else "the base seed"))
    click.echo("metrics:")
    for m in spec.metrics:
        tol = f" (tolerance {_fmt(m.tolerance)})" if m.tolerance is not None else ""
        _line(f"{m.name}{tol}: {m.description}")
    click.echo(f"the paper's values ({len(spec.references)}):" if spec.references else "the paper's values: none")
    for r in spec.references:
        where = ", ".join([*([r.method] if r.method else []), *(f"{k} = {_fmt(v)}" for k, v in r.setting.items())])
        tol = r.tolerance if r.tolerance is not None else spec.metric(r.metric).tolerance
        _line(f"{r.metric} = {_fmt(r.value)}" + (f" ± {_fmt(tol)}" if tol is not None else "") +
              (f"  [{where}]" if where else "") + f"  — {resolve_citations(r.source)}"
              + (f"  (own conditions: {_conditions(r.conditions)})" if r.conditions else ""))
    if spec.references:
        _reference_conditions(spec)
    click.echo(f"claims ({len(spec.claims)}; judged on the summary by `repro report`):" if spec.claims
               else "claims: none")
    for c in spec.claims:
        limit = f"  [threshold {_fmt(list(c.threshold) if isinstance(c.threshold, tuple) else c.threshold)}]" \
            if c.threshold is not None else ""
        _line(f"{c.name}: {c.expr}{limit}" + (f" — {c.description}" if c.description else "")
              + f"  — {resolve_citations(c.source)}")
    if spec.expected:
        _line("expected: " + " ".join(spec.expected.split()), 0)


def _conditions(conds: Any) -> str:
    """``key = v`` (one allowed value), ``key ∈ {a, b}`` (several), ``seeds ≥ n``; joined by ``; ``."""
    def one(key: str, allowed: tuple[Any, ...]) -> str:
        if key == SEEDS:
            return f"seeds ≥ {_fmt(allowed[0])}"
        if len(allowed) == 1:
            return f"{key} = {_fmt(allowed[0])}"
        return f"{key} ∈ {{{', '.join(_fmt(a) for a in allowed)}}}"
    return "; ".join(one(k, tuple(v)) for k, v in conds.items()) or "none"


def _reference_conditions(spec: ExperimentSpec) -> None:
    """The conditions the paper's values hold under (:mod:`repro.engine.references`): the judged profiles, the
    default (the ``full`` profile's values), the file's overrides and the inert keys with their reasons."""
    defaults = spec.reference_defaults
    click.echo("conditions of the paper's values (a run that misses one is `not comparable`, naming it):")
    _line(f"judged profiles: {', '.join(defaults.profiles)}")
    conds = default_conditions(spec)
    _line("default (the full profile's values): "
          + _conditions({k: v for k, v in conds.items() if k not in defaults.conditions}))
    if defaults.conditions:
        _line(f"overrides ([reference] conditions): {_conditions(defaults.conditions)}")
    if defaults.inert:
        _line("inert keys (never a condition):")
        for key, why in defaults.inert.items():
            _line(f"{key}: {why}", 4)


@click.command("show")
@click.argument("experiment_id", metavar="ID")
@click.option("--json", "--toml", "as_toml", is_flag=True,
              help="Print the merged experiment file (after `extends`) as JSON (same keys and values as TOML).")
@click.option("--notes", is_flag=True, help="Also print the experiment's notes.")
def show(experiment_id: str, as_toml: bool, notes: bool) -> None:
    """Print experiment ID as merged from its file and the base files it extends: grid, settable keys
    with domains and defaults, data modes, variants, profiles, datasets, metrics, the paper's values
    and the conditions they hold under."""
    spec = get_experiment(experiment_id)
    if as_toml:
        assert spec.path is not None
        click.echo(json.dumps(merged_raw(spec.path), indent=2, ensure_ascii=False))
        return
    show_spec(spec)
    if notes and spec.notes:
        click.echo("notes:")
        click.echo(textwrap.indent(resolve_citations(spec.rendered_notes().strip()), "  "))
