"""An, Palacci, Paschalidis (2025), Private-Fair-Greedy (contextual linear bandits).

Studies: ``regret_and_sweeps`` (Figures 1, 2 and A.1–A.4).
"""
