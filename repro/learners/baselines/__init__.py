"""Baselines of DP-FERMI's tabular figures (spec seed-004 §8): Tran et al. 2021a (DP-SGD with a
group-discrepancy penalty), Tran et al. 2021b (PF-LD, Lagrangian dual) and Jagielski et al. 2019
(reductions game with a noisy auditor). Each module states what is ours where the papers are silent
and how its privacy is accounted.
"""

from repro.learners.baselines.jagielski_2019 import JagielskiResult, train_jagielski_2019
from repro.learners.baselines.pf_ld import PFLDResult, train_pf_ld
from repro.learners.baselines.tran_2021a import Tran2021aResult, train_tran_2021a

__all__ = ["JagielskiResult", "PFLDResult", "Tran2021aResult", "train_jagielski_2019", "train_pf_ld",
           "train_tran_2021a"]
