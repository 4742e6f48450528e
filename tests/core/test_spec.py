"""The experiment loader: valid files load; every schema violation names the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import (
    ExperimentFileError,
    InvalidParameterError,
    UnknownExperimentError,
    UnknownVariantError,
)
from repro.spec import format_setting, get_experiment, load_all, load_experiment, validate_param

FIXTURE = Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml"


def write(tmp_path: Path, text: str, name: str = "toy") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def base_text() -> str:
    return FIXTURE.read_text()


def test_fixture_loads_and_expands() -> None:
    spec = load_experiment(FIXTURE)
    assert spec.id == "toy" and spec.default_variant == "paper"
    cells = spec.expand_cells("smoke")
    assert cells == [{"method": m, "epsilon": e} for m in ("a", "b") for e in (1.0, 3.0)]
    assert spec.fixed_params("smoke") == {"x": 1.0}
    assert spec.profile("full").seeds == 5


def test_every_repo_experiment_file_is_valid() -> None:
    specs = load_all(Path(__file__).parents[2] / "experiments")
    assert "compat-impossibility" in specs
    for spec in specs.values():
        assert spec.path is not None and spec.path.stem == spec.id
        for profile in ("smoke", "full"):
            assert spec.expand_cells(profile)


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda t: t.replace('title = "Toy experiment"\n', ""), "title"),
        (lambda t: t.replace('kind = "simulation"', 'kind = "poem"'), "kind"),
        (lambda t: 'bogus = 1\n' + t, "bogus"),
        (lambda t: t.replace("seeds = 3", "seeds = 0"), "profiles.smoke.seeds"),
        (lambda t: t.replace("seeds = 3", 'seeds = "three"'), "profiles.smoke.seeds"),
        (lambda t: t.replace('metric = "value"', 'metric = "nope"'), "references[0].metric"),
        (lambda t: t.replace("epsilon = [1.0, 3.0]", "epsilon = []"), "grid.epsilon"),
        (lambda t: t.replace("[profiles.full]\nseeds = 5\n", ""), "profiles.full"),
        (lambda t: t.replace('id = "toy"', 'id = "other"'), "id"),
    ],
)
def test_bad_files_name_file_and_key(tmp_path: Path, edit, key: str) -> None:
    path = write(tmp_path, edit(base_text()))
    with pytest.raises(ExperimentFileError) as info:
        load_experiment(path)
    message = str(info.value)
    assert str(path) in message and f"'{key}'" in message


def test_invalid_toml_names_file(tmp_path: Path) -> None:
    path = write(tmp_path, "id = \n")
    with pytest.raises(ExperimentFileError, match="not valid TOML") as info:
        load_experiment(path)
    assert str(path) in str(info.value)


def test_negative_epsilon_in_file_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, base_text().replace("epsilon = [1.0, 3.0]", "epsilon = [1.0, -3.0]"))
    with pytest.raises(InvalidParameterError, match="must be > 0; got -3.0"):
        load_experiment(path)


@pytest.mark.parametrize(("key", "value"), [("epsilon", 0), ("eps", -1.0), ("eps_prime", 0.0),
                                            ("delta", 0), ("delta", 1), ("delta_rank", 1.5)])
def test_privacy_parameter_rules(key: str, value: float) -> None:
    with pytest.raises(InvalidParameterError):
        validate_param(key, value)


@pytest.mark.parametrize(("key", "value"), [("epsilon", 0.01), ("delta", 1e-5), ("alpha_eps", 0.9),
                                            ("name", "x"), ("deltas_seen", 7)])
def test_valid_parameters_pass(key: str, value: float) -> None:
    validate_param(key, value)


def test_unknown_id_suggests(toy_env: Path) -> None:
    with pytest.raises(UnknownExperimentError, match="did you mean 'toy'"):
        get_experiment("tyo")


def test_unknown_variant_lists_valid() -> None:
    spec = load_experiment(FIXTURE)
    with pytest.raises(UnknownVariantError, match="valid: paper"):
        spec.check_variant("reference")


def test_overrides_replace_grid_axis_and_fixed_param() -> None:
    spec = load_experiment(FIXTURE)
    cells = spec.expand_cells("smoke", {"epsilon": [0.5]})
    assert cells == [{"method": "a", "epsilon": 0.5}, {"method": "b", "epsilon": 0.5}]
    assert spec.fixed_params("smoke", {"x": [2.0]}) == {"x": 2.0}


def test_setting_string_is_sorted_and_excludes_method() -> None:
    assert format_setting({"method": "m", "zeta": "1/10", "eps": 3.0}) == "eps=3.0;zeta=1/10"


def test_aliases_resolve_and_must_be_unique(tmp_path: Path) -> None:
    write(tmp_path, 'aliases = ["toy-figure-1"]\n' + base_text())
    assert get_experiment("toy-figure-1", tmp_path).id == "toy"
    other = base_text().replace('id = "toy"', 'id = "toy2"')
    write(tmp_path, 'aliases = ["toy-figure-1"]\n' + other, name="toy2")
    with pytest.raises(ExperimentFileError, match="already used"):
        load_all(tmp_path)


def test_top_level_key_swallowed_by_params_table_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, base_text().replace("x = 1.0\n", 'x = 1.0\ncells = [{ epsilon = 1.0 }]\n', 1))
    with pytest.raises(ExperimentFileError, match="params.cells.*move it above"):
        load_experiment(path)


def test_optional_cpu_profile(tmp_path: Path) -> None:
    """``cpu`` is an optional third profile: it loads when declared, an unknown name is still rejected,
    and asking a file without it for ``cpu`` names the valid profiles."""
    text = base_text() + "\n[profiles.cpu]\nseeds = 2\n[profiles.cpu.params]\nx = 2.0\n"
    spec = load_experiment(write(tmp_path, text))
    assert spec.profile("cpu").seeds == 2 and spec.fixed_params("cpu") == {"x": 2.0}
    with pytest.raises(ExperimentFileError, match="profiles.gpu"):
        load_experiment(write(tmp_path, base_text() + "\n[profiles.gpu]\nseeds = 1\n", name="toy"))
    plain = load_experiment(FIXTURE)
    with pytest.raises(InvalidParameterError, match="has no profile 'cpu'; valid: smoke, full"):
        plain.profile("cpu")
