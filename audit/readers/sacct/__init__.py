"""Slurm accounting: ``sacct --parsable2`` text (:mod:`.text`, with its lines, fields, step folding, resources
and states) and ``sacct --json`` / slurmrestd output (:mod:`.json_jobs`, with its records and values)."""

from .json_jobs import read_sacct_json
from .text import read_sacct

__all__ = ["read_sacct", "read_sacct_json"]
