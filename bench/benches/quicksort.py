"""quicksort: divide and conquer whose first steps are serial work.

quicksort_<system> N CUTOFF REPS sorts n fixed-seed pseudo-random integers:
partition, spawn the left part, recurse on the right, sync; parts of at most
CUTOFF elements go to std::sort. The program of figure 14 of Tanaka, Taura
and Yonezawa, 'Implementation and Evaluation of Nested Parallelism in
OpenMP' (docs/references.md), written with spawn and sync (a kernel: see
harness/kernel.py).
"""
from harness import Kernel

BENCH = Kernel(
    "quicksort", params=["n", "cutoff"], default=[[str(1 << 24), "2048"]],
    quick=[["100000", "2048"]],
    what="quicksort of n fixed-seed pseudo-random integers (Tanaka, Taura and Yonezawa, "
         "'Implementation and Evaluation of Nested Parallelism in OpenMP', figure 14, "
         "docs/references.md): "
         "partition, spawn the left part, recurse on the right, sync; parts of at most "
         "*cutoff* elements go to std::sort")
