"""Turn the daskbench pytest plugin on for this repository (not on install)."""

pytest_plugins = ["daskbench.plugin"]
