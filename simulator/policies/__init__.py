"""Scheduling policies, each a small class passed to :class:`simulator.engine.Simulator`.

A policy has ``schedule(ctx)`` (one pass: start jobs through ``ctx.start``) and optionally
``reset(ctx)``; orders (which job comes first) are separate objects with ``reset(ctx)`` and
``arrange(ctx)`` so any backfill scheme can run over any priority.
"""

from .budget import Budget
from .conservative import Conservative
from .easy import EASY
from .fairtree import FairTree
from .fifo import FIFO
from .multifactor import Multifactor
from .order import SubmitOrder

__all__ = ["EASY", "FIFO", "Budget", "Conservative", "FairTree", "Multifactor", "SubmitOrder"]
