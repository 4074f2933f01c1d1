"""daskbench: what got slower, fatter or dearer in Dask, with evidence."""

from daskbench.errors import DaskbenchError, RegressionFound
from daskbench.model import Case, ClusterSpec, Measurement, Run
from daskbench.verdicts import Verdict

__all__ = ["Case", "ClusterSpec", "DaskbenchError", "Measurement", "RegressionFound", "Run", "Verdict"]
__version__ = "0.1.0"
