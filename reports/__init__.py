"""Reclaim reports."""
