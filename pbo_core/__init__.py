"""Shared surrogate core of DT-PBO Explorer.

Modules
-------
data          Feature / Schema / PreferenceData / Study: the one data model.
tree          Consistency-score splits and the array-based preference tree.
laplace       Laplace-approximated leaf utilities (sum-to-zero conditioned).
dt            ``DTSurrogate``: tree + Laplace leaves behind the surrogate interface.
acquisition   Analytic EUBO / qEUBO and the DT query rules.
loop          The PBO loop (``run_pbo``), oracles and ``RunResult``.
benchmarks    Benchmark utility functions and the ruggedness measure.
bench         ``python -m pbo_core.bench``: benchmark grids on the command line.
"""

__version__ = "0.1.0"
