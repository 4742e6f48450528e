"""The derived numbers the thesis tables' notes print ((q, T), the calibrated σ, the ε the thesis's σ spends, the
rows Algorithm 2 fits on) are what the code computes: the notes name them as placeholders that the study fills
(:class:`repro.engine.study.NoteNumbers`), and these tests recompute each one independently (the DP-SGD unit's
``configure`` at the note's n_fit and the file's own parameters; the split of the loaded data). A note that
drifts from the code fails here, and so does a new placeholder without a check."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from repro.datasets import registry
from repro.engine.notes import placeholder_names, render_notes
from repro.engine.spec import load_all, load_experiment, study_of
from repro.errors import ExperimentFileError
from repro.learners import dp_sgd_unit
from repro.privacy.accounting import dp_sgd_epsilon
from repro.studies.thesis import part1_tables

LINE = re.compile(
    r"privacy numbers \(data = clean, n_fit = (?P<n>[\d,]+)\): thesis σ = (?P<thesis>[\d.]+) at its .*?; "
    r"actual Opacus \(q, T\) = \(1/(?P<k>\d+) = (?P<q>[\d.]+), (?P<T>\d+)\); calibrated σ = (?P<sigma>[\d.]+) "
    r"\(multiplier (?P<z>[\d.]+)\); the thesis's σ on the actual \(q, T\) spends ε = (?P<eps>[\d.]+) "
    r"\(PLD; RDP (?P<rdp>[\d.]+)\) instead of (?P<target>[\d.]+)\.")

SPECS = load_all(strict=True)


def _close(printed: str, value: float) -> bool:
    """``value`` rounds to the printed text (as many decimals as printed)."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return round(value, decimals) == float(printed)


@pytest.mark.parametrize("experiment_id", ["thesis-table-3.1", "thesis-table-3.2", "thesis-table-3.3",
                                           "thesis-table-3.4"])
def test_the_privacy_numbers_of_the_notes_are_the_code_s(experiment_id: str) -> None:
    spec = SPECS[experiment_id]
    (match,) = LINE.finditer(spec.rendered_notes())
    p = spec.fixed_params("full")
    n = int(match["n"].replace(",", ""))
    hyper = {"clip_norm": p["clip_norm"], "lr": p["lr"], "batch_size": p["batch_size"], "epochs": p["epochs"],
             "sampling_rule": p["sampling_rule"]}
    target = p["eps_prime"] - p["eps0"] - p["eps1"]
    calibrated = dp_sgd_unit.configure(n=n, epsilon=target, delta=p["delta"], **hyper)
    thesis_z = p["thesis_sigma"] / p["clip_norm"]
    thesis = dp_sgd_unit.configure(n=n, epsilon=None, delta=p["delta"], noise_multiplier=thesis_z, **hyper)
    q, steps = calibrated.sampling_probability, calibrated.steps
    assert float(match["thesis"]) == p["thesis_sigma"]
    assert 1 / int(match["k"]) == q and _close(match["q"], q) and int(match["T"]) == steps
    assert _close(match["z"], calibrated.config.noise_multiplier)
    assert _close(match["sigma"], calibrated.config.noise_multiplier * p["clip_norm"])
    assert _close(match["eps"], thesis.guarantee.epsilon)
    assert _close(match["rdp"], dp_sgd_epsilon(thesis_z, q, steps, p["delta"], accountant="rdp"))
    assert _close(match["target"], target)


AUTHORS = re.compile(r"With `data = authors` \(default\): n_fit = (?P<n>[\d,]+), actual Opacus \(q, T\) = "
                     r"\(1/(?P<k>\d+), (?P<T>\d+)\)\.")


@pytest.mark.parametrize("experiment_id", ["thesis-table-3.1", "thesis-table-3.2", "thesis-table-3.3",
                                           "thesis-table-3.4"])
def test_the_notes_row_counts_follow_the_split(experiment_id: str) -> None:
    """n_fit = int(2/3 · round(0.75 · rows)) of the registered rows in each mode (the split of
    :func:`repro.studies.thesis.part1_tables.prepare`), and the authors' (q, T) is Opacus's on it."""
    spec = SPECS[experiment_id]
    notes = spec.rendered_notes()
    (clean,) = LINE.finditer(notes)
    (authors,) = AUTHORS.finditer(notes)
    p = spec.fixed_params("full")
    entry = registry.get_dataset(p["dataset"])
    for match, data in ((clean, "clean"), (authors, "authors")):
        n_fit = int(2 / 3 * round(0.75 * entry.rows(data)))
        assert int(match["n"].replace(",", "")) == n_fit
        batches = math.ceil(n_fit / p["batch_size"])
        assert int(match["k"]) == batches and int(match["T"]) == batches * p["epochs"]


def test_the_base_note_s_adult_file_numbers_are_the_code_s() -> None:
    """The shared note explains the thesis's Adult inputs by the authors' Adult file; its counts are the
    registry's and the split's."""
    base = SPECS["thesis-table-3.1"].rendered_notes()
    numbers = SPECS["thesis-table-3.1"].note_numbers()
    train, n_fit = numbers["authors_train"], numbers["authors_n_fit"]
    assert registry.get_dataset("adult").rows("authors") == 2 * n_fit
    text = (f"q = 0.034 ≈ 1024/{n_fit:,} and T = 1500 = {numbers['authors_batches']} batches × 50 epochs",
            f"adult.data's {n_fit:,} complete rows twice, its 75 % part has {train:,} rows",
            f"int(2/3 · {train:,}) = {n_fit:,} of them")
    flat = " ".join(base.split())
    for t in text:
        assert t in flat
    assert round(1024 / n_fit, 3) == 0.034 and numbers["authors_T"] == 1500


#: every study-computed number a note may print, and the test above that checks it against the code
CHECKED = {"n_fit", "batches", "q", "T", "noise_multiplier", "sigma", "eps_dpsgd_target", "thesis_sigma_eps",
           "thesis_sigma_eps_rdp", "authors_n_fit", "authors_batches", "authors_T", "authors_train",
           "n_train", "n_test", "steps_per_epoch", "full_steps"}


def test_every_computed_number_in_a_note_is_checked_here() -> None:
    """A note that prints a new derived number needs a check above (else it could drift unseen)."""
    used = set()
    for spec in SPECS.values():
        used |= set(placeholder_names(spec.notes)) - set(spec.placeholder_values())
    assert used and used <= CHECKED, sorted(used - CHECKED)


def test_no_hand_typed_privacy_numbers_are_left_in_the_thesis_notes() -> None:
    """The raw notes print (q, T), σ and ε by placeholder only (the thesis's own σ and (q, T) are paper values)."""
    for experiment_id in ("thesis-table-3.1", "thesis-table-3.2", "thesis-table-3.3", "thesis-table-3.4"):
        (line,) = [ln for ln in SPECS[experiment_id].notes.splitlines() if "privacy numbers" in ln]
        actual = re.sub(r"\{[A-Za-z_]\w*(:[^{}\s]+)?\}", "", line.split("actual Opacus", 1)[1]).replace("1/", "")
        assert not re.search(r"\d", actual), actual


@pytest.mark.data
def test_the_notes_n_fit_is_the_rows_algorithm_2_fits_on(data_mirror, monkeypatch) -> None:
    """Loaded data, split by the study itself: the fit part has the notes' n_fit rows in both modes."""
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    from repro.engine.identity import stable_words
    from repro.engine.trial import StreamSeed
    from repro.studies.thesis.part1_tables import prepare

    for experiment_id in ("thesis-table-3.1", "thesis-table-3.3"):
        spec = SPECS[experiment_id]
        numbers, dataset = spec.note_numbers(), spec.fixed_params("full")["dataset"]
        for data, key in (("clean", "n_fit"), ("authors", "authors_n_fit")):
            _, sp, _ = prepare(dataset, StreamSeed((0, *stable_words("notes", dataset, data))), 0, data)
            assert sp.train.size == numbers[key], (experiment_id, data)


def test_a_dataset_without_a_row_count_gives_the_formula_marked_needs_the_data() -> None:
    p = dict(SPECS["thesis-table-3.1"].fixed_params("full"), dataset="compas")
    assert registry.get_dataset("compas").rows() is None
    numbers = part1_tables.note_numbers(p)
    assert set(part1_tables.NOTE_NUMBERS) <= set(numbers)
    assert "(needs the data)" in numbers["n_fit"] and "(needs the data)" in numbers["sigma"]
    assert render_notes("n_fit = {n_fit:,}, σ = {sigma:.3f}", numbers).count("(needs the data)") == 2


# --------------------------------------------------------------------------- the placeholders' rules

TOY = '''id = "m"
title = "t"
document = "d"
section = "s"
spec = "x"
reproduces = "r"
kind = "table"
trial = "repro._testing.noted"
notes = "NOTES"
[params]
x = 1.5
[profiles.smoke]
seeds = 1
params = { x = 9.0 }
[profiles.full]
seeds = 2
[[metrics]]
name = "value"
description = "v"
'''


def _toy(tmp_path: Path, notes: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(TOY.replace("NOTES", notes), encoding="utf-8")
    return path


def test_a_study_number_fills_its_placeholder_with_a_format(tmp_path: Path) -> None:
    spec = load_experiment(_toy(tmp_path, "x = {x}, 2x = {double:.2f} ({double}); n = {formula:,}; {{double}}"))
    assert spec.rendered_notes() == "x = 1.5, 2x = 3.00 (3.0); n = 2 · rows (needs the data); {double}"
    study_of(spec)   # the study's declaration agrees with the file


def test_a_misspelt_study_number_or_a_bad_format_is_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(ExperimentFileError, match=r"placeholder \{doubel\} names no .*known: double, formula, x"):
        load_experiment(_toy(tmp_path, "2x = {doubel}"))
    with pytest.raises(ExperimentFileError, match=r"placeholder \{double:\.3q\}: not a number format"):
        load_experiment(_toy(tmp_path, "2x = {double:.3q}"))
    # a study that computes no such number: the file names a number of another study
    with pytest.raises(ExperimentFileError, match=r"placeholder \{double\} names no"):
        load_experiment(_write_other(tmp_path))


def _write_other(tmp_path: Path) -> Path:
    path = tmp_path / "other" / "m.toml"
    path.parent.mkdir()
    path.write_text(TOY.replace("NOTES", "{double}").replace("repro._testing.noted", "repro._testing.noop"),
                    encoding="utf-8")
    return path


def test_figure_5_s_split_and_steps_in_its_notes_are_the_code_s() -> None:
    """DP-FERMI Figure 5's notes print the split of the registered usable images and the steps per epoch and of
    the full run; recomputed here from their closed forms (3:1 shuffled split, floor; shuffled epochs with a
    partial last batch, so ⌈n_train / B⌉ steps an epoch)."""
    spec = SPECS["dpfermi-fig-5"]
    p = spec.fixed_params("full")
    n_train = math.floor(p["train_fraction"] * 23_705)
    per_epoch = math.ceil(n_train / p["batch_size"])
    notes = spec.rendered_notes()
    assert f"({n_train:,} / {23_705 - n_train:,};" in notes
    assert f"3 epochs of {per_epoch} steps (the paper: {p['epochs']} epochs,\n  {per_epoch * p['epochs']:,} steps)" in notes
    assert spec.profiles["cpu"].params["epochs"] == 3


@pytest.mark.data
def test_figure_5_s_registered_row_count_is_the_loaded_index(data_mirror: Path, isolated_data_env: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from repro.datasets import utkface

    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    assert utkface.load_index().n == registry.get_dataset("utkface").n_rows
