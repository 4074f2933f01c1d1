"""Verdicts: statistics, comparisons of runs, how verdicts read, which cases pair, why a runtime moved."""
