"""Collectors: each opens a window with ``start`` and returns numbers from ``stop``.

No names here: each module is imported on its own (``metrics.cost`` without distributed), so a name's one
import path is its module.
"""
