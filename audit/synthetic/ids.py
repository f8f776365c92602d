"""Job identifiers as Slurm prints them: plain, array tasks (``123_4``) and het components (``1853+0``)."""

from __future__ import annotations

import numpy as np


def job_ids(sub: np.ndarray, sub_type: np.ndarray, task: np.ndarray, first_id: int = 1_000_001) -> dict:
    """``JobIDRaw`` is consecutive in submission order; an array's ``JobID`` is ``<raw of task 0>_<task>``,
    a het job's ``<raw of component 0>+<offset>``.  Returns job_id, job_id_raw (strings) and the numbers."""
    raw = first_id + np.arange(len(sub), dtype=np.int64)
    head = np.flatnonzero(np.concatenate([[True], sub[1:] != sub[:-1]]))
    base = raw[head][np.searchsorted(head, np.arange(len(sub)), side="right") - 1]
    raw_s = raw.astype(str).astype(object)
    base_s = base.astype(str).astype(object)
    task_s = task.astype(str).astype(object)
    jid = raw_s.copy()
    arr = sub_type == 1
    het = sub_type == 2
    jid[arr] = base_s[arr] + "_" + task_s[arr]
    jid[het] = base_s[het] + "+" + task_s[het]
    return {"job_id": jid, "job_id_raw": raw_s, "raw": raw, "base": base}
