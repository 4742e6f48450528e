"""Declared methods (issue 34, item 1): a method file names its learner, knob and parameters; the study's one
generic run builds the call, scores every knob point and writes the privacy row."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.learners.baselines import train_jagielski_2019, train_pf_ld, train_tran_2021a
from repro.privacy.guarantee import Guarantee, Label, Neighbouring
from repro.studies.dpfermi import methods as dpfermi_methods
from repro.studies.dpfermi._tabular import metrics, run_declared
from repro.studies.methods import BatchedRun, Declared, Knob, KnobFit, Learner, Method, Param, Trial
from repro.studies.thesis import methods as thesis_methods
from repro.studies.thesis.methods._fermi import Fermi

GUARANTEE = Guarantee(math.inf, 0.0, Label.ACCOUNTED, Neighbouring.NONE)

#: the baselines' parameters as the experiment files give them (TOML ints where the learner takes floats)
PARAMS = {"epsilon": 1, "fairness": "eo", "batch_size": 256, "baseline_lr": 1, "baseline_clip": 2,
          "baseline_epochs": 3, "tran_gammas": [0, 1], "pf_ld_dual_lr": 1, "jagielski_bounds": [0, 10],
          "jagielski_rounds": 2, "jagielski_learner_epochs": 1}


class _Ctx:
    """A trial context that counts the generators it hands out."""

    def __init__(self) -> None:
        self.drawn: list[np.random.Generator] = []

    def rng(self) -> np.random.Generator:
        self.drawn.append(np.random.default_rng(len(self.drawn)))
        return self.drawn[-1]


def test_a_learner_reads_its_knob_parameters_and_constants() -> None:
    learner = Learner(lambda *a, **k: None, knob=Knob("gammas", "tran_gammas"), predict="models",
                      params={"epochs": Param("baseline_epochs", int), "lr": Param("baseline_lr")},
                      fixed={"fairness": "dp"})
    kwargs = learner.kwargs({**PARAMS, "baseline_epochs": 3.0})
    assert kwargs == {"gammas": [0.0, 1.0], "epochs": 3, "lr": 1.0, "fairness": "dp"}
    assert [type(v) for v in kwargs["gammas"]] == [float, float] and type(kwargs["epochs"]) is int
    assert Knob("bounds", "b", fitted="kept").points(SimpleNamespace(kept=(1.0, 2.0))) == [1.0, 2.0]


def test_a_learner_declaration_is_checked() -> None:
    with pytest.raises(InvalidParameterError, match="predict must be one of"):
        Learner(lambda: None, predict="votes")
    with pytest.raises(InvalidParameterError, match="knob"):
        Learner(lambda: None, knob=Knob("gammas", "tran_gammas"))          # a knob but one model
    with pytest.raises(InvalidParameterError, match="knob"):
        Learner(lambda: None, predict="models")                            # models but no knob


def test_the_baselines_call_their_learners_with_the_arguments_they_always_had() -> None:
    """The hand-written runs these declarations replace passed exactly these (besides ε, δ and ``rng``)."""
    sgd = {"batch_size": 256, "lr": 1.0, "clip_norm": 2.0}
    expected = {
        "tran-2021a": (train_tran_2021a, {"gammas": [0.0, 1.0], "epochs": 3, "fairness": "dp", **sgd}),
        "pf-ld": (train_pf_ld, {"fairness": "eo", "epochs": 3, "dual_lr": 1.0, **sgd}),
        "jagielski-2019": (train_jagielski_2019, {"bounds": [0.0, 10.0], "rounds": 2, "learner_epochs": 1, **sgd}),
    }
    for name, (fit, kwargs) in expected.items():
        run = dpfermi_methods.get(name).run
        assert isinstance(run, Declared) and run.runner is run_declared and run.learner.fit is fit
        got = run.learner.kwargs(PARAMS)
        assert got == kwargs and {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in kwargs.items()}


def _parts(n: int = 40, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    X, y, s = rng.normal(size=(n, 3)), rng.integers(0, 2, n), rng.integers(0, 2, n)
    return X[:30], y[:30], s[:30], X[30:], y[30:], s[30:]


class _Model:
    def __init__(self, bias: float) -> None:
        self.bias = bias

    def predict(self, X: np.ndarray) -> np.ndarray:
        return (X[:, 0] > self.bias).astype(float)


def test_the_generic_run_scores_every_knob_point_and_writes_the_privacy_row() -> None:
    calls = []

    def fit(X, y, s, **kwargs):
        calls.append((X.shape[0], kwargs))
        return SimpleNamespace(gammas=tuple(kwargs["gammas"]), models=[_Model(g) for g in kwargs["gammas"]],
                               noise_multiplier=1.5, steps=7)

    method = Method.declare(name="toy", guarantee=GUARANTEE, runner=run_declared, style={"color": "k"},
                            learner=Learner(fit, knob=Knob("gammas", "tran_gammas"), predict="models",
                                            reports=("steps", "noise_multiplier")))
    assert method.style == {"toy": {"color": "k"}} and method.record_names == ("toy",)
    ctx, parts = _Ctx(), _parts()
    records, privacy, tables = method.run(Trial({**PARAMS, "tran_gammas": [0, 0.5]}, ctx, "clean", None, parts))
    Xte, yte, ste = parts[3:]
    assert len(ctx.drawn) == 1 and calls == [(30, {"epsilon": 1.0, "delta": 1 / 30**2, "gammas": [0.0, 0.5],
                                                    "rng": ctx.drawn[0]})]
    assert records == [{"method": "toy", "knob": g, **metrics(_Model(g).predict(Xte), yte, ste, "eo")}
                       for g in (0.0, 0.5)]
    assert list(privacy[0]) == ["method", "epsilon", "delta", "n_train", "steps", "noise_multiplier", "guarantee"]
    assert privacy[0]["guarantee"] == GUARANTEE.with_epsilon(1.0, 1 / 30**2).describe() and tables == {}


def test_the_generic_run_without_a_knob_and_with_expected_predictions() -> None:
    parts = _parts(seed=1)
    Xte, yte, ste = parts[3:]
    one = Method.declare(name="one", guarantee=GUARANTEE, runner=run_declared,
                         learner=Learner(lambda X, y, s, **k: SimpleNamespace(model=_Model(0.0))))
    records, privacy, _ = one.run(Trial(PARAMS, _Ctx(), "clean", None, parts))
    assert records == [{"method": "one", **metrics(_Model(0.0).predict(Xte), yte, ste, "eo")}]
    P = np.linspace(0, 1, 2 * Xte.shape[0]).reshape(-1, 2)
    mix = Method.declare(name="mix", guarantee=GUARANTEE, runner=run_declared,
                         learner=Learner(lambda X, y, s, **k: SimpleNamespace(bounds=(0.0, 10.0),
                                                                              predict_proba=lambda X: P),
                                         knob=Knob("bounds", "jagielski_bounds"), predict="proba"))
    records, _, _ = mix.run(Trial(PARAMS, _Ctx(), "clean", None, parts))
    assert records == [{"method": "mix", "knob": b, **metrics(P[:, j], yte, ste, "eo")}
                       for j, b in enumerate((0.0, 10.0))]


def test_a_batched_method_alone_is_prepare_then_one_fit_many_call() -> None:
    seen = []

    def prepare(trial):
        return KnobFit("X", "y", "s", list(trial.parts), "rng", finish=lambda results: ("done", results))

    def fit_many(X, y, s, configs, generators):
        seen.append((X, y, s, configs, generators))
        return [[c * 10 for c in configs[0]]]

    method = Method.batched(name="b", prepare=prepare, fit_many=fit_many, guarantee=GUARANTEE)
    assert isinstance(method.run, BatchedRun) and method.prepare is prepare and method.fit_many is fit_many
    assert method.run(Trial({}, None, "clean", None, (1, 2))) == ("done", [10, 20])
    assert seen == [("X", "y", "s", [[1, 2]], ["rng"])]
    assert dpfermi_methods.get("dp-fermi").run == BatchedRun(dpfermi_methods.get("dp-fermi").prepare,
                                                             dpfermi_methods.get("dp-fermi").fit_many)


def test_the_thesis_dp_fermi_rows_are_declared() -> None:
    rows = {name: m.run.learner for name, m in thesis_methods.methods().items() if isinstance(m.run, Declared)}
    assert rows == {"DP-FERMI": Fermi("reference"), "DP-FERMI (other group order)": Fermi("reference", True),
                    "DP-FERMI (strict)": Fermi("strict-all")}
    with pytest.raises(InvalidParameterError):
        Fermi("strict-all", other_group=True)
    with pytest.raises(InvalidParameterError):
        Fermi("strict")


def test_the_guide_shows_a_baseline_file_as_it_is() -> None:
    """docs/adding-an-experiment.md quotes tran_2021a.py's declaration; the quote cannot drift from the file."""
    import re
    import textwrap
    from pathlib import Path

    root = Path(__file__).parents[2]
    guide = (root / "docs" / "adding-an-experiment.md").read_text(encoding="utf-8")
    quoted = re.search(r"  ```python\n(  METHOD = Method\.declare\(.*?)  ```", guide, re.S)
    assert quoted, "the guide no longer quotes a declared method"
    source = (root / "repro" / "studies" / "dpfermi" / "methods" / "tran_2021a.py").read_text(encoding="utf-8")
    assert textwrap.dedent(quoted.group(1)) in source
