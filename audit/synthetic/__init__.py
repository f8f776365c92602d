"""Synthetic cluster months in real export formats, with planted ground truth."""

from .generate import generate

__all__ = ["generate"]
