"""The experiment loader: valid files load; every schema violation names the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.engine.runner import RunConfig, plan_trials
from repro.engine.spec import (
    format_setting,
    get_experiment,
    load_all,
    load_experiment,
    skipped_files,
    validate_param,
)
from repro.errors import (
    ExperimentFileError,
    InvalidParameterError,
    UnknownExperimentError,
    UnknownVariantError,
)

EXPERIMENTS = Path(__file__).parents[2] / "experiments"

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
    specs = load_all(EXPERIMENTS, strict=True)
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


def test_overrides_of_listed_cell_keys_touch_only_the_cells_that_have_them() -> None:
    """A key of a table's listed cells: ``lambda`` leaves the λ-free Algorithm 2 row as it is (its identity and
    seed), and ``method=X`` keeps X's own rows instead of turning the Algorithm 2 row into an X row without λ
    (which crashed at trial time)."""
    spec = get_experiment("thesis-table-3.1", EXPERIMENTS)

    def rows(overrides: dict) -> list[tuple]:
        cells = spec.expand_cells("full", spec.coerce_overrides(overrides))
        return [(c["method"], c.get("lambda")) for c in cells if c["data"] == "authors"]

    plain = rows({})
    assert ("Algorithm 2", None) in plain
    assert rows({"lambda": ["1"]}) == [("Algorithm 2", None), ("DP-FERMI", 1.0), ("DP-FERMI (other group order)", 1.0),
                                       ("DP-FERMI (strict)", 1.0)]
    assert rows({"method": ["DP-FERMI"]}) == [r for r in plain if r[0] == "DP-FERMI"]
    assert rows({"method": ["Algorithm 2"]}) == [("Algorithm 2", None)]
    assert rows({"method": ["DP-FERMI (strict)"], "lambda": ["0.7"]}) == [("DP-FERMI (strict)", 0.7)]
    cells = spec.expand_cells("full", spec.coerce_overrides({"lambda": ["1"]}))
    assert all("lambda" not in c for c in cells if c["method"] == "Algorithm 2")


def test_overrides_that_leave_no_cell_are_refused(tmp_path: Path) -> None:
    text = base_text().replace('[grid]\nmethod = ["a", "b"]\nepsilon = [1.0, 3.0]\n', "").replace(
        "[params]", 'cells = [{ method = "a", epsilon = 1.0 }, { method = "b", epsilon = 3.0, k = 2 }]\n[params]')
    spec = load_experiment(write(tmp_path, text))
    assert spec.expand_cells("smoke", spec.coerce_overrides({"method": ["a"]})) == [{"method": "a", "epsilon": 1.0}]
    # method=a keeps a's row; epsilon=3 is listed only in a row that also has k: nothing is left to run
    with pytest.raises(InvalidParameterError, match="no cell of 'toy' has these values together"):
        spec.expand_cells("smoke", spec.coerce_overrides({"method": ["a"], "epsilon": ["3"]}))


def test_a_bad_number_names_the_show_command_and_its_type() -> None:
    spec = load_experiment(FIXTURE)
    with pytest.raises(InvalidParameterError, match=r"give a float value \(`repro show toy` lists the settable keys\)"):
        spec.coerce_overrides({"epsilon": ["abc"]})


def test_rational_domains_type_every_spelling_as_one_value_and_check_the_range() -> None:
    """compat-impossibility's ζ, α and grid step were domain "any": zeta=2, alpha=-5 and grid_step=0 passed the
    check and failed (or ran half the trials) at trial time."""
    spec = get_experiment("compat-impossibility", EXPERIMENTS)
    typed = spec.coerce_overrides({"zeta": ["0.1", "3/16"], "alpha": ["2/20"], "grid_step": ["1/4"]})
    assert typed == {"zeta": ["1/10", "3/16"], "alpha": ["1/10"], "grid_step": ["1/4"]}
    # the file's own values keep their text, so its trials keep their identities
    assert {c["zeta"] for c in spec.expand_cells("full")} == {"1/100", "1/10", "3/16"}
    assert spec.fixed_params("full")["grid_step"] == "1/10"
    for item, message in (("zeta=2", "must be <= 3/16"), ("zeta=0", "must be > 0"), ("alpha=-5", "must be > 0"),
                          ("grid_step=0", "1/k"), ("grid_step=2/5", "1/k"), ("zeta=abc", "rational number"),
                          ("zeta=1/0", "rational number"), ("zeta=0.1,1/10", "given twice")):
        key, value = item.split("=")
        with pytest.raises(InvalidParameterError, match=message):
            spec.coerce_overrides({key: value.split(",")})


def test_integer_step_domains_refuse_values_off_the_step_before_any_trial() -> None:
    """dpfermi-fig-5 declared resolution >= 1 and subsample >= 0: resolution=12 and subsample=1 passed the check
    and failed inside the first trial (the CNN needs a multiple of 8; one image cannot hold every race group)."""
    spec = get_experiment("dpfermi-fig-5", EXPERIMENTS)
    assert spec.coerce_overrides({"resolution": ["16", "32"], "subsample": ["0", "400"]}) == {
        "resolution": [16, 32], "subsample": [0, 400]}
    for item, message in (("resolution=12", "must be a multiple of 8"), ("resolution=0", "must be >= 8"),
                          ("subsample=1", "must be >= 200")):
        key, value = item.split("=")
        with pytest.raises(InvalidParameterError, match=message):
            spec.coerce_overrides({key: [value]})


def test_a_step_needs_an_integer_domain(tmp_path: Path) -> None:
    path = write(tmp_path, base_text() + '\n[domains]\nx = { min = 0, multiple_of = 8 }\n')
    with pytest.raises(ExperimentFileError, match="multiple_of.*needs integer = true"):
        load_experiment(path)


def test_setting_string_is_sorted_and_excludes_method() -> None:
    assert format_setting({"method": "m", "zeta": "1/10", "eps": 3.0}) == "eps=3.0;zeta=1/10"


def test_aliases_resolve_and_must_be_unique(tmp_path: Path) -> None:
    write(tmp_path, 'aliases = ["toy-figure-1"]\n' + base_text())
    assert get_experiment("toy-figure-1", tmp_path).id == "toy"
    other = base_text().replace('id = "toy"', 'id = "toy2"')
    write(tmp_path, 'aliases = ["toy-figure-1"]\n' + other, name="toy2")
    with pytest.raises(ExperimentFileError, match="already used"):
        load_all(tmp_path, strict=True)
    assert set(load_all(tmp_path)) == {"toy"}  # the clashing file is skipped, the first one stays usable


def test_top_level_key_swallowed_by_params_table_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, base_text().replace("x = 1.0\n", 'x = 1.0\ncells = [{ epsilon = 1.0 }]\n', 1))
    with pytest.raises(ExperimentFileError, match="params.cells.*move it above"):
        load_experiment(path)


# --- issue #15 items 8 and 11: overrides checked against domains; bad files skipped ------------


@pytest.mark.parametrize(
    ("experiment_id", "override", "message"),
    [
        ("thesis-table-5.1", {"epsilons": ["abc"]}, "epsilons"),
        ("thesis-fig-5.1", {"epsilon": ["abc"]}, "expected a number, got 'abc'"),
        ("thesis-fig-5.1", {"method": ["FOO"]}, "not an allowed value"),
        ("thesis-fig-5.1", {"k": [3]}, r"allowed: 2\b"),
        ("bandit-regret", {"context_sampling": ["bootstrap"]}, "fresh, reference-bootstrap"),
        ("thesis-table-3.1", {"epochs": [2.5]}, "expected an integer"),
    ],
)
def test_bad_overrides_are_rejected_before_planning(experiment_id: str, override, message: str) -> None:
    spec = load_all(EXPERIMENTS, strict=True)[experiment_id]
    with pytest.raises(InvalidParameterError, match=message):
        plan_trials(spec, RunConfig(overrides=override))


@pytest.mark.parametrize(
    ("experiment_id", "override"),
    [
        ("thesis-fig-5.1", {"epsilon": [1, 2.5]}),
        ("thesis-fig-5.1", {"method": ["OPT", "GRR"]}),
        ("bandit-regret", {"context_sampling": ["reference-bootstrap"], "acs_dir": ["/some/where"]}),
        ("compat-impossibility", {"zeta": ["1/8"]}),
        ("thesis-table-3.1", {"split": ["per-repetition"]}),
    ],
)
def test_valid_overrides_pass(experiment_id: str, override) -> None:
    spec = load_all(EXPERIMENTS, strict=True)[experiment_id]
    assert plan_trials(spec, RunConfig(overrides=override))


def test_explicit_domain_table(tmp_path: Path) -> None:
    text = base_text().replace("[params]\n", "[domains]\nx = { min = 0, max = 5 }\n\n[params]\n")
    spec = load_experiment(write(tmp_path, text))
    spec.validate_overrides({"x": [0, 5.0]})
    with pytest.raises(InvalidParameterError, match="must be <= 5"):
        spec.validate_overrides({"x": [6]})
    with pytest.raises(InvalidParameterError, match="expected a number"):
        spec.validate_overrides({"x": ["big"]})
    bad = base_text().replace("[params]\n", "[domains]\nx = 3\n\n[params]\n")
    with pytest.raises(ExperimentFileError, match="domains.x"):
        load_experiment(write(tmp_path, bad, name="toy"))


def test_malformed_file_is_skipped_and_named(tmp_path: Path, caplog) -> None:
    write(tmp_path, base_text())
    write(tmp_path, base_text().replace('id = "toy"', 'id = "broken"').replace('kind = "simulation"',
                                                                              'kind = "poem"'), name="broken")
    with caplog.at_level("WARNING", logger="repro.engine.spec"):
        specs = load_all(tmp_path)
    assert set(specs) == {"toy"}
    assert "broken.toml" in caplog.text
    assert [p.name for p in skipped_files(tmp_path)] == ["broken.toml"]
    assert get_experiment("toy", tmp_path).id == "toy"
    with pytest.raises(ExperimentFileError, match="'kind'"):  # asking for it names its problem
        get_experiment("broken", tmp_path)


def test_unknown_id_counts_experiments_not_aliases() -> None:
    specs = load_all(EXPERIMENTS, strict=True)
    assert any(s.aliases for s in specs.values())
    with pytest.raises(UnknownExperimentError, match=f"see all {len(specs)}$"):
        get_experiment("qqqqqqqqqqqqqqqqqqqqqqqq", EXPERIMENTS)


def test_list_parameter_override_sets_the_list() -> None:
    spec = load_all(EXPERIMENTS, strict=True)["thesis-table-5.1"]
    assert spec.fixed_params("smoke", {"epsilons": [0.2, 1]})["epsilons"] == [0.2, 1]


def test_every_declared_value_is_an_accepted_override() -> None:
    # the inferred domains must never reject what an experiment file itself declares
    for spec in load_all(EXPERIMENTS, strict=True).values():
        for profile in ("smoke", "full"):
            for key in spec.settable_keys(profile):
                for value in spec.declared_values(key):
                    spec.validate_overrides({key: [value]})


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


def test_explicit_cells_cross_the_grid_axes(tmp_path: Path) -> None:
    text = base_text().replace('[grid]\nmethod = ["a", "b"]\nepsilon = [1.0, 3.0]\n', '[grid]\ndata = ["authors", "clean"]\n')
    text = text.replace("trial = ", 'cells = [{ method = "a" }, { method = "b", epsilon = 3.0 }]\ntrial = ', 1)
    spec = load_experiment(write(tmp_path, text))
    cells = spec.expand_cells("full")
    assert cells == [{"method": "a", "data": "authors"}, {"method": "a", "data": "clean"},
                     {"method": "b", "epsilon": 3.0, "data": "authors"}, {"method": "b", "epsilon": 3.0, "data": "clean"}]
