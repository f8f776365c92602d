"""Synthetic cluster months in real export formats, with planted ground truth."""
