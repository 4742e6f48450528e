"""Privacy audits as experiments: attack each mechanism, bound its ε from below, compare with the claim.

``bounds`` holds the statistics (Clopper–Pearson ε bounds, exact ε of output laws), ``mechanisms`` the
audited mechanisms and their worst-case neighbours, ``mechanism_audit`` the study module of
``experiments/audit.toml`` and ``mechanism_audit_report`` its table and figure.
"""
