"""The thesis on DP/LDP fair classification.

Studies: ``part1_tables`` (Tables 3.1–3.4), ``theorem8`` (Theorem 7, Prop. 6, Theorem 8 checks),
``ldp_figures`` (Figures 5.1–5.10), ``ldp_theory`` (Lemma 13, Theorem 14, Lemma 16),
``fairprojection_tables`` (Tables 5.1–5.4).
"""
