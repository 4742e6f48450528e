"""The README's status table, the fidelity dashboard (docs/fidelity.md) and the published full-profile summaries
(docs/results/, what `repro report --html --from docs/results` shows) agree: every README status is the status
the published runs give, and the dashboard's measured text for a published result is what its summary says."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from repro.engine import fidelity
from repro.engine.spec import ExperimentSpec, load_all

ROOT = Path(__file__).parents[2]
SPECS = load_all(ROOT / "experiments", strict=True)


def readme_statuses(readme: str, specs: Mapping[str, ExperimentSpec]) -> dict[str, str]:
    """{experiment id: bold status word} of the README's status table (ids by name or alias, `-5.2` shorthands)."""
    alias = {a: eid for eid, s in specs.items() for a in (eid, *s.aliases)}
    out = {}
    for line in readme.split("## Reproduction status", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) != 4 or not cells[1].startswith("`"):
            continue
        tokens = re.findall(r"`([^`]+)`", cells[1])
        first = tokens[0].split()[0]
        word = re.match(r"\*\*([^*]+)\*\*", cells[3])
        for rid in [first] + [first.rsplit("-", 1)[0] + t for t in tokens[1:] if t.startswith("-")]:
            out[alias.get(rid, rid)] = word.group(1) if word else cells[3]
    return out


def readme_status_cells(readme: str, specs: Mapping[str, ExperimentSpec]) -> dict[str, str]:
    """{experiment id: the whole status cell} of the README's status table."""
    alias = {a: eid for eid, s in specs.items() for a in (eid, *s.aliases)}
    out = {}
    for line in readme.split("## Reproduction status", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 4 and cells[1].startswith("`"):
            out[alias.get(cells[1].strip("`").split()[0].strip("`"), "")] = cells[3]
    return out


def disagreements(readme: str, dashboard: str, published: Path, specs: Mapping[str, ExperimentSpec]) -> list[str]:
    rows = {r["id"]: r for r in fidelity.fidelity_rows(specs, published)}
    said = readme_statuses(readme, specs)
    shown = fidelity.parse_dashboard(dashboard)
    measured = fidelity.parse_measured(dashboard)
    problems = []
    cells = readme_status_cells(readme, specs)
    for eid, row in rows.items():
        declared, _, check = row["status"].partition(" (check")
        if said.get(eid) != declared:
            problems.append(f"{eid}: README says {said.get(eid)!r}, the published runs give {row['status']!r}")
        elif check and "check" not in cells.get(eid, ""):   # the README may not hide what the full run flags
            problems.append(f"{eid}: README says {said.get(eid)!r} without the check the published runs give "
                            f"({row['status']!r})")
        if not shown.get(eid, "").startswith(row["status"].split(" (check", 1)[0]):
            problems.append(f"{eid}: the dashboard says {shown.get(eid)!r}, the published runs {row['status']!r}")
        if row["measured"] != fidelity.NOT_RUN:
            dash = measured.get(eid, "").removesuffix(f" {fidelity.EARLIER}")
            if dash != row["measured"]:
                problems.append(f"{eid}: the dashboard measured {dash!r}, the published summary {row['measured']!r}")
    return problems


def test_readme_dashboard_and_published_results_agree() -> None:
    problems = disagreements((ROOT / "README.md").read_text(encoding="utf-8"),
                             (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8"), ROOT / "docs" / "results",
                             SPECS)
    assert not problems, "\n".join(problems)


def _publish(root: Path, eid: str, within: list[bool]) -> None:
    d = root / eid / "full"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"profile": "full"}))
    pd.DataFrame({"x": [1]}).to_csv(d / "trials.csv", index=False)
    pd.DataFrame({"method": "m", "setting": "", "metric": "acc", "n": 3, "mean": 0.5, "std": 0.1, "paper": 0.5,
                  "diff": 0.0, "tolerance": 0.01, "within": within}).to_csv(d / "summary.csv", index=False)


def test_the_agreement_check_can_fail(tmp_path: Path) -> None:
    specs = {k: SPECS[k] for k in ("compat-fairnr", "thesis-theorem-8")}
    readme = ("## Reproduction status\n\n| Result | Command | Paper vs ours | Status |\n|---|---|---|---|\n"
              "| FairNR | `compat-fairnr` | x | **simulation** |\n| Thm 8 | `thesis-theorem-8` | x | **checked** |\n")
    dashboard = fidelity.render_dashboard(specs, None)
    assert disagreements(readme, dashboard, tmp_path, specs) == []             # nothing published: statuses only
    _publish(tmp_path, "thesis-theorem-8", [True, True, False])
    problems = disagreements(readme, dashboard, tmp_path, specs)               # the dashboard never saw that run
    assert problems == ["thesis-theorem-8: the dashboard measured 'not run', the published summary "
                        "'2 of 3 paper comparisons within tolerance'"]
    assert disagreements(readme, fidelity.render_dashboard(specs, tmp_path), tmp_path, specs) == []
    wrong = readme.replace("**checked**", "**reproduced**")
    assert disagreements(wrong, fidelity.render_dashboard(specs, tmp_path), tmp_path, specs) == [
        "thesis-theorem-8: README says 'reproduced', the published runs give 'checked'"]


def test_the_readme_may_not_hide_a_check_the_full_run_flags(tmp_path: Path) -> None:
    specs = {"thesis-table-3.1": SPECS["thesis-table-3.1"]}
    _publish(tmp_path, "thesis-table-3.1", [True, False])
    dashboard = fidelity.render_dashboard(specs, tmp_path)
    head = "## Reproduction status\n\n| Result | Command | Paper vs ours | Status |\n|---|---|---|---|\n"
    hidden = head + "| Table 3.1 | `thesis-table-3.1` | x | **reproduced** (authors' data) |\n"
    assert disagreements(hidden, dashboard, tmp_path, specs) == [
        "thesis-table-3.1: README says 'reproduced' without the check the published runs give ('reproduced (check: "
        "the full run has comparisons outside tolerance)')"]
    told = head + "| Table 3.1 | `thesis-table-3.1` | x | **reproduced** (authors' data; check: clean misses 1) |\n"
    assert disagreements(told, dashboard, tmp_path, specs) == []
