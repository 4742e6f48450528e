"""The methods of the tabular DP-FERMI figures, one file per method (:mod:`repro.studies.methods`).

Each file defines ``METHOD`` whose ``run(trial) -> (records, privacy rows, tables)`` (a
:class:`repro.studies.methods.Trial`) trains every knob point of one (dataset, ε) cell on ``trial.parts`` = (X, y,
s) of the training and test rows
(:func:`repro.studies.dpfermi._tabular.split`). The baselines are declarations over their estimators
(:mod:`repro.estimators`) run by :func:`repro.studies.dpfermi._tabular.run_declared`; DP-FERMI is its batched hook
(``Method.batched``) over the learner unit its estimator's ``fit`` is.
"""

from repro.studies.methods import Method, discover, find

__all__ = ["methods", "get"]

#: the trial-code hash covers every module of this folder (the study finds them at run time)
__plugin_packages__ = ("repro.studies.dpfermi.methods",)


def methods() -> dict[str, Method]:
    """Every method of this folder, by name, in legend order."""
    return discover(__name__)


def get(name: str) -> Method:
    """The method ``name`` (one-line error naming the choices when unknown)."""
    return find(__name__, name)
