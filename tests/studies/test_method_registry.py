"""Method registries: a study's methods are the files of its ``methods/`` folder; reports draw every method."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import numpy as np
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


@pytest.mark.parametrize("package", [thesis_methods, dpfermi_methods])
def test_every_method_has_a_unique_name_a_style_and_labels(package) -> None:
    """Properties, not the list: adding a correct method file changes no test."""
    found = package.methods()
    assert found and len({m.name for m in found.values()}) == len(found)
    records = [r for m in found.values() for r in m.record_names]
    assert len(set(records)) == len(records)                       # no two methods write the same rows
    variants = ("reference", "strict", "strict-all") if package is dpfermi_methods else (None,)
    for method in found.values():
        assert set(method.style) == set(method.record_names)
        for record, style in method.style.items():
            assert isinstance(style, registry.Style) and style["color"]
            assert (style.get("label") or record).strip()          # what the legend shows
        for variant in variants:                                   # the ε label every record carries
            assert method.label(variant) in {label.value for label in Label}


def test_an_unknown_method_is_a_one_line_error() -> None:
    with pytest.raises(UnknownNameError) as err:
        thesis_methods.get("DP-FERMl")
    assert "\n" not in str(err.value) and "Algorithm 2" in str(err.value) and "--with" in str(err.value)


class _Ctx:
    """The trial context a method reads: fresh generators and the repetition."""

    repetition = 0

    def __init__(self) -> None:
        self.count = 0

    def rng(self, *labels, scope: str = "trial") -> np.random.Generator:
        self.count += 1
        return np.random.default_rng(self.count)


#: every parameter the figures' methods read, at toy sizes (DP-FERMI's reference at its fixed (L, D, η_θ))
_FIGURE_PARAMS = {"epsilon": 2.0, "fairness": "dp", "batch_size": 32, "epochs": 2, "lr_theta": 0.005, "lr_w": 0.01,
                  "lambdas": [0.0, 1.0], "strict_lambdas": [0.0, 1.0], "hyperparameters": ["fixed"], "fixed_clip": 5.0,
                  "fixed_radius": 5.0, "baseline_lr": 0.1, "baseline_clip": 1.0, "baseline_epochs": 2,
                  "tran_gammas": [0.0, 1.0], "pf_ld_dual_lr": 0.5, "jagielski_bounds": [0.0, 1.0],
                  "jagielski_rounds": 2, "jagielski_learner_epochs": 1}


@pytest.mark.parametrize(("name", "variant"), [(n, v) for n, m in dpfermi_methods.methods().items()
                                               for v in (("reference", "strict") if not m.variant_independent
                                                         else ("reference",))])
def test_every_figure_method_runs_on_a_tiny_dataset(name: str, variant: str) -> None:
    rng = np.random.default_rng(0)
    X, s = rng.normal(size=(160, 3)), (rng.random(160) < 0.4).astype(np.int64)
    y = (X[:, 0] + 0.5 * s + rng.normal(size=160) > 0).astype(np.int64)
    parts = (X[:120], y[:120], s[:120], X[120:], y[120:], s[120:])
    method = dpfermi_methods.get(name)
    records, privacy, _ = method.run(registry.Trial({**_FIGURE_PARAMS, "variant": variant}, _Ctx(), "clean", None, parts))
    assert records and privacy and all(r["method"] == name for r in records)
    assert all(0 <= r["error"] <= 1 and 0 <= r["violation"] <= 1 for r in records)
    assert all(row["epsilon"] == 2.0 and row["guarantee"] for row in privacy)


def _toy_thesis():
    from repro.datasets.tabular import Split, TabularDataset

    rng = np.random.default_rng(0)
    n = 400
    s = rng.integers(0, 2, n)
    X = np.column_stack([rng.normal(size=n) + 0.5 * s, rng.normal(size=n)])
    y = (X[:, 0] + rng.normal(scale=0.5, size=n) > 0.25).astype(np.int64)
    ds = TabularDataset(name="toy", X=X, y=y, s=s.astype(np.int64), feature_names=("a", "b"), numeric_columns=(0, 1),
                        group_names=("female", "male"), description="toy", source="none")
    idx = rng.permutation(n)
    sp = Split(full_train=np.sort(idx[:300]), train=np.sort(idx[:200]), post=np.sort(idx[200:300]),
               test=np.sort(idx[300:]))
    return ds, sp, X


#: every parameter the thesis tables' methods read, at toy sizes
_TABLE_PARAMS = {"lambda": 1.0, "epochs": 2, "batch_size": 64, "eps_prime": 3.0, "delta": 1e-5, "fermi_lr_theta": 0.005,
                 "fermi_lr_w": 0.01, "strict_clip_norm": 1.5, "fermi_code_group": "male", "fermi_lipschitz": 5.0,
                 "fermi_w_radius": 5.0, "variant": "calibrated", "clip_norm": 1.5, "lr": 0.01, "sampling_rule": "opacus",
                 "thesis_sigma": 1.0, "eps0": 0.5, "eps1": 0.5}


@pytest.mark.parametrize("name", list(thesis_methods.methods()))
def test_every_table_method_runs_on_a_tiny_dataset(name: str) -> None:
    ds, sp, X = _toy_thesis()
    out = thesis_methods.get(name).run(registry.Trial(dict(_TABLE_PARAMS), _Ctx(), "clean", ds, (sp, X)))
    assert {r["method"] for r in out.records} == set(thesis_methods.get(name).record_names)
    assert all(0 <= r["accuracy"] <= 1 and r["eps_label"] for r in out.records)


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
