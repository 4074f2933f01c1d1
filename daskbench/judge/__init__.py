"""Verdicts: statistics, comparisons of runs, how verdicts read, which cases pair, why a runtime moved.

No names here: each module is imported on its own (``judge.machine`` without the statistics' numpy), so a
name's one import path is its module; ``judge.compare`` and ``judge.stats`` are packages with faces.
"""
