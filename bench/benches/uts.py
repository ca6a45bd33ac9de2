"""uts: unbalanced tree search, load balancing on a tree nobody can foresee.

uts_<system> DEPTH MEAN SEED REPS counts the nodes of a depth-limited
geometric tree (child count geometric with the given mean, ids hashed with
splitmix64) with one task per child (a kernel: see harness/kernel.py).
"""
from harness import Kernel

BENCH = Kernel(
    "uts", params=["depth", "mean", "seed"], default=[["11", "4", "19"]],
    quick=[["6", "4", "19"]],
    what="unbalanced tree search: the nodes of a depth-limited geometric tree (child count "
         "geometric with the given mean, ids hashed with splitmix64) counted with one task "
         "per child")
