"""nqueens: a search tree with a copy of its state in every task.

nqueens_<system> N REPS counts the solutions of the n-queens problem with one
task per safe column at each row, each child with its own copy of the board,
against the same search run serially in the same binary (a kernel: see
harness/kernel.py).
"""
from harness import Kernel

BENCH = Kernel(
    "nqueens", params=["n"], default=[["12"]], quick=[["8"]],
    what="nqueens(n): solutions counted with one task per safe column at each row, "
         "each child with its own copy of the board")
