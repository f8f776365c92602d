"""Where each job ran: its execution hosts, the slots it held on each, and its placements.

``execHosts`` names a host once per slot (``"hostA" "hostA" "hostB"``) or, with
``LSF_HPC_EXTENSIONS=SHORT_EVENTFILE`` (lsf.conf reference), once with its slots (``"2*hostA" "hostB"``); a
host may come back further on in the list.  The slots are summed per job and host, in the order the record first
names each host.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .hostlist import compact_hostlists
from .tokens import Tokens, unquote


def hosts_held(tok: Tokens, at: np.ndarray, count: np.ndarray) -> dict:
    """Each job's execution hosts: ``cpus`` (slots), ``nodes``, ``node_list``, and per job and host the slots
    held there (``place_job``, ``place_node``, ``place_slots``, in the order the record names the hosts)."""
    n = len(at)
    count = np.maximum(count, 0)
    total = int(count.sum())
    owner = np.repeat(np.arange(n), count)
    offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    # distinct entries first: a cluster has a few thousand hosts, a month millions of entries
    entries = pc.dictionary_encode(tok.text(np.repeat(at, count) + offset)) if total else None
    entry = np.asarray(entries.indices, dtype=np.int64) if total else np.zeros(0, dtype=np.int64)
    written = unquote(entries.dictionary) if total else pa.array([], pa.string())
    short = pc.extract_regex(written, r"^(?P<n>\d+)\*(?P<h>.+)$")  # SHORT_EVENTFILE: "16*hostA"
    per = pc.struct_field(short, "n")
    entry_slots = np.asarray(pc.cast(pc.fill_null(per, "1"), pa.float64()), dtype=float)
    entry_host = pc.if_else(pc.is_valid(per), pc.struct_field(short, "h"), written)
    hosts = pc.unique(entry_host)
    dictionary = np.asarray(hosts.to_numpy(zero_copy_only=False), dtype=object)
    slots = entry_slots[entry]
    code = np.asarray(pc.index_in(entry_host, value_set=hosts), dtype=np.int64)[entry]
    # runs of one host (the usual "hostA hostA hostB"), then any host a job names twice apart
    change = np.ones(total, dtype=bool)
    change[1:] = (owner[1:] != owner[:-1]) | (code[1:] != code[:-1])
    run = np.flatnonzero(change)
    run_owner, run_code = owner[run], code[run]
    run_slots = np.add.reduceat(slots, run) if total else np.zeros(0)
    key = run_owner * max(len(dictionary), 1) + run_code
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    sums = np.bincount(inverse, weights=run_slots, minlength=len(uniq))
    p_owner, p_code, p_slots = run_owner[first[order]], run_code[first[order]], sums[order]
    cpus = np.bincount(p_owner, weights=p_slots, minlength=n)
    nodes = np.bincount(p_owner, minlength=n).astype(float)
    node_list = compact_hostlists(p_owner, p_code, dictionary, n)
    return {"cpus": cpus, "nodes": nodes, "node_list": node_list, "place_job": p_owner,
            "place_node": dictionary[p_code] if len(p_code) else np.zeros(0, dtype=object), "place_slots": p_slots}


def placements(frame: pd.DataFrame, hosts: dict, req: dict, method: np.ndarray) -> pd.DataFrame:
    """One row per job and host: the slots held there, the memory reserved there (``rusage[mem]`` per host, or per
    slot × its slots; null for a per-job reservation) and the GPUs (``ngpus_physical`` is per host)."""
    j = hosts["place_job"]
    per = req["mem_bytes"][j]
    m = method[j]
    mem = np.where(m == "task", per * hosts["place_slots"], np.where(m == "job", np.nan, per))
    return pd.DataFrame({
        "cluster": frame["cluster"].to_numpy()[j], "node": hosts["place_node"],
        "job_id": frame["job_id"].to_numpy()[j], "partition": frame["partition"].to_numpy()[j],
        "cpus": hosts["place_slots"], "mem_bytes": _int(mem),
        "gpus": np.nan_to_num(req["gpus"])[j],
    })


def _int(values) -> pd.arrays.IntegerArray:
    v = np.asarray(values, dtype="float64")
    mask = np.isnan(v)
    return pd.arrays.IntegerArray(np.where(mask, 0, np.round(v)).astype(np.int64), mask)
