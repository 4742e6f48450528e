"""Paper-vs-ours tables and ``results/REPORT.md``, built only from saved results."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from repro.engine.cache import atomic_write_text
from repro.engine.citations import resolve as resolve_citations
from repro.engine.results import (
    NOT_COMPARABLE,
    ResultBundle,
    honour_umask,
    not_comparable,
    report_hook,
    verdict_counts,
    verdict_line,
)
from repro.engine.spec import ExperimentSpec
from repro.errors import InvalidParameterError, NoResultsError

__all__ = ["NOT_COMPARABLE", "comparison_rows", "verdict_line", "find_bundles", "format_markdown", "format_text", "render_report",
           "smoke_verdicts_shown", "write_report", "verdict_counts"]

#: kinds whose smoke profile computes the same exact quantities as full (on coarser grids), so
#: their within/NO verdicts mean something at smoke too; every other kind hides them at smoke
EXACT_KINDS = ("theorem-check", "calculator")

_HEADER = ["method", "setting", "metric", "paper", "ours (mean ± std, n)", "diff", "tol", "within"]


def _num(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, (bool,)) or (isinstance(x, str)):
        return str(x)
    x = float(x)
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return f"{x:.3g}"
    return f"{x:.{digits}f}".rstrip("0").rstrip(".") if "." in f"{x:.{digits}f}" else f"{x:.{digits}f}"


def _within(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return "yes" if (v is True or str(v).lower() == "true") else "NO"


def smoke_verdicts_shown(spec: ExperimentSpec) -> bool:
    """True if a smoke run's within/NO verdicts are meaningful (exact checks), else they are hidden."""
    return spec.kind in EXACT_KINDS


def comparison_rows(summary: pd.DataFrame, *, only_paper: bool = False, verdicts: bool = True) -> list[list[str]]:
    """Rows of the paper-vs-ours table (strings), one per summary row.

    A row whose run does not meet its reference's conditions (``comparable`` false) shows the paper's value as
    context and the verdict "not comparable (<first differing condition>)". ``verdicts=False`` (results saved
    before the ``comparable`` column, smoke runs) leaves the ``within`` column as "n/a".
    """
    rows = []
    for r in summary.itertuples(index=False):
        has_paper = r.paper is not None and not (isinstance(r.paper, float) and math.isnan(r.paper))
        if only_paper and not has_paper:
            continue
        ours = f"{_num(r.mean)} ± {_num(r.std)} (n={int(r.n)})"
        context = str(getattr(r, "comparable", "")).lower() == "false"
        reason = getattr(r, "condition", None)
        verdict = (f"{NOT_COMPARABLE} ({reason})" if isinstance(reason, str) and reason else NOT_COMPARABLE) \
            if context else _within(r.within) if verdicts or not has_paper else "n/a"
        rows.append([str(r.method) if isinstance(r.method, str) else "", str(r.setting) if isinstance(r.setting, str) else "",
                     r.metric, _num(r.paper) if has_paper else "", ours,
                     _num(r.diff) if has_paper and not context else "",
                     _num(r.tolerance) if has_paper and not context else "", verdict])
    return rows


def format_markdown(rows: Sequence[Sequence[str]], header: Sequence[str] = _HEADER) -> str:
    esc = [[c.replace("|", "\\|") for c in row] for row in rows]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in esc]
    return "\n".join(lines)


def format_text(rows: Sequence[Sequence[str]], header: Sequence[str] = _HEADER) -> str:
    """Fixed-width table for the terminal."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*row) for row in rows]
    return "\n".join(lines)


def find_bundles(specs: Iterable[ExperimentSpec], out: Path) -> list[ResultBundle]:
    """Every completed run (any profile or variant) of ``specs`` under ``out``."""
    bundles = []
    for spec in specs:
        base = Path(out) / spec.id
        if not base.is_dir():
            continue
        for d in sorted(base.iterdir()):
            if d.is_dir() and not d.name.startswith(".") and (d / "run.json").exists():
                bundles.append(ResultBundle.load(spec, d))
    return bundles


def authors_blob_verdict(key: str, blob: str | None) -> str | None:
    """Words for a run.json dataset entry ``<name>-authors:git-blob`` (None for any other entry):
    whether the authors' file the run rebuilt had the authors' bytes."""
    suffix = "-authors:git-blob"
    if not key.endswith(suffix) or not blob:
        return None
    from repro.datasets.registry import authors_files

    spec = authors_files().get(key[: -len(suffix)])
    if spec is None:
        return None
    if not spec.canonical:
        return f"rebuilt git blob {blob[:12]} (INFERRED file, not verifiable)"
    if blob == spec.git_blob:
        return f"rebuilt git blob {blob[:12]} = the authors'"
    return f"rebuilt git blob {blob[:12]} DIFFERS from the authors' {spec.git_blob[:12]}"


def _verdicts_shown(bundle: ResultBundle) -> bool:
    """False only for results saved before the ``comparable`` column, at smoke (their verdicts were hidden);
    every newer summary says per row whether its paper value is comparable."""
    if "comparable" in bundle.summary:
        return True
    return bundle.profile != "smoke" or smoke_verdicts_shown(bundle.spec)


def _verdict_text(bundle: ResultBundle) -> str:
    ok, judged = verdict_counts(bundle.summary)
    line = verdict_line(bundle.summary, hidden=not _verdicts_shown(bundle))
    if not judged or not _verdicts_shown(bundle):
        return line
    own = report_hook(bundle.spec, "fidelity_verdict")
    text = own(bundle) if own is not None else None
    if text:  # the study's own reading (e.g. DP-FERMI: primary setting, released errata excluded)
        context, reason = not_comparable(bundle.summary)
        also = f"; {context} {NOT_COMPARABLE}: {reason}" if context else ""
        return f"{text} [all rows of the table: {ok} of {judged}{also}]"
    return line


def claims_lines(bundle: ResultBundle) -> list[str]:
    """The run's ``[[claims]]`` (repro/engine/claims.py) judged on its summary: one table row per claim with its
    verdict (holds, does not hold, not evaluable: the run did not compute what it speaks of), so no declared claim
    is missing from the report whatever the study's own text says."""
    if not bundle.spec.claims:
        return []
    from repro.engine.claims import evaluate_all

    verdicts = evaluate_all(bundle.spec.claims, bundle.summary, params=bundle.run.get("params", {}))
    words = {True: "holds", False: "does NOT hold", None: "not evaluable on this run"}
    rows = [[c.name, f"`{c.expr}`", words[verdicts[c.name]], resolve_citations(c.source)] for c in bundle.spec.claims]
    return [f"**Claims** (judged on this run's summary, profile `{bundle.profile}`):", "",
            format_markdown(rows, ["claim", "expression", "verdict", "source"]), ""]


def _count(x: Any) -> str:
    """An integer count with thousands separators ("" when missing)."""
    try:
        return f"{int(float(x)):,}" if math.isfinite(float(x)) else ""
    except (TypeError, ValueError):
        return ""


def _cell_text(x: Any) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)


#: the header of the one-run audit's table in the report and on the site
AUDIT_HEADER = ["method", "cell", "claimed ε (label)", "audited ε (lower bound)", "audited / claimed", "canaries",
                "correct / guesses", "relation"]


def one_run_audit(bundle: ResultBundle) -> tuple[list[list[str]], int]:
    """(rows of the audited cells, number of cells not audited) of the run's one-run audit
    (``tables/one_run_audit.csv``, written by ``repro run ID --audit``); ([], 0) for a run that was not audited.
    Columns a table lacks are shown empty. The claimed column names the attacked mechanism's own ε where it is not
    the cell's (a baseline's DP-SGD steps), the ε the ratio divides by."""
    table = bundle.table("one_run_audit", None)
    if table is None or table.empty or "status" not in table:
        return [], 0
    audited = table["status"].astype(str).str.startswith("audited")
    rows = []
    for r in table[audited].to_dict("records"):
        cell = r.get("setting") if isinstance(r.get("setting"), str) else f"data={r.get('data')}"
        conf = r.get("confidence")
        bound = _num(r.get("audited_epsilon"), 3) + (f" ({float(conf):.0%})" if isinstance(conf, float)
                                                     and math.isfinite(conf) else "")
        claimed = f"{_num(r.get('epsilon'), 4)} ({r.get('label')})"
        part = r.get("claimed_epsilon")      # the attacked mechanism's own ε where it is not the cell's (a share)
        if isinstance(part, float) and math.isfinite(part) and not math.isclose(part, float(r.get("epsilon")),
                                                                                 rel_tol=1e-3):
            claimed += f"; its DP-SGD steps {_num(part, 4)}"
        rows.append([str(r.get("method")), str(cell), claimed, bound,
                     _num(r.get("ratio"), 2), _count(r.get("canaries")),
                     f"{_count(r.get('correct'))} / {_count(r.get('guesses'))}", _cell_text(r.get("relation"))])
    return rows, int((~audited).sum())


def audit_lines(bundle: ResultBundle) -> list[str]:
    """The report's block of a run audited by ``repro run ID --audit`` (empty for a run that was not)."""
    rows, skipped = one_run_audit(bundle)
    if not rows and not skipped:
        return []
    lines = ["**One-run privacy audit** (`repro run --audit`: Steinke, Nasr & Jagielski 2023, white-box, one "
             "training run per cell at its own n, q, T and noise; the audited ε is a lower bound on the run's true "
             "ε beside the claimed one; docs/privacy-audit.md):", ""]
    if rows:
        lines += [format_markdown(rows, AUDIT_HEADER), ""]
    if skipped:
        lines += [f"{skipped} other privacy cell(s) not audited (reasons in `tables/one_run_audit.csv`).", ""]
    return lines


def _overrides_text(run: dict[str, Any]) -> str:
    """``--set k=v,…`` of a run, as typed (empty when it had none)."""
    overrides = run.get("overrides") or {}
    return " ".join(f"--set {k}={','.join(map(str, v))}" for k, v in sorted(overrides.items()))


def _with_text(bundle: ResultBundle) -> str:
    """``--with`` methods of a run: reference and code hash from ``run.json``; for a run saved before they were
    recorded, the folder's ``+with-<hash>`` suffix (empty without ``--with``)."""
    methods = bundle.run.get("with") or []
    if methods:
        return " ".join(f"--with {m.get('reference')} (sha256 {str(m.get('sha256'))[:12]})" for m in methods)
    name = Path(bundle.directory).name
    return f"--with (run {name.split('+with-', 1)[1]})" if "+with-" in name else ""


def departures(bundle: ResultBundle) -> list[str]:
    """What a run changed from its profile as the experiment file declares it, in words: another variant,
    number of seeds or base seed, ``--set`` overrides, ``--with`` methods (empty for the profile's own run)."""
    spec, run = bundle.spec, bundle.run
    parts = []
    if bundle.variant and bundle.variant != spec.default_variant:
        parts.append(f"variant {bundle.variant}")
    seeds = run.get("seeds")
    try:
        declared = spec.profile(bundle.profile).seeds if bundle.profile else None
    except InvalidParameterError:   # a profile the file no longer declares: say nothing rather than guess
        declared = None
    if seeds is not None and declared is not None and seeds != declared:
        parts.append(f"seeds {seeds}")
    if run.get("base_seed") not in (None, spec.base_seed):
        parts.append(f"base seed {run['base_seed']}")
    if _overrides_text(run):
        parts.append(_overrides_text(run))
    if _with_text(bundle):
        parts.append(_with_text(bundle))
    return parts


def run_label(bundle: ResultBundle) -> str:
    """What tells runs of one experiment apart: the profile, then what the run changed from it (e.g.
    "profile smoke, seeds 8" or "profile full, variant strict, --set data=clean")."""
    return ", ".join([f"profile {bundle.profile or '?'}", *departures(bundle)])


def section_key(bundle: ResultBundle) -> str:
    """One report section per run folder: ``<id>/<folder>`` (e.g. ``dpfermi-fig-2/full+set-1a2b…``)."""
    return f"{bundle.spec.id}/{Path(bundle.directory).name}"


def anchor(key: str) -> str:
    """The HTML anchor of a section (unique per run folder, stable across reports)."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in key.lower())


def render_bundle(bundle: ResultBundle, relative_to: Path) -> str:
    spec, run = bundle.spec, bundle.run
    key = section_key(bundle)
    lines = [f"{SECTION_MARK}{key} -->", f'<a id="{anchor(key)}"></a>', "",
             f"## {spec.id} ({run_label(bundle)}) — {spec.title}", ""]
    lines += [f"- **Source:** {spec.document}, {spec.section} (spec: `{resolve_citations(spec.spec)}`)",
              f"- **Reproduces:** {spec.reproduces}",
              f"- **Run:** profile `{run.get('profile')}`, variant `{run.get('variant')}`, "
              f"{run.get('seeds')} seed(s), {run.get('n_trials')} trials ({run.get('n_cached')} from cache), "
              f"wall time {run.get('wall_seconds')} s, summed trial time {_num(run.get('trial_seconds_total'), 2)} s",
              f"- **Verdict:** {_verdict_text(bundle)}",
              f"- **Command:** `{run.get('command')}`",
              f"- **Code:** repro {run.get('versions', {}).get('repro')}, git `{run.get('git_commit')}`",
              "- **Software:** " + ", ".join(f"{k} {v}" for k, v in run.get("versions", {}).items()),
              ]
    if run.get("datasets_sha256"):
        lines.append("- **Datasets (sha256 of the bytes read; the authors' rebuilt files by git blob):** " + ", ".join(
            f"`{k}` {authors_blob_verdict(k, v) or v[:12] + '…'}" if v else f"`{k}` not read"
            for k, v in run["datasets_sha256"].items()))
    else:
        lines.append("- **Datasets:** none")
    if spec.expected:
        lines.append(f"- **Expected:** {' '.join(spec.expected.split())}")
    lines.append("")
    rows = comparison_rows(bundle.summary, verdicts=_verdicts_shown(bundle))
    if rows:
        lines += [format_markdown(rows), ""]
    sources = bundle.summary.dropna(subset=["paper_source"]) if "paper_source" in bundle.summary else None
    if sources is not None and not sources.empty:
        lines.append("Paper values: " + "; ".join(sorted(set(sources["paper_source"].astype(str).map(
            resolve_citations)))) + ".")
        lines.append("")
    hook = report_hook(spec, "report_markdown")
    if hook is not None:
        lines += [hook(bundle).strip(), ""]
    else:   # a study's report text judges its claims itself (tests/core/test_claims_load.py checks it does)
        lines += claims_lines(bundle)
    lines += audit_lines(bundle)
    if spec.notes.strip():
        lines += ["**Notes.** " + resolve_citations(spec.rendered_notes().strip()), ""]
    figures = bundle.figures()
    if figures:
        lines.append("Figures: " + ", ".join(
            f"[{p.stem}]({os.path.relpath(p, relative_to)}) ([pdf]({os.path.relpath(p.with_suffix('.pdf'), relative_to)}))"
            for p in figures))
        lines += [""] + [f"![{p.stem}]({os.path.relpath(p, relative_to)})" for p in figures] + [""]
    return "\n".join(lines)


SECTION_MARK = "<!-- repro-report-section: "
_HEAD = ["# repro: reproduction report", "",
         "Generated by `repro report` from saved results (nothing is recomputed). "
         "Each table shows the paper's value beside ours (mean ± sample std over n seeds), "
         "their difference and whether it lies within the declared tolerance. One section per run: "
         "runs of one experiment with other profiles, variants or `--set` values are listed apart.", "",
         "| result | run | within tolerance | wall time (s) |", "|---|---|---|---|"]


def index_row(bundle: ResultBundle) -> str:
    ok, judged = verdict_counts(bundle.summary)
    context, _ = not_comparable(bundle.summary)
    cell = (f"{ok}/{judged}" if _verdicts_shown(bundle) else "not judged (smoke)") if judged else \
        NOT_COMPARABLE if context else "n/a"
    return (f"| [{bundle.spec.id}](#{anchor(section_key(bundle))}) | {run_label(bundle)} | {cell} | "
            f"{bundle.run.get('wall_seconds')} |")


def parse_report(text: str) -> dict[str, tuple[str, str]]:
    """Sections of an existing REPORT.md: ``{key: (index row, section text)}`` (see :func:`render_report`)."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| [") and "](#" in line:
            rows[line.split("](#", 1)[1].split(")", 1)[0]] = line
    sections = {}
    for chunk in text.split(SECTION_MARK)[1:]:
        key = chunk.split(" -->", 1)[0]
        row = rows.get(anchor(key))
        if row is not None:
            sections[key] = (row, (SECTION_MARK + chunk).rstrip() + "\n")
    return sections


def render_report(bundles: Sequence[ResultBundle], out: Path,
                  keep: dict[str, tuple[str, str]] | None = None, dashboard: str = "") -> str:
    """REPORT.md for ``bundles``, plus the sections in ``keep`` (``{key: (index row, text)}``) of runs
    not among them; sections are ordered by experiment id, then run folder. ``dashboard`` (the fidelity
    dashboard, :mod:`repro.engine.fidelity`) opens the report, after its title."""
    sections = dict(keep or {})
    for b in bundles:
        sections[section_key(b)] = (index_row(b), render_bundle(b, out))
    order = sorted(sections)
    head = [*_HEAD[:2], dashboard.rstrip(), "", *_HEAD[2:]] if dashboard else list(_HEAD)
    lines = [*head, *(sections[k][0] for k in order), ""]
    for key in order:
        lines.append(sections[key][1])
    return "\n".join(lines)


def write_report(specs: Sequence[ExperimentSpec], out: Path, only: bool = False,
                 bundles: Sequence[ResultBundle] | None = None) -> Path:
    """Write ``<out>/REPORT.md`` for every completed run of ``specs``; return its path.

    ``only=True`` (``repro report ID…``) updates the sections of ``specs`` in an existing report and
    keeps every other section as it was; otherwise the report is written anew. ``bundles`` (``repro report ID
    --seeds 8``: one addressed run) updates only those runs' sections and keeps every other one.
    """
    path = Path(out) / "REPORT.md"
    keep: dict[str, tuple[str, str]] = {}
    if bundles is not None:
        keys = {section_key(b) for b in bundles}
        if path.exists():
            keep = {k: v for k, v in parse_report(path.read_text(encoding="utf-8")).items() if k not in keys}
    else:
        bundles = find_bundles(specs, out)
        if not bundles:
            ids = [s.id for s in specs]
            named = " ".join(ids) if len(ids) <= 3 else "ID"
            raise NoResultsError(f"no completed results under {out} for {', '.join(ids)}; run `repro run {named}` first")
        if only and path.exists():  # `repro report ID`: replace ID's sections, keep the others as they were
            ids = {s.id for s in specs}
            keep = {k: v for k, v in parse_report(path.read_text(encoding="utf-8")).items()
                    if k.split("/", 1)[0] not in ids}
    from repro.engine.fidelity import render_dashboard
    from repro.engine.spec import load_all

    text = render_report(bundles, Path(out), keep, dashboard=render_dashboard(load_all(), Path(out)))
    atomic_write_text(path, resolve_citations(text))   # the study texts' spec citations too
    honour_umask(path)
    return path
