"""Where a Grid Engine job ran: its master host (the record's ``hostname``) and the hosts of its parallel task
records, as ``node_list`` and the placements table (:data:`audit.node_table.PLACEMENT_COLUMNS`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def job_hosts(master: pa.Array, task_host: np.ndarray, parent: np.ndarray) -> dict[int, list[str]]:
    """The jobs with task records on hosts other than their master host: their hosts, master first."""
    if not len(parent):
        return {}
    mhost = np.asarray(pc.take(master, pa.array(parent)).to_numpy(zero_copy_only=False), dtype=object)
    other = (task_host != mhost) & (task_host != None)  # noqa: E711 (elementwise on an object array)
    by_job: dict[int, list[str]] = {}
    for j, h in zip(parent[other].tolist(), task_host[other].tolist(), strict=True):
        by_job.setdefault(j, []).append(h)
    return {j: [h for h in dict.fromkeys([master[j].as_py(), *names]) if h] for j, names in by_job.items()}


def placements(frame, one, host, multi, started, slots, alloc_gpus) -> pd.DataFrame:
    """One row per job that started and host: a job on one host (``one``) held its slots and GPUs there (``cpus``,
    ``gpus``); a job in ``multi`` (task records on other hosts) has a row per host, what it held on each unknown
    (the accounting does not say how its slots were spread)."""
    idx = np.flatnonzero(one)
    take = pa.array(idx, type=pa.int64())
    single = pd.DataFrame({"cluster": frame["cluster"].iloc[idx].to_numpy(), "node": pc.take(host, take).to_pandas(),
                           "job_id": frame["job_id"].iloc[idx].to_numpy(),
                           "partition": frame["partition"].iloc[idx].to_numpy(),
                           "cpus": slots[idx], "gpus": alloc_gpus[idx]})
    spread = [(j, h) for j, names in sorted(multi.items()) if started[j] for h in names]
    if not spread:
        return single
    js = np.array([j for j, _ in spread], dtype=np.int64)
    other = pd.DataFrame({"cluster": frame["cluster"].to_numpy()[js], "node": [h for _, h in spread],
                          "job_id": frame["job_id"].to_numpy()[js], "partition": frame["partition"].to_numpy()[js]})
    return pd.concat([single, other], ignore_index=True)
