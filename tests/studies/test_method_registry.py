"""Method registries: a study's methods are the files of its ``methods/`` folder; reports draw every method."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import pandas as pd
import pytest

from repro.engine import cache
from repro.errors import UnknownNameError
from repro.privacy.guarantee import Guarantee, Label, Neighbouring
from repro.studies import methods as registry
from repro.studies.dpfermi import methods as dpfermi_methods
from repro.studies.thesis import methods as thesis_methods

matplotlib.use("Agg")


def _method_files(package) -> set[str]:
    """Modules of the folder that assign METHOD at top level (read from the source, not the registry)."""
    out = set()
    for path in Path(package.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "METHOD" for t in n.targets)
               for n in tree.body):
            out.add(f"{package.__name__}.{path.stem}")
    return out


@pytest.mark.parametrize("package", [thesis_methods, dpfermi_methods])
def test_every_method_file_is_found(package) -> None:
    import importlib

    found = package.methods()
    files = _method_files(package)
    assert len(found) == len(files)
    for module in files:
        assert found[importlib.import_module(module).METHOD.name] is importlib.import_module(module).METHOD
    for method in found.values():
        assert isinstance(method.guarantee_for("reference" if package is dpfermi_methods else None), Guarantee)


def test_known_methods_and_one_line_errors() -> None:
    assert list(dpfermi_methods.methods()) == ["tran-2021a", "jagielski-2019", "dp-fermi", "pf-ld"]
    with pytest.raises(UnknownNameError) as err:
        thesis_methods.get("DP-FERMl")
    assert "\n" not in str(err.value) and "Algorithm 2" in str(err.value) and "--with" in str(err.value)


def test_method_files_are_trial_code() -> None:
    cache.trial_code_modules.cache_clear()
    for study, package in (("repro.studies.thesis.part1_tables", thesis_methods),
                           ("repro.studies.dpfermi.tradeoff_figures", dpfermi_methods)):
        assert _method_files(package) <= set(cache.trial_code_modules(study))


def test_adding_a_method_is_one_file(tmp_path, monkeypatch) -> None:
    (tmp_path / "coin_flip.py").write_text(
        "import math\n"
        "from repro.privacy.guarantee import Guarantee, Label, Neighbouring\n"
        "from repro.studies.methods import Method\n"
        "METHOD = Method(name='coin flip', run=lambda *a: None, order=5,\n"
        "                guarantee=Guarantee(math.inf, 0.0, Label.ACCOUNTED, Neighbouring.NONE))\n", encoding="utf-8")
    monkeypatch.setattr(thesis_methods, "__path__", [*thesis_methods.__path__, str(tmp_path)])
    registry.discover.cache_clear()
    try:
        found = thesis_methods.methods()
        assert list(found)[0] == "coin flip" and thesis_methods.get("coin flip").label() == "accounted"
    finally:
        registry.discover.cache_clear()


def _thesis_bundle(trials: pd.DataFrame):
    spec = SimpleNamespace(params={"dataset": "adult", "eps_prime": 3, "delta": 1e-5}, references=(), id="t")
    return SimpleNamespace(trials=trials, spec=spec, variant="calibrated")


def test_thesis_figure_draws_every_method_found() -> None:
    """Part I's figure had a fixed method tuple and dropped any other method; now it draws them all."""
    import matplotlib.pyplot as plt

    from repro.studies.thesis import part1_tables_report as rep

    rows = [{"method": "Algorithm 2", "accuracy": 0.8, "sp_gap": 0.01, "eps_label": "accounted", "lambda": math.nan},
            {"method": "DP-FERMI", "accuracy": 0.82, "sp_gap": 0.05, "eps_label": "nominal", "lambda": 0.5},
            {"method": "DP-FERMI", "accuracy": 0.81, "sp_gap": 0.03, "eps_label": "nominal", "lambda": 1.0},
            {"method": "new method", "accuracy": 0.7, "sp_gap": 0.02, "eps_label": "accounted", "lambda": math.nan},
            {"method": "Mine (yours)", "accuracy": 0.75, "sp_gap": 0.04, "eps_label": Label.USER_DECLARED.value,
             "lambda": math.nan}]
    fig, ax = plt.subplots()
    rep._draw(ax, _thesis_bundle(pd.DataFrame(rows * 2)), None)
    labels = ax.get_legend_handles_labels()[1]
    plt.close(fig)
    assert labels == ["DP-FERMI (ours)", "Algorithm 2 (ours)", "new method (ours)", "Mine (yours)"]


def test_dpfermi_figure_draws_every_method_found() -> None:
    import matplotlib.pyplot as plt

    from repro.studies.dpfermi import tradeoff_figures_report as rep

    rows = []
    for method, knobs, label in (("dp-fermi", (0.0, 0.5), "nominal"), ("pf-ld", (math.nan,), "nominal"),
                                 ("Mine (yours)", (math.nan,), Label.USER_DECLARED.value)):
        for k in knobs:
            rows.append({"method": method, "knob": k, "epsilon": 1.0, "error": 0.2, "violation": 0.05,
                         "eps_label": label})
    trials = pd.DataFrame(rows * 2)
    assert rep.user_methods(trials) == ["Mine (yours)"]
    fig, ax = plt.subplots()
    rep._panel(ax, trials, None, pd.DataFrame(columns=["method", "epsilon", "error", "violation"]), 1.0, [])
    labels = ax.get_legend_handles_labels()[1]
    plt.close(fig)
    assert labels == ["DP-FERMI (ours)", "Tran et al. (2021b), PF-LD (ours)", "Mine (yours)"]


def test_guarantee_per_variant() -> None:
    method = dpfermi_methods.get("dp-fermi")
    assert method.label("reference") == "nominal" and method.label("strict-all") == "public-statistics caveat"
    assert method.guarantee_for("strict").relation is Neighbouring.REPLACE_SENSITIVE_ATTRIBUTE
