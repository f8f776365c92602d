"""Reader for Grid Engine accounting files (``$SGE_ROOT/$SGE_CELL/common/accounting``): Sun Grid Engine 6.x,
Son of Grid Engine 8.x, Univa / Altair Grid Engine 8.x.

:mod:`.layout` splits records into fields (the layouts by release), :mod:`.request` reads a job's request from
its ``category``, :mod:`.states` maps ``failed`` and ``exit_status`` to a state, :mod:`.reader` builds the rows.
"""

from .reader import looks_like_sge, read_sge

__all__ = ["looks_like_sge", "read_sge"]
