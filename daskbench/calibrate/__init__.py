"""``daskbench calibrate``: what this setup can detect, measured on it.

- `run`: N lockstep comparisons of planted changes, and the power table;
- `arms`: the planted changes (the arms) and the variable that names a session's side;
- `bench_calibration`: the benchmarks the two sides run (a pytest file, never collected by a plain run).
"""
