"""Learners: logistic regression, DP-FERMI."""
