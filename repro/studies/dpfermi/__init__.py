"""Lowy, Gupta, Razaviyayn (ICLR 2023), Stochastic Differentially Private and Fair Learning (DP-FERMI).

Studies: ``tradeoff_figures`` (Figures 2–4 and 6–10, logistic regression on tabular data) and
``utkface`` (Figure 5, the private fair CNN on UTKFace; JAX, a core dependency).
"""
