"""Synthetic cluster months in real export formats, with planted ground truth."""

from .generate import FORMATS, generate

__all__ = ["FORMATS", "generate"]
