"""The methods of the thesis Part I tables (3.1–3.4), one file per method (:mod:`repro.studies.methods`).

Each file defines ``METHOD`` whose ``run(trial) -> TrialOutput`` (a :class:`repro.studies.methods.Trial`,
``trial.parts`` = (split, standardised X) of :func:`repro.studies.thesis.part1_tables.prepare`) trains on the
prepared split and scores on its test rows; it draws the trial's generator ``trial.ctx.rng()`` once. The DP-FERMI rows are
declarations over :class:`repro.estimators.DPFermiClassifier` run by
:func:`repro.studies.thesis.methods._fermi.run_fermi`; Algorithm 2 writes its own ``run`` over the DP-SGD and
post-processing estimators.
"""

from repro.studies.methods import Method, discover, find

__all__ = ["methods", "get"]

#: the trial-code hash covers every module of this folder (the study finds them at run time)
__plugin_packages__ = ("repro.studies.thesis.methods",)


def methods() -> dict[str, Method]:
    """Every method of this folder, by name, in table order."""
    return discover(__name__)


def get(name: str) -> Method:
    """The method ``name`` (one-line error naming the choices when unknown)."""
    return find(__name__, name)
