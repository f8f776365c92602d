"""Reclaim simulator."""
