"""Study module for ``experiments/thesis-table-3.1.toml`` … ``thesis-table-3.4.toml`` (thesis Part I).

One trial = one method at one cell and repetition. The methods are the files of
:mod:`repro.studies.thesis.methods` (one per method, found by scanning the folder), and a researcher's own
method joins them with ``repro run ID --with FILE.py`` (:func:`_run_user_method`):

* ``Algorithm 2``: DP-SGD logistic regression on [x, A] (numpy, Opacus semantics) trained on 2/3 of
  the 75 % training part, then Algorithm 2 (Laplace-noised group rates on the other 1/3, the flip
  rule applied to the test set). Also returns the record ``DP-SGD (before post-processing)``.
* ``DP-FERMI`` (the thesis's code path, ``reference``), ``DP-FERMI (other group order)`` (the same
  code with the other group's term surviving the 1×1 trace), ``DP-FERMI (strict)`` (paper math,
  per-sample clipping, noise calibrated by the accountant): logistic regression on x only, trained
  on the whole 75 % part, at the cell's λ.

Data modes (grid axis ``data``, issue 13): ``authors`` (default) = the authors' processed file rebuilt
from the raw data (:mod:`repro.datasets.authors_files`; on Adult: ``adult.data``'s complete rows written
twice) with their fixed 75/25 split ``df.sample(frac=0.75, random_state=100)``; ``clean`` = our
deduplicated canonical data with a 75/25 split drawn from the base seed. Both then split the training
part 2/3–1/3 for Algorithm 2 (on Adult's authors' file n_fit = int(2/3 · 45,243) = 30,162: the thesis's
accountant inputs q = 1024/30,162 ≈ 0.034, T = 30 · 50 = 1,500, spec P4).

Variants: ``calibrated`` (default: the DP-SGD noise multiplier is recalibrated with the PLD
accountant for the actual (q, T) to reach ε′ − ε₀ − ε₁) and ``thesis-sigma`` (the thesis's σ values
verbatim; the accountant's ε for them is reported).

Spec: seed-003-thesis.md §2.4, §2.7, §3 (Tables 3.1–3.4), §10 P1–P9; seed-004-dpfermi.md §4.3–§4.4.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from repro.datasets import registry
from repro.datasets.split import split as split_rows
from repro.datasets.split import split_sizes
from repro.datasets.tabular import Split, TabularDataset, split_training_part, standardize
from repro.engine.study import NoteNumbers, Study
from repro.engine.trial import StreamSeed, TrialContext, TrialOutput
from repro.engine.user_method import USER_KEY
from repro.fairness.metrics import accuracy, sp_gap
from repro.learners import dp_sgd_unit
from repro.studies.methods import Trial, fit_user_method
from repro.studies.thesis import methods as method_registry

__all__ = ["STUDY", "NOTE_NUMBERS", "note_numbers", "run_trial", "prepare", "split_stream"]


def split_stream(ctx: TrialContext, dataset: str, split: str, subsample: int) -> StreamSeed:
    """The stream of the split of ``dataset``: one per (dataset, subsample, repetition), from the scope
    ``split`` that the experiment files declare (Tables 3.1–3.4 and Theorem 8 declare one family, so they
    share it). ``split="fixed"``: repetition 0's for every repetition (as the thesis code: one
    ``sample(frac=0.75)``); ``"per-repetition"``: a fresh draw per repetition."""
    rep = 0 if split == "fixed" else ctx.repetition
    return ctx.seed("split", dataset, subsample, rep, scope="split")


@functools.lru_cache(maxsize=8)
def prepare(dataset: str, stream: StreamSeed, subsample: int, data: str) -> tuple[TabularDataset, Split, np.ndarray]:
    """(dataset, split, standardized X) — cached per worker process by its inputs (the split's
    ``stream`` is :func:`split_stream`'s identity).

    Any tabular dataset of the registry (:mod:`repro.datasets.registry`; the experiment's ``[domains]``
    says which it accepts) in data mode ``data`` (``"authors"``: the authors' file and their fixed split;
    ``"clean"``: our canonical data and a 75/25 split drawn from ``stream``), split by
    :func:`repro.datasets.split.split` with ``subsample_of="rows"`` (``subsample`` > 0 keeps that many
    random rows in all: smoke profile), then a 2/3–1/3 split of the training part from the same stream.
    Standardization uses the 75 % training part's statistics.
    """
    entry = registry.get_dataset(dataset).require("tabular", "thesis Part I")
    ds = entry.load(data)
    rng = stream.rng()
    parts = split_rows(entry, data, n=ds.n, rng=rng, subsample=subsample, subsample_of="rows", train_fraction=0.75)
    ds = parts.take(ds)
    sp = split_training_part(parts.train, parts.test, rng=rng)
    X = standardize(ds.X, sp.full_train, ds.numeric_columns)
    return ds, sp, X


def _run_user_method(ds: TabularDataset, sp: Split, X: np.ndarray, params: dict[str, Any],
                     ctx: TrialContext) -> TrialOutput:
    """A researcher's method (``--with``) on DP-FERMI's data: x only (A is passed as ``sensitive_features``),
    trained on the whole 75 % part, scored on the test rows; its budget is the cell's (ε′, δ′)."""
    tr = sp.full_train
    method, pred, guarantee = fit_user_method(str(params[USER_KEY]), X[tr], ds.y[tr], ds.s[tr], X[sp.test],
                                              rng=ctx.rng(), epsilon=float(params["eps_prime"]),
                                              delta=float(params["delta"]))
    return TrialOutput(records=[{"method": str(params["method"]), "accuracy": accuracy(pred, ds.y[sp.test]),
                                 "sp_gap": sp_gap(pred, ds.s[sp.test]), "eps_total": guarantee.epsilon,
                                 "eps_label": guarantee.label.value}],
                       tables={"user_methods": [{"method": method.name, "reference": method.ref,
                                                 "guarantee": guarantee.describe(),
                                                 "declared_label": method.guarantee.label.value}]})


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """One method at one cell (see the module docstring). Spec: seed-003 §2.7, §3.3."""
    method = str(params["method"])
    only = str(params["only_method"])
    if only and method != only:  # `--set only_method=...`: run one method's cells only (e.g. a variant)
        return TrialOutput(records=[])
    dataset, subsample = str(params["dataset"]), int(params["subsample"])
    ds, sp, X = prepare(dataset, split_stream(ctx, dataset, str(params["split"]), subsample), subsample,
                        str(params["data"]))
    if params.get(USER_KEY):
        return _run_user_method(ds, sp, X, params, ctx)
    return method_registry.get(method).run(Trial(params, ctx, str(params["data"]), ds, (sp, X)))


#: the derived numbers the notes of Tables 3.1–3.4 print (:func:`note_numbers`); ``authors_*`` at data mode
#: ``authors``, the others at ``clean``
NOTE_NUMBERS = ("n_fit", "batches", "q", "T", "noise_multiplier", "sigma", "eps_dpsgd_target", "thesis_sigma_eps",
                "thesis_sigma_eps_rdp", "authors_train", "authors_n_fit", "authors_batches", "authors_q", "authors_T")
#: the 2/3–1/3 split of the training part (:func:`repro.datasets.tabular.split_training_part`)
_FIT_FRACTION = 2 / 3
_NEEDS_DATA = "(needs the data)"


def _n_fit(dataset: str, data: str, subsample: int) -> tuple[int, int] | None:
    """(75 % training part, the rows Algorithm 2 fits on) of ``dataset`` in mode ``data``, from its registered
    row count and the split fractions of :func:`prepare`, without loading it (None when it declares none)."""
    entry = registry.get_dataset(dataset)
    if data not in entry.data_modes or entry.rows(data) is None:
        return None
    train, _ = split_sizes(entry, data, n=int(entry.rows(data)), subsample=subsample, train_fraction=0.75)
    return train, int(_FIT_FRACTION * train)


def note_numbers(params: dict[str, Any]) -> dict[str, Any]:
    """The notes' derived numbers at ``params`` (the full profile's): the DP-SGD unit's ``configure`` on the
    rows Algorithm 2 fits on, as :mod:`repro.studies.thesis.methods.algorithm2` calls it. ``n_fit``: rows of
    the fit part; ``batches``: ⌈n_fit/B⌉ (q = 1/batches under Opacus's rule); ``q``, ``T``: the actual
    schedule; ``noise_multiplier``, ``sigma``: the calibrated variant's z and σ = z·C; ``thesis_sigma_eps`` (PLD)
    and ``thesis_sigma_eps_rdp``: the ε the thesis's σ spends on the actual (q, T); ``eps_dpsgd_target``:
    ε′ − ε₀ − ε₁; ``authors_n_fit``, ``authors_batches``, ``authors_q``, ``authors_T``: the same at data mode
    ``authors`` (``authors_train``: its 75 % part). All at data mode ``clean`` otherwise. A dataset without a
    registered row count gives each count's formula, marked "(needs the data)"."""
    hyper = dict(clip_norm=float(params["clip_norm"]), lr=float(params["lr"]), batch_size=int(params["batch_size"]),
                 epochs=int(params["epochs"]), sampling_rule=str(params["sampling_rule"]))
    delta, clip = float(params["delta"]), float(params["clip_norm"])
    target = float(params["eps_prime"]) - float(params["eps0"]) - float(params["eps1"])
    out: dict[str, Any] = {"eps_dpsgd_target": round(target, 12)}
    for data, prefix in (("clean", ""), ("authors", "authors_")):
        sizes = _n_fit(str(params["dataset"]), data, int(params["subsample"]))
        if sizes is None:
            formula = f"int(2/3 · round(0.75 · rows of {params['dataset']} ({data}))) {_NEEDS_DATA}"
            out.update({f"{prefix}n_fit": formula,
                        f"{prefix}batches": f"⌈n_fit/{hyper['batch_size']}⌉ {_NEEDS_DATA}",
                        f"{prefix}q": _NEEDS_DATA, f"{prefix}T": _NEEDS_DATA})
            out.update(dict.fromkeys(("authors_train",) if prefix else ("noise_multiplier", "sigma", "thesis_sigma_eps",
                                                                        "thesis_sigma_eps_rdp"), _NEEDS_DATA))
            continue
        train, n_fit = sizes
        thesis_z = float(params["thesis_sigma"]) / clip
        thesis = dp_sgd_unit.configure(n=n_fit, epsilon=None, delta=delta, noise_multiplier=thesis_z, **hyper)
        q, steps = thesis.sampling_probability, thesis.steps
        out.update({f"{prefix}n_fit": n_fit, f"{prefix}batches": steps // int(hyper["epochs"]), f"{prefix}q": q,
                    f"{prefix}T": steps})
        if prefix:
            out["authors_train"] = train
            continue
        calibrated = dp_sgd_unit.configure(n=n_fit, epsilon=target, delta=delta, **hyper)
        out.update({"noise_multiplier": calibrated.noise_multiplier, "sigma": calibrated.sigma["sigma"],
                    "thesis_sigma_eps": thesis.guarantee.epsilon,
                    "thesis_sigma_eps_rdp": thesis.epsilon(delta, "rdp")})
    return out


#: methods: the files of repro.studies.thesis.methods; `repro run ID --with FILE.py` adds a researcher's
#: method (:func:`_run_user_method`); values: non-metric value columns of a record
STUDY = Study(run_trial=run_trial, values=("eps_label",), version="1", methods=tuple(method_registry.methods()),
              user_methods=True, scopes=("split",), note_numbers=NoteNumbers(NOTE_NUMBERS, note_numbers))
