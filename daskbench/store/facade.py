"""The `Store`, what the rest of daskbench uses: a store opened (`opening.Database`) with the records API of
each noun (`records`: runs, baselines, cases, measurements, rows exchanged).

SQLite by default (WAL, one commit per measurement, so a crash loses nothing already
measured); any SQLAlchemy URL (PostgreSQL, ...) works the same. Measurements are
append-only; baselines are their own table where the newest row of a name wins.

Metric values are rows of ``metric_values`` (measurement, name, value), one per declared
metric (`daskbench.catalog`) that was measured, so a new metric needs no new column.

The tables and migrations are in `schema`, records to rows in `rows`, export/import merging in
`merge`, and what is particular to each database (whether a URL is a SQLite file, ...) in `engine`.
"""

from daskbench.store.records import BaselineRecords, CaseRecords, MeasurementRecords, RowExchange, RunRecords


class Store(BaselineRecords, RunRecords, CaseRecords, MeasurementRecords, RowExchange):
    """A results store at a SQLAlchemy URL: ``Store(url)`` creates and migrates it, ``Store(url, create=False)``
    only opens one that exists (`Database`); every records method of `daskbench.store.records`."""
