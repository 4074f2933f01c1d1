"""Cost: worker-seconds x price per worker-hour, plus the scheduler.

Prices come from a bundled, dated table (``prices.json``) that maps a worker's cores and
memory to the cheapest instance that holds it; pass another table of the same shape to
price another cloud or region. The right-sized cost prices the cheapest instance whose
memory still fits the measured per-worker peak with headroom: what the workload would
have cost on the smallest machine it actually needed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from daskbench.errors import DaskbenchError

GIB = 2**30
#: Right-sizing keeps this much room above the measured peak (workers spill at 60%).
HEADROOM = 1.25


@dataclass(frozen=True)
class Instance:
    name: str
    vcpus: int
    memory_bytes: int
    usd_per_hour: float


@dataclass(frozen=True)
class PriceTable:
    as_of: str
    source: str
    instances: tuple[Instance, ...]
    scheduler: Instance

    def cheapest(self, vcpus: int, memory_bytes: int) -> Instance | None:
        """The cheapest instance with at least these cores and this much memory."""
        fits = [i for i in self.instances if i.vcpus >= vcpus and i.memory_bytes >= memory_bytes]
        return min(fits, key=lambda i: (i.usd_per_hour, i.memory_bytes), default=None)


def load_prices(path: str | None = None) -> PriceTable:
    """The bundled table, or the JSON file at ``path`` in the same shape."""
    try:
        text = (
            Path(path).read_text() if path else resources.files("daskbench.metrics").joinpath("prices.json").read_text()
        )
        return _parse(json.loads(text))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DaskbenchError(
            f"price table {path or 'prices.json'} is unusable ({exc}); see daskbench/metrics/prices.json for the shape"
        ) from None


def _parse(data: dict[str, Any]) -> PriceTable:
    instances = tuple(_instance(i) for i in data["instances"])
    if not instances:
        raise ValueError("it lists no instances")
    by_name = {i.name: i for i in instances}
    if data["scheduler"] not in by_name:
        raise ValueError(f"its scheduler {data['scheduler']!r} is not one of its instances")
    return PriceTable(data["as_of"], data["source"], instances, by_name[data["scheduler"]])


def _instance(row: dict[str, Any]) -> Instance:
    """One priced instance; a negative, NaN or infinite price, or a shape without cores or memory, is refused."""
    name, vcpus, gib, price = str(row["name"]), int(row["vcpus"]), float(row["memory_gib"]), float(row["usd_per_hour"])
    if not math.isfinite(price) or price < 0:
        raise ValueError(f"instance {name!r} has usd_per_hour {row['usd_per_hour']!r}; give a price >= 0")
    if vcpus < 1 or not math.isfinite(gib) or gib <= 0:
        raise ValueError(f"instance {name!r} needs vcpus >= 1 and memory_gib > 0")
    return Instance(name, vcpus, int(gib * GIB), price)


@dataclass(frozen=True)
class CostEstimate:
    cost_usd: float | None
    rightsized_cost_usd: float | None
    instance: str | None
    rightsized_instance: str | None
    prices_as_of: str


def estimate(
    prices: PriceTable,
    runtime_s: float | None,
    n_workers: int,
    threads_per_worker: int,
    memory_per_worker: int | None,
    peak_worker_bytes: float | None,
) -> CostEstimate:
    """Cost of the compute phase on the instance that matches the spec, and right-sized."""
    worker = prices.cheapest(threads_per_worker, memory_per_worker or 0)
    needed = int((peak_worker_bytes or 0) * HEADROOM)
    rightsized = prices.cheapest(threads_per_worker, needed) if peak_worker_bytes else None
    return CostEstimate(
        cost_usd=_cost(prices, runtime_s, n_workers, worker),
        rightsized_cost_usd=_cost(prices, runtime_s, n_workers, rightsized),
        instance=worker.name if worker else None,
        rightsized_instance=rightsized.name if rightsized else None,
        prices_as_of=prices.as_of,
    )


def _cost(prices: PriceTable, runtime_s: float | None, n_workers: int, worker: Instance | None) -> float | None:
    if runtime_s is None or worker is None:
        return None
    per_hour = n_workers * worker.usd_per_hour + prices.scheduler.usd_per_hour
    return runtime_s / 3600 * per_hour  # not rounded: its ratio between two runs is exactly the runtime's
