"""Data sized to the cluster it runs on, as benchmark suites size theirs: a share of the workers'
memory, so one test loads a laptop's cluster and a cloud cluster alike. The shares in these tests
are small (a local cluster on a shared machine); raise them on a cluster of your own."""

from __future__ import annotations

import math

from distributed import Client


def cluster_memory(client: Client) -> int:
    """The memory limit of all the cluster's workers together, in bytes."""
    workers = client.scheduler_info()["workers"].values()
    return sum(int(worker["memory_limit"]) for worker in workers)


def sized(client: Client, share: float, item_bytes: int = 8) -> int:
    """How many items of ``item_bytes`` make ``share`` of the cluster's memory (at least 1000)."""
    return max(1000, math.floor(cluster_memory(client) * share / item_bytes))
