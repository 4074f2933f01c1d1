"""The bundled suite is the test files beside this one. ``history/`` holds reproducers of performance
regressions users reported upstream; they run only when named: ``pytest -m benchmark benchmarks/history``
(or one file of it), never with the bundled suite."""

collect_ignore = ["history"]
