"""``sacct --parsable2`` text: a header line, then each allocation line followed by its step lines.

Strings are built column by column on numpy object arrays (lookup tables for zero-padded numbers,
``datetime_as_string`` for times) and joined once; there is no Python loop per line.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

FIELDS = (
    "JobID", "JobIDRaw", "Cluster", "Partition", "QOS", "Account", "Group", "User", "Submit", "Eligible", "Start",
    "End", "Elapsed", "Timelimit", "State", "ExitCode", "NNodes", "NCPUS", "ReqCPUS", "ReqMem", "ReqTRES",
    "AllocTRES", "TotalCPU", "MaxRSS", "AveRSS", "NTasks", "TRESUsageInTot", "NodeList", "JobName", "AdminComment",
)
HEADER = "|".join(FIELDS)

_PAD2 = np.array([f"{i:02d}" for i in range(100)], dtype=object)
_PAD3 = np.array([f"{i:03d}" for i in range(1000)], dtype=object)


_SMALL = np.arange(65536).astype(str).astype(object)


def int_str(a) -> np.ndarray:
    """Integers → decimal strings (object array); small non-negative ones from a lookup table."""
    a = np.asarray(a).astype(np.int64)
    if a.size and 0 <= a.min() and a.max() < len(_SMALL):
        return _SMALL[a]
    return a.astype(str).astype(object)


def fmt_duration(sec) -> np.ndarray:
    """Seconds → ``[D-]HH:MM:SS`` as sacct prints Elapsed and Timelimit."""
    sec = np.asarray(sec, dtype=np.int64)
    d, r = np.divmod(sec, 86400)
    h, r = np.divmod(r, 3600)
    m, s = np.divmod(r, 60)
    body = _PAD2[h] + ":" + _PAD2[m] + ":" + _PAD2[s]
    return np.where(d > 0, int_str(d) + "-" + body, body)


def fmt_totalcpu(ms) -> np.ndarray:
    """Milliseconds → sacct's TotalCPU: ``MM:SS.mmm`` under an hour, ``HH:MM:SS``, ``D-HH:MM:SS`` above."""
    ms = np.asarray(ms, dtype=np.int64)
    sec, milli = np.divmod(ms, 1000)
    short = _PAD2[np.minimum(sec // 60, 99)] + ":" + _PAD2[sec % 60] + "." + _PAD3[milli]
    return np.where(sec < 3600, short, fmt_duration(sec))


def fmt_time(epoch) -> np.ndarray:
    """Epoch seconds → ``YYYY-MM-DDTHH:MM:SS`` (UTC)."""
    return np.datetime_as_string(np.asarray(epoch, dtype="datetime64[s]"), unit="s").astype(object)


def fmt_mem_mib(mib) -> np.ndarray:
    """MiB → a TRES memory value: ``32G`` when whole GiB, else ``31000M``."""
    mib = np.asarray(mib, dtype=np.int64)
    return np.where(mib % 1024 == 0, int_str(mib // 1024) + "G", int_str(mib) + "M")


def fmt_reqmem(form, mem_pn_mib, cpus_pn) -> np.ndarray:
    """ReqMem in the form the user wrote: ``4000Mc`` per CPU, ``16000Mn`` per node, bare ``32G`` job total."""
    per_cpu = int_str(mem_pn_mib // np.maximum(cpus_pn, 1)) + "Mc"
    per_node = int_str(mem_pn_mib) + "Mn"
    total = fmt_mem_mib(mem_pn_mib)
    return np.where(form == "per_cpu", per_cpu, np.where(form == "per_node", per_node, total))


def tres(cpus, mem_mib, nodes, gpus, gpu_type, typed, billing=True) -> np.ndarray:
    """``billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=64G,node=1`` (gres entries only when gpus > 0)."""
    c = int_str(cpus)
    g = int_str(gpus)
    gres = np.where(gpus > 0, np.where(typed, "gres/gpu:" + gpu_type + "=" + g + ",", "") + "gres/gpu=" + g + ",", "")
    head = ("billing=" + c + ",") if billing else ""
    return head + "cpu=" + c + "," + gres + "mem=" + fmt_mem_mib(mem_mib) + ",node=" + int_str(nodes)


def usage_tres(cpu_ms, mem_kib, vmem_kib, disk_bytes) -> np.ndarray:
    return ("cpu=" + fmt_duration(np.asarray(cpu_ms) // 1000) + ",energy=0,fs/disk=" + int_str(disk_bytes) + ",mem="
            + int_str(mem_kib) + "K,pages=0,vmem=" + int_str(vmem_kib) + "K")


def join_lines(cols: dict, n: int) -> np.ndarray:
    """Columns (name → object array or scalar string) → one ``|``-joined line per entry (joined by Arrow)."""
    parts = []
    for f in FIELDS:
        v = cols.get(f, "")
        parts.append(pa.scalar(v, pa.string()) if isinstance(v, str) else pa.array(v, type=pa.string()))
    if not any(isinstance(p, pa.Array) for p in parts):
        parts[0] = pa.array(np.full(n, parts[0].as_py(), dtype=object), type=pa.string())
    return pc.binary_join_element_wise(*parts, "|").to_numpy(zero_copy_only=False)
