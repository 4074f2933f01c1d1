"""Collectors: each opens a window with ``start`` and returns numbers from ``stop``."""
