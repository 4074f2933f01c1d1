"""``daskbench culprit``: from a regression confirmed side by side to the first bad commit (or release), unattended.

The nightly confirms a regression (``daskbench confirm``: the last good run's environment against tonight's);
this goes on from there, within a budget, as a person would with ``daskbench bisect``:

- `route`: what changed between the two runs as they recorded it (`model.recorded_commits`: the commits of the
  packages they had from git, else their releases), and the path from good to bad along which a bisection
  searches: both packages' commits in one line by commit date, or (one moved by releases) dask's first, then
  distributed's, the point where dask has moved and distributed not yet measured first (the `BisectPlan` pivot:
  which package it was);
- `hunt`: the bisections (`daskbench.bisect.search`) over that path, every confirmed case in one search, then a
  search for the cases the first culprit does not explain; the confirmation is step 0;
- `comment`: what it found as Markdown (pure): the first bad commit with its link, title and pull request, the
  step table, what stayed undecided.
"""
