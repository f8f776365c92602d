"""The long telemetry table: one row per sample, joined to jobs later (:mod:`audit.telemetry.join`).

Columns (DESIGN.md, plus the labels the join needs): ``cluster, node, gpu_index, metric, time, value``
and ``job_label`` (a job id the exporter wrote on the series: ``hpc_job``, cgroup ``jobid``),
``pod``, ``namespace``, ``container`` (Kubernetes series), ``uuid`` (the GPU's UUID), ``resource``
(``kube_pod_container_resource_requests``) and ``cgroup`` (the cgroup path of cgroup-exporter series).
Readers of telemetry return a :class:`TelemetryResult`; ``telemetry.parquet`` holds the table in
:data:`ARROW_SCHEMA`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from .job_table import UTC_NS
from .ledger import FileLedger, Quarantine

#: column -> pandas dtype; text labels are categorical (a month of samples repeats a few thousand values)
TELEMETRY_COLUMNS: dict[str, str] = {
    "cluster": "category",
    "node": "category",
    "gpu_index": "Int64",
    "metric": "category",
    "time": UTC_NS,
    "value": "float64",
    "job_label": "category",
    "pod": "category",
    "namespace": "category",
    "container": "category",
    "uuid": "category",
    "resource": "category",
    "cgroup": "category",
}
LABELS = tuple(c for c, t in TELEMETRY_COLUMNS.items() if t == "category")

#: GPU utilisation metrics, most preferred first (SM activity over duty cycle); values in percent or 0–1
GPU_UTIL_METRICS = ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL")
#: GPU memory used, MiB (DCGM) or bytes (per-pod series)
GPU_MEM_METRICS = {"DCGM_FI_DEV_FB_USED": 2**20, "pod_gpu_memory_used_bytes": 1}
CPU_COUNTER_METRICS = ("container_cpu_usage_seconds_total", "pod_cpu_usage_seconds_total")
MEM_GAUGE_METRICS = ("container_memory_working_set_bytes", "pod_memory_working_set_bytes")


#: the Parquet schema of telemetry.parquet (labels dictionary-encoded)
ARROW_SCHEMA = pa.schema([
    (c, pa.dictionary(pa.int32(), pa.string()) if t == "category" else pa.int64() if t == "Int64" else
     pa.timestamp("ns", tz="UTC") if t.startswith("datetime64") else pa.float64())
    for c, t in TELEMETRY_COLUMNS.items()])


def arrow_chunk(df: pd.DataFrame) -> pa.Table:
    """A telemetry frame as an Arrow table of :data:`ARROW_SCHEMA` (the same schema for every chunk)."""
    cols = []
    for name, typ in zip(ARROW_SCHEMA.names, ARROW_SCHEMA.types, strict=True):
        s = df[name]
        if pa.types.is_dictionary(typ):
            codes = s.cat.codes.to_numpy().astype(np.int32)
            cats = pa.array([str(c) for c in s.cat.categories], type=pa.string())
            cols.append(pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), cats))
        elif pa.types.is_int64(typ):
            cols.append(pa.array(s.to_numpy(dtype="float64", na_value=np.nan), mask=s.isna().to_numpy()).cast(
                pa.int64(), safe=False))
        else:
            cols.append(pa.Array.from_pandas(s, type=typ))
    return pa.Table.from_arrays(cols, schema=ARROW_SCHEMA)


@dataclass
class TelemetryResult:
    """What every telemetry reader returns: samples in the long table, the file's ledger and quarantine.

    ``holds`` (optional) maps jobs to the GPUs they held: ``job_id, node, gpu_index`` (a prolog record).
    """

    telemetry: pd.DataFrame
    ledger: FileLedger
    quarantine: Quarantine
    holds: pd.DataFrame | None = None
    extra: dict = field(default_factory=dict)


def _text_category(s: pd.Series) -> pd.Series:
    """A label column as a categorical whose categories are plain Python strings (nulls stay null)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        cats = s.cat.categories
    else:
        codes, cats = pd.factorize(s.astype("object"), use_na_sentinel=True)
    cats = pd.Index([str(c) for c in cats], dtype=object)
    return pd.Series(pd.Categorical.from_codes(codes, categories=cats))


def empty_telemetry() -> pd.DataFrame:
    return conform_telemetry(pd.DataFrame({"value": pd.Series(dtype="float64")}))


def conform_telemetry(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with exactly the telemetry columns, in order, with their dtypes (missing columns null)."""
    extra = set(df.columns) - set(TELEMETRY_COLUMNS)
    if extra:
        raise ValueError(f"columns outside the telemetry table: {sorted(extra)}")
    n = len(df)
    out = {}
    for col, dtype in TELEMETRY_COLUMNS.items():
        if col in df.columns:
            s = df[col].reset_index(drop=True)
            if dtype == UTC_NS:
                s = pd.to_datetime(s, utc=True).astype(UTC_NS)
            elif dtype == "category":
                s = _text_category(s)
            else:
                s = s.astype(dtype)
        elif dtype == UTC_NS:
            s = pd.Series(np.full(n, np.datetime64("NaT"), dtype="datetime64[ns]")).dt.tz_localize("UTC")
        elif dtype == "category":
            s = pd.Series(pd.Categorical.from_codes(np.full(n, -1, dtype=np.int8), categories=pd.Index([], dtype=object)))
        else:
            s = pd.Series(pd.array([None] * n, dtype=dtype))
        out[col] = s
    return pd.DataFrame(out)


def concat_telemetry(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate telemetry tables, unioning the label categories (no round trip through strings)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return empty_telemetry()
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    from pandas.api.types import union_categoricals

    out = {}
    for col, dtype in TELEMETRY_COLUMNS.items():
        if dtype == "category":
            out[col] = pd.Series(union_categoricals([_text_category(f[col]) for f in frames], ignore_order=True))
        else:
            out[col] = pd.concat([f[col] for f in frames], ignore_index=True)
    return pd.DataFrame(out)


def series_codes(df: pd.DataFrame, cols=("cluster", "node", "gpu_index", "uuid", "job_label", "namespace", "pod",
                                         "container", "cgroup", "metric")) -> np.ndarray:
    """One dense integer per time series (the identifying labels), from the categorical codes (no strings built).

    The codes are combined arithmetically and renumbered only when the product of the widths nears 2⁶²,
    then once at the end.
    """
    if not len(df):
        return np.zeros(0, dtype=np.int64)
    key = np.zeros(len(df), dtype=np.int64)
    span = 1
    for c in cols:
        s = df[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            k = len(s.cat.categories) + 1
            if k == 1:
                continue  # the label is absent throughout
            codes = s.cat.codes.to_numpy().astype(np.int64) + 1
        else:
            codes, uniq = pd.factorize(s, use_na_sentinel=True)
            codes, k = codes.astype(np.int64) + 1, len(uniq) + 1
        if span * k >= 2**62:
            key, uniq = pd.factorize(key)
            key, span = key.astype(np.int64), len(uniq)
        key = key * k + codes
        span *= k
    return pd.factorize(key)[0].astype(np.int64)


def epoch_to_utc(seconds) -> pd.Series:
    """Epoch seconds (float) → UTC timestamps with nanosecond precision kept to the microsecond."""
    sec = np.asarray(seconds, dtype="float64")
    known = np.isfinite(sec)
    ns = np.where(known, np.round(np.where(known, sec, 0.0) * 1e6), 0).astype("int64") * 1000
    out = pd.Series(pd.to_datetime(ns, unit="ns", utc=True))
    return out.where(known)
