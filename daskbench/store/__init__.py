"""The results store: the only package that speaks SQL.

`Store` (facade.py) is what the rest of daskbench uses: opened by `opening.Database`, with the records
API of each noun from `records`; `schema` holds the tables and migrations,
`rows` maps records to rows, `merge` and `exchange` carry rows between stores (export/import),
`runstatus` derives a run's status from its events, `engine` holds what differs per database.

This module is the package's face: the rest of daskbench (and its tests) imports the names below from
``daskbench.store``, never from its modules; ``runstatus`` and ``exchange`` are namespaces used as such
(``runstatus.statuses``, ``exchange.import_file``). The other modules are the package's own.
"""

from daskbench.store import exchange, runstatus
from daskbench.store.engine import sqlite_file
from daskbench.store.facade import Store
from daskbench.store.rows import MeasuredOutcome
from daskbench.store.schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "MeasuredOutcome", "Store", "exchange", "runstatus", "sqlite_file"]
