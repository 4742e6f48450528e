"""Declared methods: a method file names its estimator class, knob and parameters; the study's one generic run
builds the estimator, fits its knob's path, scores every knob point and writes the privacy row."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.estimators import (
    DPFermiClassifier,
    DPSGDLogisticClassifier,
    Jagielski2019Classifier,
    PFLDClassifier,
    Tran2021aClassifier,
)
from repro.privacy.guarantee import Guarantee, Label, Neighbouring
from repro.studies.dpfermi import methods as dpfermi_methods
from repro.studies.dpfermi._tabular import metrics, run_declared
from repro.studies.methods import BatchedRun, Declared, Knob, KnobFit, Learner, Method, Param, Trial
from repro.studies.thesis import methods as thesis_methods
from repro.studies.thesis.methods._fermi import fermi_row

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


def test_a_learner_reads_its_parameters_and_constants() -> None:
    learner = Learner(Tran2021aClassifier, knob=Knob("gamma", "tran_gammas"),
                      params={"epochs": Param("baseline_epochs", int), "lr": Param("baseline_lr")},
                      fixed={"fairness": "dp"})
    kwargs = learner.kwargs({**PARAMS, "baseline_epochs": 3.0})
    assert kwargs == {"epochs": 3, "lr": 1.0, "fairness": "dp"} and type(kwargs["epochs"]) is int
    assert learner.knob.read(PARAMS) == [0.0, 1.0] and learner.reports == {}
    assert Learner(Tran2021aClassifier, reports=("steps",)).reports == {"steps": "steps"}


def test_a_learner_declaration_is_checked() -> None:
    with pytest.raises(InvalidParameterError, match="predict must be one of"):
        Learner(Tran2021aClassifier, predict="votes")
    with pytest.raises(InvalidParameterError, match="path over 'gamma'"):
        Learner(Tran2021aClassifier, knob=Knob("gammas", "tran_gammas"))      # not its path parameter
    with pytest.raises(InvalidParameterError, match="path over None"):
        Learner(PFLDClassifier, knob=Knob("dual_lr", "pf_ld_dual_lr"))        # an estimator with no path
    with pytest.raises(InvalidParameterError, match="seed must be"):
        Learner(PFLDClassifier, seed="entropy")


def test_the_baselines_train_their_estimators_with_the_arguments_they_always_had() -> None:
    """The learner calls these declarations replaced passed exactly these (besides ε, δ and the generator)."""
    sgd = {"batch_size": 256, "lr": 1.0, "clip_norm": 2.0}
    expected = {
        "tran-2021a": (Tran2021aClassifier, "gamma", {"epochs": 3, "fairness": "dp", **sgd}),
        "pf-ld": (PFLDClassifier, None, {"fairness": "eo", "epochs": 3, "dual_lr": 1.0, **sgd}),
        "jagielski-2019": (Jagielski2019Classifier, "bound", {"rounds": 2, "learner_epochs": 1, **sgd}),
        "dp-sgd": (DPSGDLogisticClassifier, None, {"epochs": 3, **sgd}),
    }
    for name, (cls, path, kwargs) in expected.items():
        run = dpfermi_methods.get(name).run
        assert isinstance(run, Declared) and run.runner is run_declared and run.learner.estimator is cls
        assert (run.learner.knob and run.learner.knob.arg) == path
        got = run.learner.kwargs(PARAMS)
        assert got == kwargs and {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in kwargs.items()}
    assert dpfermi_methods.get("dp-sgd").run.learner.groups is False      # fairness-unaware: trains on X alone


def _parts(n: int = 40, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    X, y, s = rng.normal(size=(n, 3)), rng.integers(0, 2, n), rng.integers(0, 2, n)
    return X[:30], y[:30], s[:30], X[30:], y[30:], s[30:]


class _Toy:
    """A toy estimator with a path over ``gamma``: predicts 1[x₀ > γ]; records the calls it gets."""

    path_param = "gamma"
    calls: list = []

    def __init__(self, *, epsilon=1.0, delta=0.0, gamma=0.0, random_state=None) -> None:
        self.epsilon, self.delta, self.gamma, self.random_state = epsilon, delta, gamma, random_state

    def fit(self, X, y, *, sensitive_features=None):
        return self.fit_path(X, y, [self.gamma], sensitive_features=sensitive_features)[0]

    def fit_path(self, X, y, values, *, sensitive_features=None):
        _Toy.calls.append((X.shape[0], self.epsilon, self.delta, self.random_state, list(values)))
        return [_Toy(epsilon=self.epsilon, delta=self.delta, gamma=v)._fitted() for v in values]

    def _fitted(self):
        self.noise_multiplier_, self.steps_ = 1.5, 7
        return self

    def predict(self, X):
        return (X[:, 0] > self.gamma).astype(float)

    def predict_proba(self, X):
        p = np.linspace(0, 1, X.shape[0])
        return np.column_stack([1 - p, p])


def test_the_generic_run_scores_every_knob_point_and_writes_the_privacy_row() -> None:
    _Toy.calls.clear()
    method = Method.declare(name="toy", guarantee=GUARANTEE, runner=run_declared, style={"color": "k"},
                            learner=Learner(_Toy, knob=Knob("gamma", "tran_gammas"), reports=("steps", "noise_multiplier")))
    assert method.style == {"toy": {"color": "k"}} and method.record_names == ("toy",)
    ctx, parts = _Ctx(), _parts()
    records, privacy, tables = method.run(Trial({**PARAMS, "tran_gammas": [0, 0.5]}, ctx, "clean", None, parts))
    Xte, yte, ste = parts[3:]
    assert len(ctx.drawn) == 1 and _Toy.calls == [(30, 1.0, 1 / 30**2, ctx.drawn[0], [0.0, 0.5])]
    assert records == [{"method": "toy", "knob": g, **metrics((Xte[:, 0] > g).astype(float), yte, ste, "eo")}
                       for g in (0.0, 0.5)]
    assert list(privacy[0]) == ["method", "epsilon", "delta", "n_train", "steps", "noise_multiplier", "guarantee"]
    assert privacy[0]["guarantee"] == GUARANTEE.with_epsilon(1.0, 1 / 30**2).describe() and tables == {}


def test_the_generic_run_without_a_knob_and_with_expected_predictions() -> None:
    parts = _parts(seed=1)
    Xte, yte, ste = parts[3:]
    one = Method.declare(name="one", guarantee=GUARANTEE, runner=run_declared, learner=Learner(_Toy))
    records, privacy, _ = one.run(Trial(PARAMS, _Ctx(), "clean", None, parts))
    assert records == [{"method": "one", **metrics((Xte[:, 0] > 0).astype(float), yte, ste, "eo")}]
    mix = Method.declare(name="mix", guarantee=GUARANTEE, runner=run_declared,
                         learner=Learner(_Toy, knob=Knob("gamma", "jagielski_bounds"), predict="expected"))
    records, _, _ = mix.run(Trial(PARAMS, _Ctx(), "clean", None, parts))
    assert records == [{"method": "mix", "knob": b, **metrics(np.linspace(0, 1, len(Xte)), yte, ste, "eo")}
                       for b in (0.0, 10.0)]


def test_a_researchers_fit_need_not_return_self() -> None:
    class NoSelf(_Toy):
        def fit(self, X, y, *, sensitive_features=None):
            self._fitted()                       # returns None, as a hand-written class may

    [(_, est)] = Learner(NoSelf, seed="int").fit(*_parts()[:3], {}, epsilon=1.0, delta=0.0,
                                                 rng=np.random.default_rng(0))
    assert isinstance(est, NoSelf) and est.steps_ == 7


def test_an_int_seed_and_checked_predictions_for_a_researchers_class() -> None:
    _Toy.calls.clear()
    learner = Learner(_Toy, seed="int", checked="Toy (yours)")
    [(_, est)] = learner.fit(*_parts()[:3], {}, epsilon=2.0, delta=1e-3, rng=np.random.default_rng(5))
    assert _Toy.calls[0][3] == int(np.random.default_rng(5).integers(2**31 - 1))
    assert learner.predictions(est, np.ones((4, 3))).tolist() == [1.0] * 4
    est.predict = lambda X: np.full(len(X), 2.0)
    with pytest.raises(ValueError, match="Toy \\(yours\\): predict returned labels other than 0 and 1"):
        learner.predictions(est, np.ones((4, 3)))


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


def test_the_thesis_dp_fermi_rows_are_declared_over_the_estimator() -> None:
    rows = {name: m.run.learner for name, m in thesis_methods.methods().items() if isinstance(m.run, Declared)}
    assert set(rows) == {"DP-FERMI", "DP-FERMI (other group order)", "DP-FERMI (strict)"}
    assert all(r.estimator is DPFermiClassifier for r in rows.values())
    assert rows["DP-FERMI"] == fermi_row("reference") and rows["DP-FERMI (strict)"] == fermi_row("strict-all")
    params = {"lambda": 2, "epochs": 3, "batch_size": 64, "fermi_lr_theta": 0.1, "fermi_lr_w": 0.2,
              "fermi_lipschitz": 5, "fermi_w_radius": 4, "fermi_code_group": "female", "strict_clip_norm": 1.5}
    ref, other = rows["DP-FERMI"].kwargs(params), rows["DP-FERMI (other group order)"].kwargs(params)
    assert ref == {"lam": 2.0, "epochs": 3, "batch_size": 64, "lr_theta": 0.1, "lr_w": 0.2, "clip_norm": 5.0,
                   "w_radius": 4.0, "code_group": 0, "variant": "reference", "noise_scope": "all"}
    assert other == {**ref, "code_group": 1}
    assert rows["DP-FERMI (strict)"].kwargs(params)["clip_norm"] == 1.5
    with pytest.raises(InvalidParameterError):
        fermi_row("strict-all", other_group=True)
    with pytest.raises(InvalidParameterError):
        fermi_row("strict")


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
