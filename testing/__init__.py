"""Stand-ins that the harness's tests and CI both use, kept out of the wheel (pyproject ships ``daskbench*`` only).

``github_server``: a loopback GitHub REST stand-in (tests start it in a thread; ``ci/nightly --quick`` runs it
as ``python -m testing.github_server``). ``wheel``: a pure-Python wheel written without a build backend (the
stand-in packages of the tests, of ``ci/quick/standin.py`` and of ``measure/bisect-under-load``). ``readme``: the
README's own-repository block, which tests/test_init.py and ``ci/installed-smoke`` run. Stdlib only;
nothing here imports ``tests``.
"""
