"""The calibration arms (`ARMS`) and the variable naming a calibration session's side (`SIDE_ENV`), shared by
``daskbench calibrate`` (`daskbench.calibrate.run`) and the benchmarks it runs (`daskbench.calibrate.bench_calibration`),
in a module of their own so the command's start-up imports neither pytest nor dask."""

from __future__ import annotations

#: (arm, planted factor on side B): the A/A pair first, then the planted slowdowns.
ARMS = (("aa", 1.0), ("x1.05", 1.05), ("x1.10", 1.10), ("x1.20", 1.20), ("x1.50", 1.50))
#: Which side this session is (set by daskbench calibrate); only side B burns the planted factor.
SIDE_ENV = "DASKBENCH_CALIBRATION_SIDE"
