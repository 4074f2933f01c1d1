"""The benchmark workloads: one module per family, each a plain function returning a lazy collection.

This package initialiser imports nothing, so ``from daskbench.workloads import ocean``
loads only that workload. The list of workloads is `daskbench.workloads.registry`.
"""
