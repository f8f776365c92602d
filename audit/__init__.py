"""Reclaim audit: readers, the canonical job table, ledger, accounting, store, pipeline and CLI."""

__version__ = "0.1.0"
