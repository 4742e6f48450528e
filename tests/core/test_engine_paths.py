"""The engine finds the checkout from its own location (regression: the move to ``repro/engine/`` made
``experiments_dir`` and ``git_commit`` look one folder too low, so a plain ``repro list`` found nothing)."""

from __future__ import annotations

from pathlib import Path

from repro.engine.results import git_commit
from repro.engine.spec import experiments_dir

ROOT = Path(__file__).parents[2]


def test_experiments_dir_defaults_to_the_checkout(monkeypatch) -> None:
    monkeypatch.delenv("REPRO_EXPERIMENTS_DIR", raising=False)
    assert experiments_dir() == ROOT / "experiments"
    assert (experiments_dir() / "thesis-table-3.1.toml").is_file()


def test_git_commit_reads_the_checkout() -> None:
    commit = git_commit()
    if (ROOT / ".git").exists():
        assert commit is not None and len(commit) >= 7
