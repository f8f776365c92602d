"""Reader for the prolog record of which GPUs each job held: CSV ``job_id,node,gpu_index``.

A Slurm prolog writes one line per GPU from ``SLURM_JOB_GPUS`` (or ``CUDA_VISIBLE_DEVICES``); the join uses
it with the job's allocation interval to attribute per-GPU DCGM samples.  Ledger: one record per data line;
a line without the three fields or with a GPU index that is not a whole number is quarantined.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..ledger import FileLedger, Quarantine, record_quarantine
from ..telemetry_table import TelemetryResult, empty_telemetry
from ..textio import InputError, read_text

HOLD_COLUMNS = ("job_id", "node", "gpu_index")


def is_gpu_index_header(line: str) -> bool:
    return [c.strip() for c in line.split(",")] == list(HOLD_COLUMNS)


def read_gpu_index(path, *, cluster: str | None = None) -> TelemetryResult:
    name = str(path)
    lines = read_text(path).splitlines()
    ledger = FileLedger(file=name, format="gpu-index")
    quarantine = Quarantine()
    if not lines or not is_gpu_index_header(lines[0]):
        raise InputError(f"{name}: line 1: expected the header 'job_id,node,gpu_index'")
    ledger.structural = 1 + sum(1 for ln in lines[1:] if not ln.strip())
    body = [(i, ln) for i, ln in enumerate(lines[1:], start=2) if ln.strip()]
    ledger.read = len(body)
    parts = pd.Series([ln for _, ln in body], dtype="object").str.split(",", expand=False)
    width = parts.str.len().to_numpy() if len(parts) else np.zeros(0, dtype=int)
    rows = []
    for (i, ln), w, p in zip(body, width, parts, strict=True):
        del p
        if w != 3:
            record_quarantine(ledger, quarantine, i, "line", f"expected 3 fields, got {w}", ln)
    ok = width == 3
    if ok.any():
        f = pd.DataFrame(parts[ok].tolist(), columns=list(HOLD_COLUMNS))
        f = f.apply(lambda c: c.str.strip())
        gpu = pd.to_numeric(f["gpu_index"], errors="coerce")
        bad = (gpu.isna() | (gpu < 0) | (gpu != gpu.round()) | (f["job_id"] == "") | (f["node"] == "")).to_numpy()
        ok_lines = [b for b, k in zip(body, ok, strict=True) if k]
        for k in np.flatnonzero(bad):
            i, ln = ok_lines[k]
            field_name = "gpu_index" if pd.isna(gpu.iloc[k]) or gpu.iloc[k] < 0 else "job_id" if not f["job_id"].iloc[k] else "node"
            record_quarantine(ledger, quarantine, i, field_name, "missing or not a GPU index", ln)
        rows = f[~bad].assign(gpu_index=gpu[~bad].astype("int64"))
    holds = pd.DataFrame(rows, columns=list(HOLD_COLUMNS)) if len(rows) else pd.DataFrame(columns=list(HOLD_COLUMNS))
    holds["job_id"] = holds["job_id"].astype("string")
    holds["node"] = holds["node"].astype("string")
    holds["gpu_index"] = holds["gpu_index"].astype("int64")
    if cluster:
        holds["cluster"] = cluster
    ledger.used = len(holds)
    return TelemetryResult(empty_telemetry(), ledger, quarantine, holds=holds)
