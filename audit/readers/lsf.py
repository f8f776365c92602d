"""Reader for LSF accounting (lsb.acct, JOB_FINISH records)."""

from __future__ import annotations

from ..ledger import ReadResult


def looks_like_lsf(lines: list[str]) -> bool:
    """Whether the first non-blank lines of a file are this format's records."""
    return False


def read_lsf(path, *, cluster: str | None = None, timezone: str = "UTC") -> ReadResult:
    """Read one file into the canonical job table, with its ledger, quarantine and placements."""
    raise NotImplementedError
