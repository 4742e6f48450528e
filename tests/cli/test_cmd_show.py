"""`repro show`, `repro list` over a broken experiments folder, and `--set` values outside a declared
domain rejected before any data is loaded (issue #20 item 6, issue #24 items 1-2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.engine.spec import get_experiment
from repro.errors import InvalidParameterError

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_list_reports_and_skips_a_non_utf8_file_and_run_of_another_id_works(toy_env: Path) -> None:
    import os

    folder = Path(os.environ["REPRO_EXPERIMENTS_DIR"])
    (folder / "broken.toml").write_bytes(b'id = "broken"\ntitle = "\xff\xfe"\n')
    (folder / "zen.toml").write_text((folder / "toy.toml").read_text().replace('id = "toy"', 'id = "zen"')
                                     .replace('"repro._testing.trials"', '"this"'))
    result = invoke("list")
    assert result.exit_code == 0, result.output
    assert "toy" in result.output and "The Zen of Python" not in result.output
    assert "SKIPPED broken.toml" in result.output and "not UTF-8" in result.output
    assert "SKIPPED zen.toml" in result.output and "must name a study module" in result.output
    result = invoke("run", "toy", "-q")
    assert result.exit_code == 0, result.output
    result = invoke("run", "broken")
    assert result.exit_code == 1 and "broken.toml: not UTF-8" in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    result = invoke("run", "zen")
    assert result.exit_code == 1 and "Beautiful is better" not in result.output
    assert result.output.strip().splitlines()[-1].startswith("repro: error: ")


def test_list_of_a_missing_folder_is_one_line_and_nonzero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(tmp_path / "nonexistent"))
    result = invoke("list")
    assert result.exit_code == 1
    assert result.output.strip().startswith("repro: error: ") and "nonexistent: no such folder" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_show_prints_the_merged_experiment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPRO_EXPERIMENTS_DIR", raising=False)
    result = invoke("show", "dpfermi-fig-4")
    assert result.exit_code == 0, result.output
    out = result.output
    for text in ("dpfermi-fig-4  [figure]", "extends: _base/dpfermi-tabular.toml", "full: 18 cells (data = [authors, clean]; epsilon = [0.5, 1.0, 3.0]", "settable keys", "epochs = 200",
                 "domain: integer >= 1", "tune_validation_fraction = 0.2    domain: > 0 and <= 0.5",
                 "data modes (--set data=...): authors, clean", "reference: the authors' released code path",
                 "credit-card-defaulters_processed.csv", "INFERRED reconstruction",
                 "violation (tolerance 0.02): The figure's y axis: equalized-odds violation",  # the child's own
                 "the paper's values (", "run `repro data verify`"):
        assert text in out, text
    assert max(len(line) for line in out.splitlines()) <= 100
    merged = invoke("show", "dpfermi-fig-4", "--json").output
    assert '"extends"' not in merged and '"tune_seeds": 3' in merged and '"id": "dpfermi-fig-4"' in merged


def test_show_lists_every_key_of_the_listed_cells_method_included(monkeypatch: pytest.MonkeyPatch) -> None:
    """README: `repro show ID` lists every key `--set` accepts; `method` of a table's listed cells was left out."""
    monkeypatch.delenv("REPRO_EXPERIMENTS_DIR", raising=False)
    out = invoke("show", "thesis-table-3.1").output
    keys = out.split("settable keys", 1)[1].split("data modes", 1)[0]
    assert "  method = per cell    domain: " in keys and "  lambda = per cell    domain: " in keys


def test_show_of_an_unknown_id_suggests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPRO_EXPERIMENTS_DIR", raising=False)
    result = invoke("show", "thesis-table-3.9")
    assert result.exit_code == 1 and "did you mean 'thesis-table-3.4'" in result.output


def _checks_strict_bounds() -> bool:
    """Whether the domain checker knows ``gt``/``lt`` (the value-typing work on spec.py adds them)."""
    try:
        get_experiment("dpfermi-fig-2", ROOT / "experiments").validate_overrides({"tune_validation_fraction": [1.5]})
    except InvalidParameterError:
        return True
    return False


@pytest.mark.parametrize("setting", [
    "epochs=-1", "tune_seeds=0", "subsample=-5",
    pytest.param("tune_validation_fraction=1.5", marks=pytest.mark.skipif(
        not _checks_strict_bounds(), reason="strict bounds (lt/gt) are checked by the value-typing change")),
])
def test_set_outside_the_domain_is_rejected_before_any_data_load(
        setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPRO_EXPERIMENTS_DIR", raising=False)
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DATA_MIRROR", raising=False)
    result = invoke("run", "dpfermi-fig-2", "--set", setting, "-q")
    assert result.exit_code == 1
    assert result.output.strip() == result.output.strip().splitlines()[-1]  # one line
    assert f"--set {setting}: must be" in result.output and "dpfermi-fig-2" in result.output
    assert "unavailable" not in result.output and not list((tmp_path / "results").glob("dpfermi-fig-2*"))


def test_show_prints_the_study_declaration_and_the_declared_scopes() -> None:
    result = invoke("show", "thesis-table-3.1")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "study (repro.studies.thesis.part1_tables, declared by its STUDY):" in out
    assert "values: eps_label; version: 1" in out and "user methods (--with): yes" in out
    assert "methods: Algorithm 2, " in out and "random-stream scopes it needs: split" in out
    assert "split: family thesis-part1, seeded by the base seed" in out
    bandit = invoke("show", "bandit-regret").output
    assert "problem: family pfg-problem, seeded by the parameter problem_seed" in bandit
    assert "user methods (--with): no" in bandit


def test_show_prints_the_conditions_of_the_paper_s_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judged profiles, the default (the full profile's values), the file's overrides and the inert keys
    with their reasons, compactly (one value `k = v`, several `k ∈ {..}`, seeds a minimum)."""
    monkeypatch.delenv("REPRO_EXPERIMENTS_DIR", raising=False)
    out = invoke("show", "thesis-table-3.1").output
    section = out.split("conditions of the paper's values", 1)[1].split("claims", 1)[0]
    flat = " ".join(section.split())
    for text in ("judged profiles: full", "default (the full profile's values): dataset = adult; data ∈ "
                 "{authors, clean}; variant = calibrated;", "epochs = 50;", "seeds ≥ 10",
                 "inert keys (never a condition): only_method: selects which methods run"):
        assert text in flat, text
    assert "overrides" not in flat and "only_method =" not in flat   # an inert key is no condition
    theorem = " ".join(invoke("show", "thesis-theorem-8").output.split("conditions of the paper's", 1)[1].split())
    assert "judged profiles: smoke, full" in theorem and "overrides ([reference] conditions): seeds ≥ 1" in theorem
    assert "epochs: the base classifier's training length" in theorem
    assert "seeds ≥ 10" not in theorem and "epochs =" not in theorem.split("overrides", 1)[0]


def test_show_prints_a_value_s_own_conditions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "toy.toml").write_text('''id = "toy"
title = "t"
document = "d"
section = "s"
spec = "x"
reproduces = "r"
kind = "table"
trial = "repro._testing.noop"
[params]
epochs = 200
[domains]
epochs = { integer = true, min = 1 }
[profiles.smoke]
seeds = 1
params = { epochs = 2 }
[profiles.full]
seeds = 3
[[metrics]]
name = "value"
description = "v"
[reference]
source = "[P] the paper"
[[references]]
metric = "value"
value = 1.0
conditions = { epochs = [100, 200] }
''', encoding="utf-8")
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(tmp_path))
    result = invoke("show", "toy")
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "value = 1.0 — [P] the paper (own conditions: epochs ∈ {100, 200})" in flat
    assert "default (the full profile's values): variant = paper; epochs = 200; seeds ≥ 3" in flat
