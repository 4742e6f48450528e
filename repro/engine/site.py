"""The results site (``repro report --html``): static pages built from saved results only.

``index.html`` is the fidelity dashboard (:mod:`repro.engine.fidelity`) as a table with status badges and
filters by document and status; ``<id>.html`` is one page per result: the declared status and the reason for a
miss, then every saved run of the result (the profile's own run first, then runs with another variant,
``--set``, ``--seeds``, ``--base-seed`` or ``--with``, each labelled by what it changed), with the paper's values
beside ours, the figures, the study's own reading (errata), the privacy labels (with the audited ε of a run made
with ``repro run ID --audit``) and the provenance. Everything
is in the files: no server, no CDN, no network; figures and CSVs are copied beside the pages (``files/``). A
result without a saved run gets its page too, saying "not run".

The summary is read defensively: columns a run's ``summary.csv`` lacks (``comparable``, ``dataset``, ``paper``…)
are treated as absent, never guessed.
"""

from __future__ import annotations

import html
import json
import math
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from repro.engine.citations import resolve as resolve_citations
from repro.engine.fidelity import FULL_PROFILE, fidelity_rows
from repro.engine.folders import replaced_folder
from repro.engine.report import (
    AUDIT_HEADER,
    _num,
    _verdict_text,
    _verdicts_shown,
    anchor,
    authors_blob_verdict,
    departures,
    find_bundles,
    one_run_audit,
    run_label,
    section_key,
)
from repro.engine.results import ResultBundle, report_hook
from repro.engine.spec import ExperimentSpec
from repro.errors import InvalidParameterError

__all__ = ["MARKER", "markdown_html", "result_page", "index_page", "write_site"]

#: a file in every site folder, so a rebuild replaces only a folder this module wrote
MARKER = ".repro-site"
#: rows of a summary shown on a page before the rest folds away (the whole CSV is linked)
SHOWN_ROWS = 300
#: a run's table longer than this is folded under its figures (a reader opens it)
FOLDED_ROWS = 40

_BADGE = {"reproduced": "ok", "checked": "ok", "partial": "warn", "not reproduced": "bad",
          "hardware-limited": "muted", "not run": "muted"}

CSS = """
:root { --ink:#1d232b; --muted:#5b6470; --line:#d9dee4; --bg:#ffffff; --soft:#f4f6f8; --link:#0b57a4;
        --ok:#1a7f37; --okbg:#dcf3e3; --warn:#8a5a00; --warnbg:#fff1cc; --bad:#b42318; --badbg:#fde4e1;
        --info:#1f4f8b; --infobg:#e1ecfa; --mutedbg:#eceff2; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       background: var(--bg); }
main { max-width: 1320px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 1.7rem; margin: 0 0 4px; } h2 { font-size: 1.3rem; margin: 32px 0 8px; }
h3 { font-size: 1.08rem; margin: 22px 0 6px; }
a { color: var(--link); } code { font: 0.88em ui-monospace, Menlo, Consolas, monospace; background: var(--soft);
      padding: 1px 4px; border-radius: 3px; }
p.lede { color: var(--muted); margin: 4px 0 18px; max-width: 70em; }
nav.crumbs { font-size: .92rem; margin-bottom: 12px; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; margin: 8px 0 12px; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); position: sticky; top: 0; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:hover td { background: #fafbfc; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: .82rem; font-weight: 600;
         white-space: nowrap; background: var(--infobg); color: var(--info); }
.qualifier { font-size: .8rem; color: var(--warn); font-weight: 600; }
.badge.ok { background: var(--okbg); color: var(--ok); } .badge.warn { background: var(--warnbg); color: var(--warn); }
.badge.bad { background: var(--badbg); color: var(--bad); } .badge.muted { background: var(--mutedbg); color: var(--muted); }
.filters { display: flex; gap: 18px; flex-wrap: wrap; align-items: center; margin: 12px 0; padding: 10px 12px;
           background: var(--soft); border-radius: 6px; }
.filters label { font-weight: 600; font-size: .92rem; } select { font-size: .95rem; padding: 3px 6px; margin-left: 6px; }
#shown { color: var(--muted); font-size: .92rem; }
.cmd { font-size: .8rem; overflow-wrap: anywhere; }
.title { display: block; color: var(--muted); font-size: .86rem; line-height: 1.35; margin-top: 2px; }
.small { display: block; color: var(--muted); font-size: .84rem; margin-top: 3px; }
#dashboard { table-layout: fixed; } #dashboard td { font-size: .9rem; }
.notrun-cell { color: var(--muted); font-style: italic; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 8px 0; font-size: .94rem; }
dl.kv dt { font-weight: 600; color: var(--muted); } dl.kv dd { margin: 0; overflow-wrap: anywhere; }
section.run { border-top: 2px solid var(--line); margin-top: 28px; }
.verdict { font-size: 1.02rem; margin: 8px 0; padding: 8px 12px; background: var(--soft); border-left: 4px solid var(--info); }
figure { margin: 12px 0 20px; } figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: .9rem; }
.v-within { color: var(--ok); font-weight: 600; } .v-no { color: var(--bad); font-weight: 600; }
.v-nc, .v-na { color: var(--muted); }
details summary { cursor: pointer; color: var(--link); margin: 6px 0; }
.notrun { padding: 14px; background: var(--mutedbg); border-radius: 6px; }
.study { overflow-x: auto; }
"""

JS = """
(function () {
  var doc = document.getElementById('f-document'), st = document.getElementById('f-status');
  var rows = Array.prototype.slice.call(document.querySelectorAll('#dashboard tbody tr'));
  function apply() {
    var d = doc.value, s = st.value, n = 0;
    rows.forEach(function (r) {
      var show = (!d || r.dataset.document === d) && (!s || r.dataset.status === s);
      r.hidden = !show; if (show) { n += 1; }
    });
    document.getElementById('shown').textContent = n + ' of ' + rows.length + ' results shown';
  }
  doc.addEventListener('change', apply); st.addEventListener('change', apply); apply();
})();
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _inline(text: str) -> str:
    """Escaped text with Markdown's inline `code`, **bold**, *emphasis* and [links](url)."""
    codes: list[str] = []

    def stash(match: re.Match[str]) -> str:
        codes.append(f"<code>{_e(match.group(1))}</code>")
        return f"\x00{len(codes) - 1}\x00"

    s = _e(re.sub(r"`([^`]*)`", stash, text))
    s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
    s = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", s)
    s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>', s)
    return re.sub(r"\x00(\d+)\x00", lambda m: codes[int(m.group(1))], s)


def markdown_html(text: str) -> str:
    """The Markdown the studies write (paragraphs, ``#`` headings, ``-`` lists, pipe tables, fenced code) as
    HTML; anything else stays text. Small on purpose: the site needs no Markdown package."""
    blocks, lines, i = [], text.strip().splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            blocks.append("<pre><code>" + _e("\n".join(lines[i + 1:j])) + "</code></pre>")
            i = j + 1
        elif re.match(r"#{1,6} ", line):
            level = min(6, len(line) - len(line.lstrip("#")) + 2)
            blocks.append(f"<h{level}>{_inline(line.lstrip('#').strip())}</h{level}>")
            i += 1
        elif line.lstrip().startswith("|"):
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", lines[i].strip().strip("|"))]
                if not all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                    rows.append(cells)
                i += 1
            head, *body = rows or [[]]
            blocks.append("<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr></thead><tbody>"
                          + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
                          + "</tbody></table>")
        elif re.match(r"\s*[-*] ", line):
            items = []
            while i < len(lines) and lines[i].strip() and (re.match(r"\s*[-*] ", lines[i]) or lines[i].startswith("  ")):
                if re.match(r"\s*[-*] ", lines[i]):
                    items.append(re.sub(r"^\s*[-*] ", "", lines[i]))
                else:
                    items[-1] += " " + lines[i].strip()
                i += 1
            blocks.append("<ul>" + "".join(f"<li>{_inline(t)}</li>" for t in items) + "</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not re.match(r"(#{1,6} |```|\s*\||\s*[-*] )", lines[i]):
                para.append(lines[i].strip())
                i += 1
            blocks.append(f"<p>{_inline(' '.join(para))}</p>")
    return "\n".join(blocks)


def _page(title: str, body: str, script: str = "") -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body><main>\n{body}\n</main>"
            + (f"<script>{script}</script>" if script else "") + "</body></html>\n")


def _badge(status: str) -> str:
    """The status word as a badge; a qualifier such as "(check: …)" as a warning line under it (a badge does not
    wrap, and a long one ran over the next column)."""
    word, _, rest = status.partition(" (")
    badge = f'<span class="badge {_BADGE.get(word, "")}">{_e(word)}</span>'
    return badge + (f'<div class="qualifier">({_e(rest)}</div>' if rest else "")


def _href(path: str) -> str:
    return quote(path, safe="/#")


def page_name(eid: str) -> str:
    """The file of a result's page (ids are file-name safe: ``[a-z0-9.-]``)."""
    return f"{eid}.html"


def _command(spec: ExperimentSpec) -> str:
    """The command that reproduces a result as the dashboard judges it (its full profile; ``cpu`` where the
    full profile needs an accelerator, the profile ``repro run all`` runs without one)."""
    profile = "cpu" if "cpu" in spec.profiles else FULL_PROFILE
    return f"repro run {spec.id} --profile {profile} --jobs 2"


def index_page(rows: Sequence[Mapping[str, str]], specs: Mapping[str, ExperimentSpec], source: str,
               saved: Mapping[str, int] | None = None) -> str:
    """The dashboard: one row per result, filterable by document and status; ``saved`` ({id: number of saved
    runs of any profile}) adds a line to each row that has some."""
    documents = sorted({r["document"] for r in rows})
    statuses = sorted({r["status"] for r in rows})
    opts = lambda values: "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in values)  # noqa: E731
    body = ["<h1>Reproduction results</h1>",
            '<p class="lede">Every table, figure and checkable theorem of the five documents, with the status we '
            "declare, what the saved full-profile run measured and why a result is not (fully) reproduced. Built "
            f"by <code>repro report --html</code> from the saved results in <code>{_e(source)}</code>; nothing was "
            "recomputed. \u201cnot run\u201d: no full-profile run is saved there. Click a result for the paper's "
            "values beside ours, its figures and its provenance.</p>",
            '<div class="filters"><label>Document<select id="f-document"><option value="">all documents</option>'
            f"{opts(documents)}</select></label><label>Status<select id=\"f-status\"><option value=\"\">all statuses"
            f"</option>{opts(statuses)}</select></label><span id=\"shown\"></span></div>",
            '<table id="dashboard"><colgroup><col style="width:12%"><col style="width:24%"><col style="width:15%">'
            '<col style="width:15%"><col style="width:20%"><col style="width:14%"></colgroup>'
            '<thead><tr><th>Document</th><th>Result</th><th>Status</th>'
            "<th>Full-profile run</th><th>Why not (fully) reproduced</th><th>Reproduce</th></tr></thead><tbody>"]
    for r in sorted(rows, key=lambda r: (r["document"], r["id"])):
        spec = specs[r["id"]]
        detail = f'<span class="small">{_e(r["detail"])}</span>' if r.get("detail") else ""
        measured = (f'<span class="notrun-cell">{_e(r["measured"])}</span>' if r["measured"] == "not run"
                    else _e(r["measured"]))
        n_saved = (saved or {}).get(r["id"], 0)
        if n_saved:
            measured += (f'<span class="small"><a href="{_href(page_name(r["id"]))}">{n_saved} saved '
                         f'run{"s" if n_saved > 1 else ""}</a></span>')
        body.append(
            f'<tr data-document="{_e(r["document"])}" data-status="{_e(r["status"])}">'
            f'<td>{_e(r["document"])}</td>'
            f'<td><a href="{_href(page_name(r["id"]))}"><strong>{_e(r["id"])}</strong></a>'
            f'<span class="title">{_e(spec.title)}</span></td>'
            f'<td>{_badge(r["status"])}{detail}</td><td>{measured}</td><td>{_inline(r["reason"])}</td>'
            f'<td><code class="cmd">{_e(_command(spec))}</code></td></tr>')
    body.append("</tbody></table>")
    return _page("Reproduction results", "\n".join(body), JS)


def _cell(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _is_false(value: Any) -> bool:
    return str(value).strip().lower() in ("false", "0", "no")


def row_verdict(row: Mapping[str, Any], shown: bool) -> tuple[str, str]:
    """(words, css class) of one summary row: within / NO / not comparable (the first differing condition) /
    n/a (smoke) for summaries saved before the ``comparable`` column / "" (no paper value)."""
    within = _cell(row.get("within")).strip()
    if "comparable" in row and _is_false(row.get("comparable")) or within.lower() == "not comparable":
        condition = _cell(row.get("condition")).strip()
        return (f"not comparable ({condition})" if condition else "not comparable"), "v-nc"
    if not within:
        return "", ""
    if not shown:
        return "n/a (smoke)", "v-na"
    return ("within", "v-within") if within.lower() == "true" else ("NO", "v-no")


def comparison_table(summary: pd.DataFrame, shown: bool, csv_href: str | None) -> str:
    """The paper-vs-ours table of a run: rows with a paper value first (all of them), then the others, folded."""
    if summary.empty:
        return "<p>The summary has no rows.</p>"
    has_paper = summary["paper"].notna() if "paper" in summary else pd.Series(False, index=summary.index)
    extra = [c for c in ("dataset",) if c in summary]
    header = ["method", "setting", *extra, "metric", "paper", "ours (mean ± std)", "n", "diff", "tolerance", "verdict"]

    def render(frame: pd.DataFrame) -> str:
        out = []
        for row in frame.to_dict("records"):
            words, cls = row_verdict(row, shown)
            paper = row.get("paper")
            ours = f"{_num(row.get('mean'))} ± {_num(row.get('std'))}" if _cell(row.get("mean")) else ""
            n = _cell(row.get("n"))
            out.append("<tr>" + "".join(f"<td>{_e(_cell(row.get(c)))}</td>" for c in ("method", "setting", *extra, "metric"))
                       + f'<td class="num">{_e(_num(paper))}</td><td class="num">{_e(ours)}</td>'
                       f'<td class="num">{_e(n.split(".")[0] if n.endswith(".0") else n)}</td>'
                       f'<td class="num">{_e(_num(row.get("diff")))}</td><td class="num">{_e(_num(row.get("tolerance")))}</td>'
                       f'<td class="{cls}">{_e(words)}</td></tr>')
        return ("<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr></thead><tbody>"
                + "".join(out) + "</tbody></table>")

    paper, rest = summary[has_paper], summary[~has_paper]
    link = f' (<a href="{_href(csv_href)}">summary.csv</a>)' if csv_href else ""
    parts = []
    if not paper.empty:
        parts.append(render(paper.head(SHOWN_ROWS)))
        if len(paper) > SHOWN_ROWS:
            parts.append(f"<p>{len(paper) - SHOWN_ROWS} more rows with a paper value in the CSV{link}.</p>")
    if not rest.empty:
        what = "rows without a paper value" if not paper.empty else "rows (the paper gives no number for these)"
        parts.append(f"<details{' open' if paper.empty else ''}><summary>{len(rest)} {what}{'' if len(rest) <= SHOWN_ROWS else f', the first {SHOWN_ROWS} shown'}"
                     f"</summary>{render(rest.head(SHOWN_ROWS))}</details>")
    parts.append(f"<p class=\"lede\">The whole summary{link}.</p>" if link else "")
    return "\n".join(parts)


def privacy_labels(bundle: ResultBundle) -> list[tuple[str, str]]:
    """(method, label [and caveat]) of every ε label the run recorded (``eps_label``/``eps_caveat`` columns of
    its summary, else of its trials), plus ``--with`` methods, whose guarantee the user declares."""
    for frame in (bundle.summary, bundle.trials):
        if "eps_label" in frame and "method" in frame:
            cols = ["method", "eps_label", *(["eps_caveat"] if "eps_caveat" in frame else [])]
            seen = frame[cols].dropna(subset=["eps_label"]).drop_duplicates()
            out = []
            for row in seen.to_dict("records"):
                caveat = _cell(row.get("eps_caveat"))
                out.append((str(row["method"]), str(row["eps_label"]) + (f" ({caveat})" if caveat else "")))
            return out
    return [(str(m.get("method")), "declared by the user") for m in bundle.run.get("with") or []]


def _audited_by_method(rows: Sequence[Sequence[str]]) -> dict[str, str]:
    """Per method, its audited cells in a few words for the labels table (e.g. "4 cells: ε ≥ 0.109 to 3.679 (95%);
    the table below")."""
    bounds: dict[str, list[str]] = {}
    for method, _cell_label, _claimed, bound, *_ in rows:
        bounds.setdefault(method, []).append(bound)
    out = {}
    for method, values in bounds.items():
        numbers = sorted(values, key=lambda b: float(b.split(" ", 1)[0] or "nan"))
        shown = numbers[0] if len(numbers) == 1 else \
            f"{numbers[0].split(' ', 1)[0]} to {numbers[-1]}"
        out[method] = f"{len(values)} cell{'s' if len(values) > 1 else ''}: ε ≥ {shown}; the table below"
    return out


def _provenance(bundle: ResultBundle) -> str:
    run = bundle.run
    datasets = run.get("datasets_sha256") or {}
    data = "; ".join(f"<code>{_e(k)}</code> {_e(authors_blob_verdict(k, v) or (v[:16] + '…' if v else 'not read'))}"
                     for k, v in datasets.items()) or "none"
    versions = ", ".join(f"{k} {v}" for k, v in (run.get("versions") or {}).items())
    items = [("Command", f"<code>{_e(run.get('command'))}</code>"),
             ("Commit", f"<code>{_e(run.get('git_commit'))}</code> (repro {_e((run.get('versions') or {}).get('repro'))})"),
             ("Profile", _e(run.get("profile"))), ("Variant", _e(run.get("variant"))),
             ("Seeds", f"{_e(run.get('seeds'))} (base seed {_e(run.get('base_seed'))})"),
             ("Trials", f"{_e(run.get('n_trials'))} ({_e(run.get('n_cached'))} from the cache)"),
             ("Wall time", f"{_e(run.get('wall_seconds'))} s (trials summed: {_e(run.get('trial_seconds_total'))} s, "
                           f"jobs {_e(run.get('jobs'))})"),
             ("Finished", _e(run.get("finished_at"))), ("Data (sha256)", data), ("Software", _e(versions))]
    return '<dl class="kv">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items) + "</dl>"


def _run_order(bundle: ResultBundle) -> tuple[int, int, str]:
    """The profile's own full run first, then the profiles' own runs, then runs that changed something."""
    order = {FULL_PROFILE: 0, "cpu": 1, "smoke": 2}
    return (len(departures(bundle)) > 0, order.get(bundle.profile, 3), Path(bundle.directory).name)


class _Files:
    """Copies a run's figures and CSVs beside the pages (``files/<id>/<run folder>/``) and names their links."""

    def __init__(self, out: Path) -> None:
        self.out = out

    def copy(self, bundle: ResultBundle, path: Path) -> str:
        rel = Path("files") / bundle.spec.id / Path(bundle.directory).name / path.relative_to(bundle.directory)
        target = self.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        return rel.as_posix()


def _run_section(bundle: ResultBundle, files: _Files, audit_page: str | None) -> str:
    spec, key = bundle.spec, section_key(bundle)
    summary_csv = bundle.directory / "summary.csv"
    csv_href = files.copy(bundle, summary_csv) if summary_csv.exists() else None
    parts = [f'<section class="run" id="{anchor(key)}"><h2>Run: {_e(run_label(bundle))}</h2>',
             f'<div class="verdict"><strong>Verdict:</strong> {_inline(_verdict_text(bundle))}</div>']
    figures = bundle.figures()
    if figures:
        parts.append("<h3>Figures</h3>")
        for fig in figures:
            src = _href(files.copy(bundle, fig))
            parts.append(f'<figure><a href="{src}" title="open at full size"><img src="{src}" '
                         f'alt="{_e(spec.id)}: {_e(fig.stem)}" loading="eager"></a>'
                         f"<figcaption>{_e(fig.stem)} (click to open at full size)</figcaption></figure>")
    table = comparison_table(bundle.summary, _verdicts_shown(bundle), csv_href)
    n_rows = len(bundle.summary)
    parts.append("<h3>Paper vs ours</h3>"
                 '<p class="lede">Ours is the mean ± sample standard deviation over n seeds; a row is within when '
                 "|ours − paper| ≤ tolerance.</p>"
                 + (table if n_rows <= FOLDED_ROWS else
                    f"<details><summary>Show the table ({n_rows} rows)</summary>{table}</details>"))
    sources = sorted(set(bundle.summary["paper_source"].dropna().astype(str).map(resolve_citations))) \
        if "paper_source" in bundle.summary else []
    if sources:
        parts.append("<details><summary>Where the paper's values come from</summary><ul>"
                     + "".join(f"<li>{_inline(s)}</li>" for s in sources) + "</ul></details>")
    hook = report_hook(spec, "report_markdown")
    if hook is not None:
        text = hook(bundle)
        if text and text.strip():
            parts += ["<h3>The study's reading (errata, checks)</h3>",
                      f'<div class="study">{markdown_html(resolve_citations(text))}</div>']
    labels = privacy_labels(bundle)
    parts.append("<h3>Privacy</h3>")
    audit_rows, skipped = one_run_audit(bundle)
    if labels:
        audited = _audited_by_method(audit_rows) if audit_rows or skipped else None
        head = "<th>method</th><th>ε label</th>" + ("<th>audited ε (one-run audit)</th>" if audited is not None else "")
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>"
                     + "".join(f"<tr><td>{_e(m)}</td><td>{_e(lab)}</td>"
                               + (f"<td>{_e(audited.get(m, 'not audited'))}</td>" if audited is not None else "")
                               + "</tr>" for m, lab in labels)
                     + "</tbody></table>")
    else:
        parts.append("<p>This run recorded no ε labels (no private mechanism, or labels stated in the notes).</p>")
    if audit_rows:
        parts.append('<p class="lede">One-run privacy audit of this run (<code>repro run --audit</code>; Steinke, '
                     "Nasr &amp; Jagielski 2023, white-box, one training run per cell at its own n, q, T and noise): "
                     "the audited ε is a lower bound on the run's true ε, shown beside the claimed one.</p>"
                     "<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in AUDIT_HEADER) + "</tr></thead><tbody>"
                     + "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in audit_rows)
                     + "</tbody></table>")
    if skipped:
        parts.append(f"<p>{skipped} other privacy cell(s) not audited (reasons in <code>one_run_audit.csv</code>, "
                     "under Tables).</p>")
    if audit_page and labels:
        parts.append(f'<p>The audited ε of every mechanism: <a href="{_href(audit_page)}">the privacy audit</a>.</p>')
    tables = sorted((bundle.directory / "tables").glob("*.csv")) if (bundle.directory / "tables").is_dir() else []
    if tables:
        parts.append("<h3>Tables</h3><ul>" + "".join(
            f'<li><a href="{_href(files.copy(bundle, t))}">{_e(t.name)}</a></li>' for t in tables) + "</ul>")
    parts += ["<h3>Provenance</h3>", _provenance(bundle), "</section>"]
    return "\n".join(parts)


def _audit_table(bundle: ResultBundle) -> str:
    """The audit's claimed / achievable / audited ε per mechanism (its ``audit`` table), where the run has it."""
    frame = bundle.table("audit", None)
    if frame is None or frame.empty:
        return ""
    cols = [c for c in ("mechanism", "method", "claimed_epsilon", "achievable_epsilon", "audited_epsilon", "ratio",
                        "verdict", "control") if c in frame]
    body = "".join("<tr>" + "".join(f"<td>{_e(_num(v) if isinstance(v, float) else _cell(v))}</td>" for v in row)
                   + "</tr>" for row in frame[cols].itertuples(index=False))
    return ("<h3>Audited ε</h3><table><thead><tr>" + "".join(f"<th>{_e(c.replace('_', ' '))}</th>" for c in cols)
            + f"</tr></thead><tbody>{body}</tbody></table>")


def result_page(spec: ExperimentSpec, row: Mapping[str, str], bundles: Sequence[ResultBundle], files: _Files,
                audit_page: str | None) -> str:
    """One result: what it reproduces, the declared status and reason, then every saved run."""
    ordered = sorted(bundles, key=_run_order)
    parts = ['<nav class="crumbs"><a href="index.html">← all results</a></nav>',
             f"<h1>{_e(spec.id)}: {_e(spec.title)}</h1>",
             f'<p class="lede">{_e(spec.document)}, {_e(spec.section)}. Reproduces: {_inline(spec.reproduces)}</p>',
             '<dl class="kv">',
             f"<dt>Status</dt><dd>{_badge(row['status'])} {_e(row.get('detail', ''))}</dd>",
             f"<dt>Full-profile run</dt><dd>{_e(row['measured'])}</dd>"]
    if row.get("reason"):
        parts.append(f"<dt>Why not (fully)</dt><dd>{_inline(row['reason'])}</dd>")
    parts += [f"<dt>Reproduce</dt><dd><code>{_e(_command(spec))}</code></dd>"]
    if spec.expected:
        parts.append(f"<dt>Expected</dt><dd>{_inline(' '.join(spec.expected.split()))}</dd>")
    parts.append("</dl>")
    if ordered:
        parts.append("<h2>Saved runs</h2><ul>" + "".join(
            f'<li><a href="#{anchor(section_key(b))}">{_e(run_label(b))}</a></li>' for b in ordered) + "</ul>")
    else:
        parts.append('<p class="notrun"><strong>not run</strong>: no saved run of this result in the folder the site '
                     f"was built from. Run <code>{_e(_command(spec))}</code>, then <code>repro report --html</code>.</p>")
    if spec.notes.strip():
        parts.append("<details><summary>Notes on this result (data, method, errata)</summary>"
                     f"{markdown_html(resolve_citations(spec.rendered_notes()))}</details>")
    for bundle in ordered:
        section = _run_section(bundle, files, audit_page)
        if spec.id == "audit":
            section = section.replace("<h3>Figures</h3>", _audit_table(bundle) + "<h3>Figures</h3>", 1) \
                if "<h3>Figures</h3>" in section else section.replace("<h3>Privacy</h3>", _audit_table(bundle)
                                                                    + "<h3>Privacy</h3>", 1)
        parts.append(section)
    return _page(f"{spec.id}: {spec.title}", "\n".join(parts))


def _writable_site_folder(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).exists())):
        raise InvalidParameterError(f"--out {out}: the folder exists and holds files that are not a results site; "
                                    "name an empty or new folder (a site folder is replaced as a whole)")


def write_site(specs: Sequence[ExperimentSpec], source: Path, out: Path) -> Path:
    """Build the site for ``specs`` from the saved runs under ``source`` into ``out``; return ``index.html``.

    The site is written into a temporary sibling folder and moved into place when complete; an existing site
    folder (it holds :data:`MARKER`) is replaced, any other non-empty folder is refused in one line.
    """
    source, out = Path(source), Path(out)
    if not source.is_dir():
        raise InvalidParameterError(f"--from {source}: no such folder; name a results folder (e.g. results or "
                                    "docs/results)")
    _writable_site_folder(out)
    by_id = {s.id: s for s in specs}
    rows = {r["id"]: r for r in fidelity_rows(by_id, source)}
    bundles = {s.id: find_bundles([s], source) for s in specs}
    with replaced_folder(out) as tmp:
        files = _Files(tmp)
        audit_page = page_name("audit") if bundles.get("audit") else None
        for eid, spec in by_id.items():
            page = result_page(spec, rows[eid], bundles[eid], files, audit_page if eid != "audit" else None)
            (tmp / page_name(eid)).write_text(page, encoding="utf-8")
        index = index_page([rows[e] for e in sorted(rows)], by_id, _shown_source(source),
                           {eid: len(runs) for eid, runs in bundles.items()})
        (tmp / "index.html").write_text(index, encoding="utf-8")
        (tmp / MARKER).write_text(json.dumps({"source": _shown_source(source), "results": sorted(by_id)}) + "\n",
                                  encoding="utf-8")
    return out / "index.html"


def _shown_source(source: Path) -> str:
    """The results folder as the pages name it: relative to the working folder when inside it, else its name (a
    published site never names a machine's absolute path)."""
    try:
        return source.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return source.name
