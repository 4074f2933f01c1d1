"""The futures API: how quickly small tasks go through the scheduler."""

from __future__ import annotations

from distributed import as_completed, wait


def _inc(x):
    return x + 1


def test_single_future(small_client):
    assert small_client.submit(_inc, 1).result() == 2


def test_many_futures(small_client):
    futures = small_client.map(_inc, range(200))
    wait(futures)
    assert sum(small_client.gather(futures)) == sum(range(1, 201))


def test_chained_futures(small_client):
    first = small_client.map(_inc, range(100))
    second = small_client.map(_inc, first)
    assert sum(future.result() for future in as_completed(second)) == sum(range(2, 102))
