"""The fidelity dashboard (issue 22): declared statuses, measured columns from saved runs only, and the
README status column and the committed snapshot ``docs/fidelity.md`` kept in step with the declarations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from repro.engine import fidelity
from repro.engine.report import render_report
from repro.engine.spec import FIDELITY_STATUSES, _parse_fidelity, load_all
from repro.errors import ExperimentFileError

ROOT = Path(__file__).parents[2]
SPECS = load_all(ROOT / "experiments", strict=True)


def test_every_experiment_declares_a_valid_status() -> None:
    for eid, spec in SPECS.items():
        assert spec.fidelity.get("status") in FIDELITY_STATUSES, eid
        if spec.fidelity["status"] in ("partial", "not reproduced", "hardware-limited", "surrogate data"):
            assert spec.fidelity.get("miss") or spec.fidelity.get("reason"), f"{eid}: a miss needs its reason"


def test_fidelity_table_is_validated() -> None:
    with pytest.raises(ExperimentFileError, match="unknown status"):
        _parse_fidelity(Path("x.toml"), {"status": "great"})
    with pytest.raises(ExperimentFileError, match="not part of the schema"):
        _parse_fidelity(Path("x.toml"), {"status": "partial", "why": "x"})
    with pytest.raises(ExperimentFileError, match="unknown miss"):
        _parse_fidelity(Path("x.toml"), {"status": "partial", "miss": "bad luck"})
    with pytest.raises(ExperimentFileError, match="required"):
        _parse_fidelity(Path("x.toml"), {"detail": "x"})
    assert _parse_fidelity(Path("x.toml"), {}) == {}


def _readme_rows() -> list[tuple[list[str], str]]:
    """(result ids, bold status word) of every row of the README's status table with a command."""
    out = []
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) != 4 or not cells[1].startswith("`"):
            continue
        tokens = re.findall(r"`([^`]+)`", cells[1])
        first = tokens[0].split()[0]
        ids = [first] + [first.rsplit("-", 1)[0] + t for t in tokens[1:] if t.startswith("-")]
        word = re.match(r"\*\*([^*]+)\*\*", cells[3])
        out.append((ids, word.group(1) if word else cells[3]))
    return out


def _by_id_or_alias(rid: str):
    """The experiment a README row names, by id or alias, as ``get_experiment`` resolves it, but on the
    experiment files read once (``get_experiment`` reads them all at every call)."""
    if rid in SPECS:
        return SPECS[rid]
    named = [spec for spec in SPECS.values() if rid in spec.aliases]
    assert len(named) == 1, f"README row {rid!r} names no experiment (id or alias)"
    return named[0]


def test_readme_status_column_follows_the_declared_statuses() -> None:
    rows = _readme_rows()
    assert len(rows) >= 25
    covered = set()
    for ids, word in rows:
        for rid in ids:
            spec = _by_id_or_alias(rid)
            covered.add(spec.id)
            assert word == spec.fidelity["status"], (f"README row {rid!r} says {word!r}, but "
                                                     f"experiments/{spec.id}.toml declares {spec.fidelity['status']!r}")
    assert covered == set(SPECS), f"results without a README row: {sorted(set(SPECS) - covered)}"


def test_committed_snapshot_matches_the_declarations() -> None:
    snapshot = fidelity.parse_dashboard((ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8"))
    assert set(snapshot) == set(SPECS), "regenerate: python -m repro.engine.fidelity RESULTS --out docs/fidelity.md"
    for eid, status in snapshot.items():
        assert status.startswith(SPECS[eid].fidelity["status"]), eid


def _fake_full_run(root: Path, eid: str, within: list[bool]) -> None:
    d = root / eid / "full"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"profile": "full"}))
    pd.DataFrame({"x": [1]}).to_csv(d / "trials.csv", index=False)
    pd.DataFrame({"method": "m", "setting": "", "metric": "acc", "n": 3, "mean": 0.5, "std": 0.1,
                  "paper": 0.5, "diff": 0.0, "tolerance": 0.01, "within": within}).to_csv(d / "summary.csv", index=False)


def test_measured_column_comes_from_saved_full_runs_only(tmp_path: Path) -> None:
    specs = {k: SPECS[k] for k in ("thesis-table-3.1", "thesis-table-3.3", "compat-fairnr")}
    rows = {r["id"]: r for r in fidelity.fidelity_rows(specs, tmp_path)}
    assert {r["measured"] for r in rows.values()} == {fidelity.NOT_RUN}        # nothing saved: never a guess
    assert rows["thesis-table-3.3"]["reason"].startswith("data not public: ")
    _fake_full_run(tmp_path, "thesis-table-3.1", [True, False, True])
    _fake_full_run(tmp_path, "thesis-table-3.3", [True, True])
    rows = {r["id"]: r for r in fidelity.fidelity_rows(specs, tmp_path)}
    assert rows["thesis-table-3.1"]["measured"] == "2 of 3 paper comparisons within tolerance"
    assert rows["thesis-table-3.1"]["status"].startswith("reproduced (check")   # declared vs measured disagree
    assert rows["thesis-table-3.3"]["measured"] == "2 of 2 paper comparisons within tolerance"
    assert rows["thesis-table-3.3"]["status"] == "partial"                     # the declaration is kept
    assert rows["compat-fairnr"]["measured"] == fidelity.NOT_RUN
    md = fidelity.render_dashboard(specs, tmp_path)
    assert fidelity.parse_dashboard(md)["thesis-table-3.3"] == "partial"


def test_report_opens_with_the_dashboard(tmp_path: Path) -> None:
    dash = fidelity.render_dashboard({"compat-fairnr": SPECS["compat-fairnr"]}, tmp_path)
    text = render_report([], tmp_path, dashboard=dash)
    assert text.index("## Fidelity dashboard") < text.index("| result | run |")


def test_cli_writes_the_snapshot(tmp_path: Path) -> None:
    out = tmp_path / "fidelity.md"
    assert fidelity.main([str(tmp_path), "--out", str(out)]) == 0
    assert set(fidelity.parse_dashboard(out.read_text(encoding="utf-8"))) == set(SPECS)


def test_several_folders_and_an_earlier_snapshot_fill_in_what_this_run_lacks(tmp_path: Path) -> None:
    """Rerunning some results must not erase what the others measured: the first folder holding a result wins;
    a result no folder holds keeps the earlier snapshot's text, marked as such (never passed off as new)."""
    specs = {k: SPECS[k] for k in ("thesis-table-3.1", "thesis-table-3.3", "compat-fairnr")}
    new, old = tmp_path / "new", tmp_path / "old"
    _fake_full_run(new, "thesis-table-3.1", [True, True])
    _fake_full_run(old, "thesis-table-3.1", [False])
    _fake_full_run(old, "thesis-table-3.3", [True])
    rows = {r["id"]: r for r in fidelity.fidelity_rows(specs, [new, old])}
    assert rows["thesis-table-3.1"]["measured"] == "2 of 2 paper comparisons within tolerance"   # first wins
    assert rows["thesis-table-3.3"]["measured"] == "1 of 1 paper comparisons within tolerance"
    snapshot = fidelity.render_dashboard(specs, [new, old])
    earlier = fidelity.parse_measured(snapshot)
    assert earlier["thesis-table-3.3"] == "1 of 1 paper comparisons within tolerance"
    rows = {r["id"]: r for r in fidelity.fidelity_rows(specs, new, previous=earlier)}
    assert rows["thesis-table-3.1"]["measured"] == "2 of 2 paper comparisons within tolerance"
    assert rows["thesis-table-3.3"]["measured"] == "1 of 1 paper comparisons within tolerance (earlier run)"
    earlier["thesis-table-3.1"] = "2 of 3 paper comparisons within tolerance"     # a declared `reproduced`
    rows = {r["id"]: r for r in fidelity.fidelity_rows(specs, tmp_path / "none", previous=earlier)}
    assert rows["thesis-table-3.1"]["status"].startswith("reproduced (check")       # the earlier miss still shows
    assert rows["compat-fairnr"]["measured"] == fidelity.NOT_RUN
    again = fidelity.fidelity_rows(specs, new, previous=fidelity.parse_measured(fidelity.render_dashboard(
        specs, new, previous=earlier)))
    assert {r["id"]: r["measured"] for r in again}["thesis-table-3.3"].count("(earlier run)") == 1
    out = tmp_path / "fidelity.md"
    (tmp_path / "prev.md").write_text(snapshot, encoding="utf-8")
    assert fidelity.main([str(new), "--previous", str(tmp_path / "prev.md"), "--out", str(out)]) == 0
    assert "(earlier run)" in out.read_text(encoding="utf-8")


def test_a_cpu_run_stands_in_where_the_full_profile_needs_an_accelerator(tmp_path) -> None:
    """DP-FERMI Figure 5 offers a reduced `cpu` profile: its saved cpu run is what the dashboard (and the published
    results) show, labelled as the reduced profile, never "not run"; a result without a cpu profile ignores one."""
    import json as _json

    import pandas as _pd

    from repro.engine import fidelity as fid
    from repro.engine.spec import load_all as _load_all

    specs = {k: v for k, v in _load_all(strict=True).items() if k in ("dpfermi-fig-5", "dpfermi-fig-2")}
    for eid in specs:
        d = tmp_path / eid / "cpu"
        d.mkdir(parents=True)
        (d / "run.json").write_text(_json.dumps({"profile": "cpu"}))
        _pd.DataFrame({"x": [1]}).to_csv(d / "trials.csv", index=False)
        _pd.DataFrame({"method": ["m"], "metric": ["error"], "mean": [0.7], "paper": [0.6], "tolerance": [0.05],
                       "within": [None], "comparable": [False], "condition": ["profile: cpu ≠ full"]}
                      ).to_csv(d / "summary.csv", index=False)
    rows = {r["id"]: r for r in fid.fidelity_rows(specs, tmp_path)}
    assert rows["dpfermi-fig-5"]["measured"].startswith("cpu profile only (reduced): 1 paper value")
    assert rows["dpfermi-fig-2"]["measured"] == fid.NOT_RUN
    assert fid.saved_run(specs["dpfermi-fig-5"], [tmp_path]) == tmp_path / "dpfermi-fig-5" / "cpu"
