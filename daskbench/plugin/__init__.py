"""The pytest side: what runs inside a benchmark session, the plugin and the measuring.

`hooks` holds pytest's hooks (the ``pytest11`` entry point), `fixtures` the fixture declarations (a plugin
module `hooks` registers), `fixture` the ``measure`` fixture's object, `sweep` the parametrization and test ids,
`state` one pytest session's state, and `measuring` one measurement on a cluster.
This package's ``__init__`` imports nothing, so importing a part loads only what that part needs.
"""
