"""What a job asked for: ``Resource_List.select`` (PBS Pro), ``Resource_List.nodes`` (Torque, and PBS's old
syntax), and the job-wide ``Resource_List.*`` resources, resolved into job totals.

``select=[N:]chunk[+[N:]chunk…]``, a chunk ``res=value[:res=value…]``, N chunks of each (1 when omitted)
(OpenPBS ``pbs_resources(7B)``, "Requesting Resources in Chunks"); totals are Σ N × per-chunk value.  A chunk
without ``ncpus`` or ``mem`` leaves that total unknown (the server's ``default_chunk`` filled it); one without
``ngpus`` asked for none.  ``nodes=spec[+spec…][#suffix]``, a spec ``count|hostname[:ppn=P][:gpus=G][:property…]``
(Torque Administrator Guide, "Requesting resources"; PBS's node-specification conversion also reads
``ncpus=X``/``cpp=X`` as the CPUs per node): nodes Σ count, CPUs Σ count × P (P = 1 when absent), GPUs Σ count × G.

Job-wide values win where present: PBS Pro sets ``Resource_List.ncpus``, ``mem``… to the sum over all chunks,
defaults included (``pbs_resources(7B)``, "Limits on Resource Usage"), and Torque's ``mem``/``vmem`` are job totals.
``pmem``/``pvmem`` are per process: × the processes, taken as the CPUs asked.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .values import size_bytes


def per_distinct(func, col: pa.Array) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``func(text) -> dict of floats`` over each distinct non-empty value, spread back to the rows; ``bad`` where
    it raised ``ValueError``."""
    codes = pc.dictionary_encode(pc.fill_null(col, ""))
    index = np.asarray(codes.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    results, failed = [], []
    for text in codes.dictionary.to_pylist():
        try:
            results.append(func(text) if text else {})
            failed.append(False)
        except (ValueError, ZeroDivisionError):
            results.append({})
            failed.append(True)
    out = {}
    for k in sorted({k for d in results for k in d}):
        table = np.array([d.get(k, np.nan) for d in results], dtype="float64")
        out[k] = table[index]
    return out, np.asarray(failed, dtype=bool)[index] if len(index) else np.zeros(0, dtype=bool)


def parse_select(text: str) -> dict:
    """A selection statement → ``chunks``, ``ncpus``, ``mem``, ``vmem``, ``ngpus`` totals (NaN where unknown)."""
    chunks = ncpus = mem = vmem = ngpus = 0.0
    for spec in text.split("+"):
        items = spec.split(":")
        n = 1
        if items and items[0].isdigit():
            n = int(items.pop(0))
        res = {}
        for item in items:
            name, eq, value = item.partition("=")
            if not eq or not name:
                raise ValueError(f"not res=value: {item!r}")
            res[name] = value
        chunks += n
        ncpus += n * float(_count(res["ncpus"])) if "ncpus" in res else np.nan
        ngpus += n * float(_count(res["ngpus"])) if "ngpus" in res else 0.0
        mem += n * size_bytes(res["mem"]) if "mem" in res else np.nan
        vmem += n * size_bytes(res["vmem"]) if "vmem" in res else np.nan
    return {"chunks": chunks, "ncpus": ncpus, "mem": mem, "vmem": vmem, "ngpus": ngpus}


def parse_nodes(text: str) -> dict:
    """A node specification → ``nodes``, ``cpus``, ``gpus`` totals."""
    nodes = cpus = gpus = 0.0
    for spec in text.split("#", 1)[0].split("+"):
        items = spec.split(":")
        head = items.pop(0)
        if not head:
            raise ValueError("empty node spec")
        count = int(head) if head.isdigit() else 1
        ppn, g = 1, 0
        for item in items:
            name, eq, value = item.partition("=")
            if eq and name in ("ppn", "ncpus", "cpp"):
                ppn = _count(value)
            elif eq and name == "gpus":
                g = _count(value)
        nodes += count
        cpus += count * ppn
        gpus += count * g
    return {"nodes": nodes, "cpus": cpus, "gpus": gpus}


def _count(text: str) -> int:
    if not text.isdigit():
        raise ValueError(f"not a count: {text!r}")
    return int(text)


def first_known(*columns: np.ndarray) -> np.ndarray:
    """Per row, the first of ``columns`` that is not NaN."""
    out = np.full(len(columns[0]), np.nan)
    for c in columns:
        out = np.where(np.isnan(out), c, out)
    return out


def memory_request(f: dict, cpus: np.ndarray) -> dict[str, np.ndarray]:
    """Resolve the memory request, like with like: physical (``mem``, else ``pmem`` × processes) where any is
    asked, else virtual (``vmem``, else ``pvmem`` × processes).  Returns ``bytes``, ``virtual`` (the request is
    virtual memory: compare with ``resources_used.vmem``) and ``per_process`` (from pmem/pvmem)."""
    mem = first_known(f["mem"], f["select_mem"])
    vmem = first_known(f["vmem"], f["select_vmem"])
    pmem, pvmem = f["pmem"] * cpus, f["pvmem"] * cpus
    physical = ~np.isnan(mem) | ~np.isnan(f["pmem"])
    virtual = ~physical & (~np.isnan(vmem) | ~np.isnan(f["pvmem"]))
    out = np.where(physical, first_known(mem, pmem), np.where(virtual, first_known(vmem, pvmem), np.nan))
    per_process = (physical & np.isnan(mem) & ~np.isnan(pmem)) | (virtual & np.isnan(vmem) & ~np.isnan(pvmem))
    return {"bytes": out, "virtual": virtual, "per_process": per_process}
