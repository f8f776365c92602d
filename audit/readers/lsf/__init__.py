"""Reader for LSF accounting: ``lsb.acct`` (and its rotated ``lsb.acct.1`` …), one ``JOB_FINISH`` record per job.

:mod:`.tokens` splits the records into fields, :mod:`.layout` knows where each field is per LSF version,
:mod:`.values` what the states, exit status and resource requirement mean, :mod:`.reader` maps the records
into the canonical job table.
"""

from .reader import looks_like_lsf, read_lsf

__all__ = ["looks_like_lsf", "read_lsf"]
