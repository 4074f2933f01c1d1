"""The calibration workload of ``daskbench calibrate``: tasks that burn CPU in proportion to a factor."""
