"""The contract of a *study module*: one declared :class:`Study` object (issue 36, part 1).

A study module is the code behind one or more experiment files. It lives in
``repro/studies/<document>/``, its dotted path is the ``trial`` key of an experiment file (e.g.
``trial = "repro.studies.cummings2019.impossibility"``), and it declares everything the machine needs
to know about it in one module-level object::

    STUDY = Study(run_trial=run_trial, index=("knob",), values=("eps_label",), version="1")

The runner, the trial cache, the command line and the tests read the study only through
:func:`load_study` (the one place that imports a study module by name); the spec loader checks the
declaration against each experiment file that names the module (:func:`repro.engine.spec.study_of`).

Its companion *report module* ``<study>_report`` (same folder) imports the study, never the reverse,
and may define ``plot(bundle, outdir) -> list[Path]`` (figures from saved results only, saved with
:func:`repro.plotting.save_figure`) and ``report_markdown(bundle) -> str`` (verdicts from saved results).
Report modules are not part of the trial cache key: editing a figure never recomputes trials. A
companion ``<study>_checks`` module may define ``check_plan(params, cells)`` (checks before any trial;
:func:`repro.engine.runner.check_plan`).

A study whose experiment files' notes print derived numbers ((q, T), a calibrated σ, an accountant's ε)
computes them itself (:class:`NoteNumbers`): a note names them as ``{q}`` or ``{sigma:.3f}``, never types them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repro.errors import ExperimentFileError

if TYPE_CHECKING:
    from repro.engine.trial import TrialContext, TrialOutput

__all__ = ["Batching", "NoteNumbers", "Study", "load_study"]


@dataclass(frozen=True)
class Batching:
    """The runner's batching hook (issue #23): ``key(params, ctx)`` says which pending trials may share one
    ``run(params_list, contexts)`` call (equal, non-``None`` keys, in the plan's order). Each trial still
    draws from its own ``ctx.rng()``, is cached on its own, and must come out with the bytes of its
    one-at-a-time ``run_trial``. A key should group a few trials (e.g. the λ cells of one repetition)."""

    key: Callable[[dict[str, Any], TrialContext], Hashable | None]
    run: Callable[[list[dict[str, Any]], list[TrialContext]], Sequence[TrialOutput | Mapping[str, Any]]]


@dataclass(frozen=True)
class NoteNumbers:
    """The derived numbers a note may name (``{name}`` or ``{name:.3f}``): ``compute(params)`` returns one value
    per name of ``names``, from the experiment's ``full`` profile params, by the code that runs the trials
    (e.g. the DP-SGD unit's ``configure``). A value that needs data the registry cannot count without loading
    is a string giving its formula and "(needs the data)". ``names`` is written as the study module's top-level
    ``NOTE_NUMBERS = (...)`` tuple, which the loader reads without importing the module."""

    names: tuple[str, ...]
    compute: Callable[[Mapping[str, Any]], Mapping[str, Any]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", _names(self.names, "note_numbers.names"))
        if not callable(self.compute):
            raise TypeError(f"Study.note_numbers.compute must be a function; got {self.compute!r}")


def _names(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"Study.{what} must be a tuple of names; got {value!r}")
    return tuple(value)


@dataclass(frozen=True)
class Study:
    """What a study module declares (``STUDY = Study(...)``); every field but ``run_trial`` is optional.

    ``run_trial(params, ctx) -> TrialOutput | dict``
        A pure function of ``params`` (the experiment's fixed ``params``, one grid cell and ``variant``,
        each typed as the file declares it; read declared keys as ``params[key]``) and the randomness
        in ``ctx`` (:class:`repro.engine.trial.TrialContext`). A plain dict is one record of metrics.
    ``index``, ``values``
        The non-metric keys its records may hold (issue #20, item 3): ``index`` keys identify a row
        besides the grid keys (``knob`` when one trial sweeps λ internally) and group the summary;
        ``values`` are value columns (an ε label, a tuned hyperparameter), never part of a row's
        identity. A record may also repeat one of its own parameters; any other key fails the run.
    ``version``
        Bump to invalidate cached trials for a reason the code hash cannot see (a changed data file);
        the module and every ``repro`` module it imports are hashed automatically
        (:func:`repro.engine.cache.code_version`).
    ``methods``
        The values of the experiment's ``method`` axis the study knows (``None``: it does not fix them);
        ``variant_independent``: those whose trials do not depend on ``variant`` (one cache entry for
        every variant).
    ``datasets``
        The datasets it accepts (``None``: whatever the experiment's ``[domains]`` accepts).
    ``user_methods``
        Whether ``repro run ID --with FILE.py`` may add a researcher's method.
    ``requires``
        Importable modules (optional extras) it needs; the smoke test skips without them.
    ``scopes``
        The named random-stream scopes its trials use (``ctx.rng(..., scope=name)``); each experiment
        that runs it declares them under ``[scopes]`` (:meth:`repro.engine.trial.TrialContext.rng`).
    ``batch``
        Optional :class:`Batching` hook.
    ``note_numbers``
        Optional :class:`NoteNumbers`: the derived numbers its experiment files' notes print.
    """

    run_trial: Callable[[dict[str, Any], TrialContext], TrialOutput | Mapping[str, Any]]
    index: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    version: str = "0"
    methods: tuple[str, ...] | None = None
    variant_independent: tuple[str, ...] = ()
    datasets: tuple[str, ...] | None = None
    user_methods: bool = False
    requires: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    batch: Batching | None = None
    note_numbers: NoteNumbers | None = None

    def __post_init__(self) -> None:
        if not callable(self.run_trial):
            raise TypeError(f"Study.run_trial must be a function; got {self.run_trial!r}")
        for name in ("index", "values", "variant_independent", "requires", "scopes"):
            object.__setattr__(self, name, _names(getattr(self, name), name))
        for name in ("methods", "datasets"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _names(getattr(self, name), name))
        if not isinstance(self.version, str):
            raise TypeError(f"Study.version must be a string; got {self.version!r}")
        if not isinstance(self.user_methods, bool):
            raise TypeError(f"Study.user_methods must be true or false; got {self.user_methods!r}")
        if self.note_numbers is not None and not isinstance(self.note_numbers, NoteNumbers):
            raise TypeError(f"Study.note_numbers must be a NoteNumbers(names=..., compute=...); got "
                            f"{self.note_numbers!r}")
        if self.batch is not None and not isinstance(self.batch, Batching):
            raise TypeError(f"Study.batch must be a Batching(key=..., run=...); got {self.batch!r}")
        twice = sorted(set(self.index) & set(self.values))
        if twice:
            raise TypeError(f"Study: {twice} declared as both index and values (a key is one of them only)")
        if self.methods is not None and not set(self.variant_independent) <= set(self.methods):
            raise TypeError(f"Study.variant_independent names methods it does not declare: "
                            f"{sorted(set(self.variant_independent) - set(self.methods))}")

    def describe(self) -> list[str]:
        """The declaration in a few lines (``repro show``)."""
        def names(value: tuple[str, ...] | None, empty: str) -> str:
            return empty if value is None else (", ".join(value) or "none")

        return [f"index: {names(self.index, '')}; values: {names(self.values, '')}; version: {self.version}",
                f"methods: {names(self.methods, 'as the experiment file lists them')}"
                + (f" (variant-independent: {', '.join(self.variant_independent)})"
                   if self.variant_independent else ""),
                f"datasets: {names(self.datasets, 'as the experiment domains accept')}; user methods (--with): "
                + ("yes" if self.user_methods else "no"),
                f"random-stream scopes it needs: {names(self.scopes, '')}; requires: {names(self.requires, '')}"
                + ("; batched trials" if self.batch is not None else "")
                + (f"; numbers for the notes: {', '.join(self.note_numbers.names)}" if self.note_numbers else "")]


def load_study(module_name: str) -> Study:
    """The :class:`Study` declared by study module ``module_name`` (its ``STUDY``): the one place that
    imports a study module by name and reads its attributes.

    Raises
    ------
    ExperimentFileError
        One line naming the module and the fix, when it declares no ``STUDY`` or a malformed one.
    """
    try:
        module = importlib.import_module(module_name)
    except TypeError as exc:  # a malformed ``Study(...)`` fails when the module runs it
        if not str(exc).startswith("Study"):
            raise
        raise ExperimentFileError(f"study module {module_name!r}: its STUDY is malformed ({exc}); see "
                                  "repro.engine.study.Study for the fields") from exc
    study = vars(module).get("STUDY")
    if study is None:
        raise ExperimentFileError(f"study module {module_name!r} declares no STUDY; add `STUDY = Study(run_trial="
                                  "run_trial, ...)` (repro.engine.study.Study) at its end")
    if not isinstance(study, Study):
        raise ExperimentFileError(f"study module {module_name!r}: STUDY is a {type(study).__name__}, not a "
                                  "repro.engine.study.Study; declare `STUDY = Study(run_trial=run_trial, ...)`")
    return study

