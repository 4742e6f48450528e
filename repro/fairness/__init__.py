"""Fairness: metrics, post-processing algorithms and the Part I / DP-FERMI studies."""
