"""Normalising Slurm job states onto the canonical set (audit.job_table.STATES)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...job_table import STATES
from .distinct import per_distinct
from .lines import take_rows

#: Slurm states outside the canonical set, and the forms fixed-width sacct output truncates to
SYNONYMS = {
    "OUT_OF_ME+": "OUT_OF_MEMORY",
    "CANCELLED+": "CANCELLED",
    "NODE_FAIL+": "NODE_FAIL",
    "PREEMPTED+": "PREEMPTED",
    "SPECIAL_EXIT": "FAILED",
    "REVOKED": "CANCELLED",
    "REQUEUE_FED": "REQUEUED",
    "REQUEUE_HOLD": "REQUEUED",
    "RESIZING": "COMPLETED",
    "COMPLETING": "RUNNING",
    "CONFIGURING": "RUNNING",
    "STAGE_OUT": "RUNNING",
    "SIGNALING": "RUNNING",
    "STOPPED": "SUSPENDED",
    "RESV_DEL_HOLD": "PENDING",
}


def normalise_states(col: pa.Array | None, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """States of rows ``idx`` → canonical names ('' where absent) and a mask of unknown states.

    ``CANCELLED by 129319`` (who cancelled) becomes ``CANCELLED``.
    """
    n = len(idx)
    if col is None:
        return np.full(n, "", dtype=object), np.zeros(n, bool)
    return per_distinct(_normalise, take_rows(col, idx))


def _normalise(col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    a = pc.utf8_upper(pc.utf8_trim_whitespace(col))
    a = pc.replace_substring_regex(a, r"\s+BY\s+\S+$", "")
    raw = np.asarray(pc.fill_null(a, "").to_numpy(zero_copy_only=False), dtype=object)
    out = raw.copy()
    for src, dst in SYNONYMS.items():
        out[raw == src] = dst
    known = np.isin(out, np.array(STATES, dtype=object)) | (out == "")
    return np.where(known, out, ""), ~known
