"""repro: one-command reproductions of results on differential privacy and fairness."""

__version__ = "0.1.0"
__all__ = ["__version__"]
