"""Shards: a suite split over several runners, each a lockstep A/B of its own cases on one machine
(`daskbench.shards.plan`), and their results merged and judged once (`daskbench.shards.merge`)."""
