"""Programmatic checks of theorems: exact constructions, enumerations and bound calculators.

Spec: seed-000-002-compat.md §2 (Theorem 1 of Cummings et al. 2019, checks C1–C5).
"""
