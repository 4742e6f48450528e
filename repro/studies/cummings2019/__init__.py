"""Cummings, Gupta, Kimpara, Morgenstern (2019), On the Compatibility of Privacy and Fairness.

Studies: ``impossibility`` (Theorem 1), ``expmech_audit`` (Algorithm 1 / Theorem 2 privacy),
``sample_complexity`` (Theorem 2 bound), ``fairnr`` (Private-FairNR, Algorithms 2–3).
"""
