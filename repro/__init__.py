"""repro: one-command reproductions of results on differential privacy and fairness."""

__version__ = "0.2.0"
__all__ = ["__version__"]

#: names of :mod:`repro.estimators` reachable as ``repro.<Name>``, imported on first use only (the CLI
#: never pays for scikit-learn, LightGBM or the learners at start-up)
_ESTIMATORS = (
    "DPSGDLogisticClassifier", "PrivatePostProcessingClassifier", "DPFermiClassifier", "Tran2021aClassifier",
    "PFLDClassifier", "Jagielski2019Classifier", "FairProjectionClassifier", "LDPLightGBMClassifier",
)


def __getattr__(name: str):
    if name == "estimators" or name in _ESTIMATORS:
        import importlib

        module = importlib.import_module("repro.estimators")
        return module if name == "estimators" else getattr(module, name)
    raise AttributeError(f"module 'repro' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "estimators", *_ESTIMATORS])
