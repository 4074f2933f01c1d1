"""Side by side: `daskbench ab` (two sides measured alternately) and `daskbench calibrate` (planted changes)."""
