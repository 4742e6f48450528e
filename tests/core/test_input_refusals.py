"""Bad input refused in one line before any trial runs, and files written as a colleague can read them:
non-ASCII digits in ``--set``, ``$REPRO_DATASET_PATH`` entries that are files or missing folders, the trial cache's
file modes under the umask, and the corruption warning printed once."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.engine import cache as cache_mod
from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import load_experiment
from repro.errors import InvalidParameterError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml"


@pytest.mark.parametrize("text", ["１", "３.０", "٣", "1e\u0663"])
def test_non_ascii_digits_are_refused(text: str) -> None:
    """``--set epsilon=１`` (a full-width digit) was accepted as 1."""
    spec = load_experiment(FIXTURE)
    with pytest.raises(InvalidParameterError, match="ASCII digits") as caught:
        spec.coerce_overrides({"epsilon": [text]})
    assert "epsilon" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("kind", ["file", "missing"])
def test_dataset_path_entry_that_is_not_a_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            kind: str) -> None:
    """An entry of ``$REPRO_DATASET_PATH`` that is a file or a missing folder was silently ignored."""
    from repro.datasets import registry

    entry = tmp_path / "plugins"
    if kind == "file":
        entry.write_text("not a folder")
    monkeypatch.setenv("REPRO_DATASET_PATH", os.pathsep.join([str(tmp_path), str(entry)]))
    registry.rescan()
    try:
        with pytest.raises(InvalidParameterError, match="REPRO_DATASET_PATH entry .*plugins") as caught:
            registry.dataset_names()
        assert ("a file, not a folder" if kind == "file" else "missing") in str(caught.value)
    finally:
        monkeypatch.delenv("REPRO_DATASET_PATH")
        registry.rescan()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_cache_entries_honour_the_umask_as_results_do(tmp_path: Path) -> None:
    """Trial-cache entries were 0600 while results were 0644: a shared --out cache was unreadable to a colleague."""
    old = os.umask(0o022)
    try:
        outcome = run_experiment(load_experiment(FIXTURE), RunConfig(out=tmp_path, seeds=1))
        from repro.engine.results import write_results

        directory = write_results(outcome, command="repro run toy", dataset_sha256={})
    finally:
        os.umask(old)
    entries = list((tmp_path / ".cache" / "toy").glob("*/*.pkl"))
    assert entries and {p.stat().st_mode & 0o777 for p in entries} == {0o644}
    assert (directory / "summary.csv").stat().st_mode & 0o777 == 0o644


def test_a_corrupt_shared_value_is_named_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    """The corruption warning was printed twice: each trial that asked for the value named it."""
    monkeypatch.setattr(cache_mod, "_SHARED", {})
    monkeypatch.setattr(cache_mod, "_WARNED", set())
    module = "repro._testing.noop"
    cache_mod.shared_value(tmp_path, "tuning", {"eps": 1.0}, module, lambda: {"L": 1.0})
    for p in (tmp_path / "_shared" / "tuning").glob("*/*.pkl"):
        p.write_bytes(b"garbage")
    with caplog.at_level(logging.WARNING):
        for _ in range(2):   # two trials of the run, each in a fresh worker's memory
            monkeypatch.setattr(cache_mod, "_SHARED", {})
            for p in (tmp_path / "_shared" / "tuning").glob("*/*.pkl"):
                p.write_bytes(b"garbage")
            cache_mod.shared_value(tmp_path, "tuning", {"eps": 1.0}, module, lambda: {"L": 1.0})
    assert len([r for r in caplog.records if "failed its checksum" in r.getMessage()]) == 1


def test_full_width_digit_on_the_command_line_is_one_line(toy_env: Path) -> None:
    result = CliRunner().invoke(main, ["run", "toy", "--set", "epsilon=１", "--quiet"])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1, result.output
    assert "ASCII digits" in result.output
