"""The fidelity dashboard: one table over every result — its declared status, what its saved full-profile
run measured, and the reason for each miss (issue 22).

Each experiment file declares its status in a ``[fidelity]`` table (schema: :func:`repro.engine.schema._parse_fidelity`):

.. code-block:: toml

    [fidelity]
    status = "partial"                # one of repro.engine.schema.FIDELITY_STATUSES
    detail = "9/12 inferred file"     # short words shown beside the status (optional)
    miss = "data not public"          # why it is not (fully) reproduced: erratum, data not public, hardware, ...
    reason = "the authors' Credit Card file is not public; ours is an inferred reconstruction"

The measured column is read from the saved results only: ``<results>/<id>/full/`` (the full profile of the
default variant). A study's report module may define ``fidelity_verdict(bundle) -> str | None`` (e.g. DP-FERMI
excludes released points the errata check marks not reproducible); otherwise the column counts the paper
comparisons within tolerance. Where no full run is saved the column says "not run" — the dashboard never
guesses. The status column is the declared one; when a full run exists and a declared ``reproduced`` has paper
comparisons outside tolerance, the row says so ("check").

``python -m repro.engine.fidelity [RESULTS_DIR ...] [--previous FILE] [--out FILE]`` prints (or writes) the
dashboard; with several folders the first that holds a result's full run is read; ``--previous`` keeps, for a
result none of them holds, the measured text of an earlier snapshot, marked "(earlier run)" (so rerunning some
results does not erase what the others measured). ``repro report`` opens ``REPORT.md`` with it. The committed
snapshot is ``docs/fidelity.md``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from repro.engine.spec import ExperimentSpec, load_all

__all__ = ["fidelity_rows", "measured", "saved_run", "render_dashboard", "parse_dashboard", "parse_measured", "main"]

FULL_PROFILE = "full"
NOT_RUN = "not run"
EARLIER = "(earlier run)"
_HEADER = ["result", "document", "status", "detail", "full-profile run (saved results)", "why not (fully) reproduced"]


def _short_document(doc: str) -> str:
    """"Lowy, Gupta, Razaviyayn (ICLR 2023), Stochastic …" → "Lowy, Gupta, Razaviyayn (ICLR 2023)"; a thesis keeps
    its Part."""
    doc = doc.split(":", 1)[0]
    head = doc.split("), ", 1)[0] + (")" if "), " in doc else "")
    part = doc.rsplit(", ", 1)[-1] if doc.rstrip().endswith(("Part I", "Part II")) else ""
    return f"{head}, {part}" if part else head


def saved_run(spec: ExperimentSpec, results: Path | Sequence[Path] | None) -> Path | None:
    """The run that stands for ``spec``: the first ``<results>/<id>/full/`` holding a complete run
    (``run.json``); else, for a result whose full profile needs an accelerator (it offers ``cpu``), the first
    ``<results>/<id>/cpu/``; else None. The published results (:mod:`repro.engine.publish`) follow the same rule."""
    folders = [] if results is None else [results] if isinstance(results, (str, Path)) else list(results)
    for profile in [FULL_PROFILE, *(["cpu"] if "cpu" in spec.profiles else [])]:
        for folder in folders:
            directory = Path(folder) / spec.id / profile
            if (directory / "run.json").exists():
                return directory
    return None


def measured(spec: ExperimentSpec, results: Path | Sequence[Path] | None) -> tuple[str, bool | None]:
    """(text, all_within) of the saved full-profile run of ``spec``'s default variant under ``results`` (one
    folder or several, the first holding a run wins); ("not run", None) when none is saved. ``all_within`` is
    None when nothing was judged."""
    directory = saved_run(spec, results)
    if directory is None:
        return NOT_RUN, None
    if directory.name != FULL_PROFILE:   # a reduced profile stands in: say so before what it measured
        text, _ = _measured_run(spec, directory)
        return f"{directory.name} profile only (reduced): {text}", None
    return _measured_run(spec, directory)


def _measured_run(spec: ExperimentSpec, directory: Path) -> tuple[str, bool | None]:
    from repro.engine.results import ResultBundle, not_comparable, report_hook, verdict_counts, verdict_line

    bundle = ResultBundle.load(spec, directory)
    ok, judged = verdict_counts(bundle.summary)
    hook = report_hook(spec, "fidelity_verdict")
    text = hook(bundle) if hook is not None else None
    if text is not None:  # the study judges its own run (e.g. errata excluded): the dashboard does not re-judge
        return text, None
    if not judged and not not_comparable(bundle.summary)[0]:
        return "ran; no numeric paper values", None
    # the one rule of the summary: values whose conditions the run does not meet are counted apart, never judged
    return verdict_line(bundle.summary), (ok == judged) if judged else None


def fidelity_rows(specs: Mapping[str, ExperimentSpec], results: Path | Sequence[Path] | None, *,
                  previous: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """One row per experiment (ordered by id): ``id``, ``document``, ``status``, ``detail``, ``measured``,
    ``reason``; an experiment without ``[fidelity]`` is "undeclared". ``previous`` ({id: measured text} of an
    earlier snapshot, :func:`parse_measured`) fills in results with no saved run, marked "(earlier run)"."""
    rows = []
    for eid in sorted(specs):
        spec = specs[eid]
        fid = spec.fidelity or {}
        status = fid.get("status", "undeclared")
        text, all_within = measured(spec, results)
        old = (previous or {}).get(eid, NOT_RUN)
        if text == NOT_RUN and old != NOT_RUN:
            text = old if old.endswith(EARLIER) else f"{old} {EARLIER}"
            counts = re.match(r"(\d+) of (\d+) paper comparisons within tolerance", text)
            all_within = None if counts is None else counts.group(1) == counts.group(2)
        if status == "reproduced" and all_within is False:
            status = "reproduced (check: the full run has comparisons outside tolerance)"
        reason = fid.get("reason", "")
        if fid.get("miss"):
            reason = f"{fid['miss']}: {reason}" if reason else fid["miss"]
        rows.append({"id": eid, "document": _short_document(spec.document), "status": status,
                     "detail": fid.get("detail", ""), "measured": text, "reason": reason})
    return rows


def render_dashboard(specs: Mapping[str, ExperimentSpec], results: Path | Sequence[Path] | None, *,
                     previous: Mapping[str, str] | None = None) -> str:
    """The dashboard as Markdown (title, legend, table, counts per status)."""
    rows = fidelity_rows(specs, results, previous=previous)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    esc = lambda t: str(t).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["## Fidelity dashboard", "",
             "Generated from the experiment files' `[fidelity]` tables (declared status, reason for each miss) and "
             "the saved full-profile runs (`<results>/<id>/full/`, or `cpu/` where the full profile needs an accelerator); "
             "\"not run\" = no saved run; \"(earlier run)\" = "
             "kept from the previous snapshot because the folders read this time do not hold that result. "
             "Regenerate: `python -m repro.engine.fidelity RESULTS_DIR --previous docs/fidelity.md --out docs/fidelity.md`.", "",
             "Statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" ({len(rows)} results).", "",
             "| " + " | ".join(_HEADER) + " |", "|" + "---|" * len(_HEADER)]
    for r in rows:
        lines.append(f"| `{r['id']}` | {esc(r['document'])} | **{esc(r['status'])}** | {esc(r['detail'])} | "
                     f"{esc(r['measured'])} | {esc(r['reason'])} |")
    return "\n".join(lines) + "\n"


def _table_cells(text: str) -> list[list[str]]:
    """The cells of every result row (``| `id` | …``) of a rendered dashboard."""
    return [[c.strip() for c in line.strip().strip("|").split(" | ")]
            for line in text.splitlines() if line.startswith("| `")]


def parse_dashboard(text: str) -> dict[str, str]:
    """{result id: status} of a rendered dashboard (the committed snapshot, in tests)."""
    return {cells[0].strip("`"): cells[2].strip("*") for cells in _table_cells(text)}


def parse_measured(text: str) -> dict[str, str]:
    """{result id: measured text} of a rendered dashboard (``--previous``)."""
    return {cells[0].strip("`"): cells[4].replace("\\|", "|") for cells in _table_cells(text) if len(cells) >= 5}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m repro.engine.fidelity", description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="*", default=[],
                        help="results folder(s); the first holding a result's full run is read (omit: declared "
                             "statuses only)")
    parser.add_argument("--previous", default=None,
                        help="an earlier dashboard whose measured text is kept for results no folder holds")
    parser.add_argument("--out", default=None, help="write the dashboard to this file (default: print)")
    args = parser.parse_args(argv)
    previous = parse_measured(Path(args.previous).read_text(encoding="utf-8")) if args.previous else None
    text = "# Fidelity of every result\n\n" + render_dashboard(load_all(strict=True),
                                                             [Path(r) for r in args.results] or None,
                                                             previous=previous)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
