"""Paper studies: one package per document, above the shared algorithms.

Each study module (``run_trial``) turns one experiment file's parameters into calls of the
algorithm layers (``datasets``, ``privacy``, ``fairness``, ``learners``, ``bandits``, ``theory``);
its ``<name>_report`` module draws figures and writes verdicts from saved results. Studies may
import everything below them; nothing below imports a study (``tests/core/test_layers.py``).
"""
