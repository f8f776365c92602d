"""Reader for Prometheus data: ``query_range``/``query`` API JSON (matrix or vector) and exposition text.

Each sample becomes a row of the long telemetry table (:mod:`audit.telemetry_table`).  Labels map to
columns: node ← ``Hostname``/``hostname``/``node``/``kubernetes_node``; GPU index ← ``gpu``; job label ←
``hpc_job``/``slurm_job``/``jobid``/``job_id`` (never ``job``, which names the scrape job); pod,
namespace, container (also their ``exported_`` forms), ``UUID`` and ``resource``.  A series without
``__name__`` (the result of an expression) takes the file's stem as its metric.  Counters are kept as
read; resets are handled by the join.  Ledger: one record per sample; a sample whose value is not a finite
number is quarantined; an API error response is one quarantined record (field ``status``).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..ledger import FileLedger, Quarantine, record_quarantine
from ..telemetry_table import TelemetryResult, conform_telemetry, empty_telemetry, epoch_to_utc
from ..textio import InputError, read_text

NODE_LABELS = ("Hostname", "hostname", "node", "kubernetes_node", "nodename")
GPU_LABELS = ("gpu", "minor_number")
JOB_LABELS = ("hpc_job", "slurm_job", "jobid", "job_id")
POD_LABELS = ("pod", "exported_pod", "pod_name")
NAMESPACE_LABELS = ("namespace", "exported_namespace")
CONTAINER_LABELS = ("container", "exported_container", "container_name")
UUID_LABELS = ("UUID", "uuid")

_SAMPLE = (r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)"
           r"(?:\s+(?P<ts>-?\d+))?\s*$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,\s*|$)')


def _first(labels: dict, keys) -> str | None:
    for k in keys:
        v = labels.get(k)
        if v not in (None, ""):
            return v
    return None


_CGROUP_JOB = re.compile(r"/job_(\d+)(?:/|$)")


def _job_label(labels: dict) -> str | None:
    """The job a series names: a job label, else a cgroup path's ``job_N``; a cgroup exporter's step- or
    task-level series is named ``N.step`` so that it never adds to its job's own (job-level) series."""
    job = _first(labels, JOB_LABELS)
    if job is None and labels.get("cgroup"):
        m = _CGROUP_JOB.search(labels["cgroup"])
        job = m.group(1) if m else None
    sub = [labels.get(k) for k in ("step", "task") if labels.get(k)]
    if job is not None and sub:
        job = job + "." + ".".join(sub)
    return job


def label_columns(labels: dict, default_metric: str) -> dict:
    """One series' labels → the telemetry table's label columns."""
    gpu = _first(labels, GPU_LABELS)
    return {
        "metric": labels.get("__name__") or default_metric,
        "node": _first(labels, NODE_LABELS),
        "gpu_index": int(gpu) if gpu is not None and gpu.isdigit() else None,
        "job_label": _job_label(labels),
        "pod": _first(labels, POD_LABELS),
        "namespace": _first(labels, NAMESPACE_LABELS),
        "container": _first(labels, CONTAINER_LABELS),
        "uuid": _first(labels, UUID_LABELS),
        "resource": labels.get("resource"),
        "cgroup": labels.get("cgroup"),
    }


def _frame(series_labels: list[dict], series_of_sample: np.ndarray, times: np.ndarray, values: np.ndarray,
           cluster: str | None) -> pd.DataFrame:
    """Build the long table from per-series labels and per-sample (series, time, value) arrays.

    Labels are looked up once per series and spread to samples as categorical codes.
    """
    if not len(values):
        return empty_telemetry()
    lab = pd.DataFrame(series_labels)
    idx = np.asarray(series_of_sample, dtype=np.int64)
    cols = {}
    for c in lab.columns:
        if c == "gpu_index":
            g = pd.array(lab[c], dtype="Int64")
            cols[c] = pd.array(g[idx], dtype="Int64")
            continue
        codes, cats = pd.factorize(lab[c].astype("object"), use_na_sentinel=True)
        cols[c] = pd.Categorical.from_codes(codes[idx], categories=pd.Index(cats.astype(str), dtype=object))
    df = pd.DataFrame(cols)
    df["time"] = epoch_to_utc(times)
    df["value"] = values
    df["cluster"] = pd.Categorical([cluster] * len(df)) if cluster else None
    return conform_telemetry(df)


#: the start of an API response: an object whose first member has a key (a metric line never has ``"…":``)
_API_JSON = re.compile(r'\s*\{\s*"[^"\n]*"\s*:')


def read_prometheus(path, *, cluster: str | None = None, keep_labels: tuple = ()) -> TelemetryResult:
    """Read one Prometheus file: API JSON (an object whose first member is a quoted key, ``{"status": …``) or
    exposition text (anything else, a line that only starts with ``{`` included: a UTF-8 metric name is written
    ``{"my.metric", …} 1``, and junk is quarantined line by line).

    ``keep_labels``: labels beyond the long table's to return per sample in ``result.extra["labels"]``.
    """
    text = read_text(path)
    if _API_JSON.match(text):
        return read_prometheus_json(path, cluster=cluster, text=text, keep_labels=keep_labels)
    return read_prometheus_text(path, cluster=cluster, text=text, keep_labels=keep_labels)


def _with_labels(result: TelemetryResult, raw: list[dict], sid: np.ndarray, keep: tuple) -> TelemetryResult:
    """Attach the ``keep`` labels of each sample's series (looked up per series, spread by series number)."""
    if keep:
        per_series = pd.DataFrame([{k: r.get(k) for k in keep} for r in raw], columns=list(keep))
        result.extra["labels"] = per_series.iloc[np.asarray(sid, dtype=np.int64)].reset_index(drop=True)
    return result


def read_prometheus_json(path, *, cluster: str | None = None, text: str | None = None,
                         fast: bool = True, keep_labels: tuple = ()) -> TelemetryResult:
    """``/api/v1/query_range`` (matrix) or ``/api/v1/query`` (vector) response JSON.

    ``fast`` reads matrix values with the C CSV parser (see :func:`_fast_matrix`); the result is the same.
    """
    name = str(path)
    text = read_text(path) if text is None else text
    ledger = FileLedger(file=name, format="prometheus-json")
    quarantine = Quarantine()
    fast = _fast_matrix(text) if fast else None
    if fast is not None:
        return _with_labels(_fast_result(fast, name, cluster, ledger, quarantine),
                            [s.get("metric") or {} for s in fast[0]], fast[1], keep_labels)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}: line {exc.lineno}: not valid JSON: {exc.msg}") from exc
    if not isinstance(doc, dict) or "status" not in doc:
        raise InputError(f"{name}: not a Prometheus API response (no 'status')")
    if doc.get("status") != "success":
        ledger.read += 1
        reason = f"Prometheus error response: {doc.get('errorType', '?')}: {doc.get('error', '')}"
        record_quarantine(ledger, quarantine, 1, "status", reason, text.strip()[:500])
        return TelemetryResult(empty_telemetry(), ledger, quarantine)
    data = doc.get("data") or {}
    kind = data.get("resultType")
    if kind not in ("matrix", "vector"):
        raise InputError(f"{name}: resultType {kind!r} is not matrix or vector")
    default_metric = Path(name).name.split(".")[0]
    labels, sid, times, values = [], [], [], []
    for i, series in enumerate(data.get("result") or []):
        pairs = series.get("values") if kind == "matrix" else [series.get("value")]
        pairs = [p for p in (pairs or []) if p is not None]
        labels.append(label_columns(series.get("metric") or {}, default_metric))
        if not pairs:
            continue
        try:
            arr = np.array(pairs, dtype=str)
        except ValueError:
            arr = np.zeros((0, 0))
        if arr.ndim != 2 or arr.shape[1] != 2:
            ledger.read += len(pairs)
            for k in range(len(pairs)):
                record_quarantine(ledger, quarantine, i + 1, f"values[{k}]", "not a [time, value] pair",
                                  json.dumps(pairs[k])[:200])
            continue
        t, v = _floats(arr[:, 0]), _floats(arr[:, 1])
        ok = np.isfinite(t) & np.isfinite(v)
        ledger.read += len(pairs)
        for k in np.flatnonzero(~ok):
            field_name = f"values[{k}]"
            reason = "time is not a number" if not np.isfinite(t[k]) else "value is not a finite number"
            record_quarantine(ledger, quarantine, i + 1, field_name, reason, json.dumps(pairs[k])[:200])
        sid.append(np.full(int(ok.sum()), i, dtype=np.int64))
        times.append(t[ok])
        values.append(v[ok])
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dt))  # noqa: E731
    sid_a, t_a, v_a = cat(sid, np.int64), cat(times, "float64"), cat(values, "float64")
    ledger.used = len(v_a)
    raw = [series.get("metric") or {} for series in data.get("result") or []]
    return _with_labels(TelemetryResult(_frame(labels, sid_a, t_a, v_a, cluster), ledger, quarantine), raw, sid_a,
                        keep_labels)


_MATRIX = re.compile(r'"resultType"\s*:\s*"matrix"')
_VALUES_START = re.compile(r'"values"\s*:\s*\[')
_VALUES_END = re.compile(r"\]\s*\]")
_EMPTY_END = re.compile(r"\s*\]")
_SPACE = str.maketrans("", "", '" \t\r\n')
_BRACKETS = str.maketrans("", "", "[]")


def _fast_matrix(text: str):
    """A ``query_range`` matrix parsed without building a Python object per sample, or None to fall back.

    The ``values`` arrays are cut out of the text and read by the C CSV parser as ``time,value`` lines; the
    skeleton left (labels, with empty ``values``) goes through ``json.loads``.  Anything unexpected — another
    layout, a value that is not a number — returns None and the file is read the slow, per-sample-checked way.
    """
    if not _MATRIX.search(text):
        return None
    spans, pos = [], 0
    while True:
        m = _VALUES_START.search(text, pos)
        if not m:
            break
        empty = _EMPTY_END.match(text, m.end())
        if empty:
            spans.append((m.end(), m.end()))
            pos = empty.end()
            continue
        e = _VALUES_END.search(text, m.end())
        if not e:
            return None
        spans.append((m.end(), e.start() + 1))  # the inner text: [t,"v"],[t,"v"]…
        pos = e.end()
    if not spans:
        return None
    skeleton = []
    last = 0
    for a, b in spans:
        skeleton.append(text[last:a])
        last = b
    skeleton.append(text[last:])
    try:
        doc = json.loads("".join(skeleton))
    except json.JSONDecodeError:
        return None
    result = ((doc.get("data") or {}).get("result")) if isinstance(doc, dict) else None
    if doc.get("status") != "success" or not isinstance(result, list) or len(result) != len(spans) or any(
            s.get("values") != [] for s in result):
        return None
    lines = [text[a:b].translate(_SPACE).replace("],[", "\n").translate(_BRACKETS) for a, b in spans]
    counts = np.array([x.count("\n") + 1 if x else 0 for x in lines], dtype=np.int64)
    csv_text = "\n".join(x for x in lines if x)
    if not csv_text:
        return result, np.zeros(0, np.int64), np.zeros(0), np.zeros(0), counts
    try:
        frame = pd.read_csv(io.StringIO(csv_text), header=None, names=["t", "v"], dtype="float64", engine="c",
                            na_filter=True, skip_blank_lines=False)
    except (ValueError, pd.errors.ParserError):
        return None
    if len(frame) != counts.sum() or not (np.isfinite(frame["t"]).all() and np.isfinite(frame["v"]).all()):
        return None  # damaged samples are quarantined one by one on the checked path
    sid = np.repeat(np.arange(len(result), dtype=np.int64), counts)
    return result, sid, frame["t"].to_numpy(), frame["v"].to_numpy(), counts


def _fast_result(fast, name, cluster, ledger, quarantine) -> TelemetryResult:
    result, sid, t, v, _ = fast
    default_metric = Path(name).name.split(".")[0]
    labels = [label_columns(s.get("metric") or {}, default_metric) for s in result]
    ledger.read = ledger.used = len(t)
    return TelemetryResult(_frame(labels, sid, t, v, cluster), ledger, quarantine)


def _floats(a: np.ndarray) -> np.ndarray:
    """Strings → float64 (NaN where not a number): one NumPy cast, with a per-value fallback only on failure."""
    try:
        return a.astype("float64")
    except ValueError:
        return pd.to_numeric(pd.Series(a), errors="coerce").to_numpy(dtype="float64")


def parse_labels(body: str) -> dict | None:
    """``a="x",b="y"`` → dict (escapes ``\\"``, ``\\\\``, ``\\n`` undone); None when malformed."""
    out, pos = {}, 0
    body = body.strip()
    while pos < len(body):
        m = _LABEL.match(body, pos)
        if not m:
            return None
        out[m.group(1)] = m.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        pos = m.end()
    return out


def read_prometheus_text(path, *, cluster: str | None = None, text: str | None = None,
                         keep_labels: tuple = ()) -> TelemetryResult:
    """Prometheus exposition text (``name{labels} value [timestamp_ms]``); ``#`` lines are structural.

    A sample without a timestamp has a null time (a snapshot: counters still give use since start).
    """
    name = str(path)
    text = read_text(path) if text is None else text
    ledger = FileLedger(file=name, format="prometheus-text")
    quarantine = Quarantine()
    lines = pa.array(text.splitlines(), type=pa.string())
    trimmed = pc.utf8_trim_whitespace(lines)
    structural = np.asarray(pc.or_(pc.equal(trimmed, ""), pc.starts_with(trimmed, "#")).to_numpy(
        zero_copy_only=False), dtype=bool)
    ledger.structural = int(structural.sum())
    data_idx = np.flatnonzero(~structural)
    ledger.read = len(data_idx)
    if not len(data_idx):
        return TelemetryResult(empty_telemetry(), ledger, quarantine)
    rows = pc.take(trimmed, pa.array(data_idx))
    parts = pc.extract_regex(rows, _SAMPLE)
    ok = np.asarray(pc.is_valid(parts).to_numpy(zero_copy_only=False), dtype=bool)
    raw = rows.to_numpy(zero_copy_only=False)
    for k in np.flatnonzero(~ok):
        record_quarantine(ledger, quarantine, int(data_idx[k]) + 1, "line", "not a Prometheus sample line", raw[k])
    names = pc.struct_field(parts, "name").to_numpy(zero_copy_only=False)
    label_txt = pc.fill_null(pc.struct_field(parts, "labels"), "").to_numpy(zero_copy_only=False)
    values = pd.to_numeric(pd.Series(pc.struct_field(parts, "value").to_numpy(zero_copy_only=False)),
                           errors="coerce").to_numpy(dtype="float64")
    ts = pd.to_numeric(pd.Series(pc.struct_field(parts, "ts").to_numpy(zero_copy_only=False)),
                       errors="coerce").to_numpy(dtype="float64") / 1000.0
    key = pd.Series(names).fillna("") + "{" + pd.Series(label_txt).fillna("") + "}"
    codes, uniques = pd.factorize(key)
    series_labels, raw_labels, bad_series = [], [], np.zeros(len(uniques), dtype=bool)
    for j, u in enumerate(uniques):
        metric, _, body = u.partition("{")
        lab = parse_labels(body[:-1])
        if lab is None:
            bad_series[j] = True
            lab = {}
        lab["__name__"] = metric
        series_labels.append(label_columns(lab, metric))
        raw_labels.append(lab)
    bad_labels = ok & bad_series[codes]
    for k in np.flatnonzero(bad_labels):
        record_quarantine(ledger, quarantine, int(data_idx[k]) + 1, "labels", "malformed label set", raw[k])
    bad_value = ok & ~bad_labels & ~np.isfinite(values)
    for k in np.flatnonzero(bad_value):
        record_quarantine(ledger, quarantine, int(data_idx[k]) + 1, "value", "value is not a finite number", raw[k])
    keep = ok & ~bad_labels & ~bad_value
    ledger.used = int(keep.sum())
    df = _frame(series_labels, codes[keep], ts[keep], values[keep], cluster)
    return _with_labels(TelemetryResult(df, ledger, quarantine), raw_labels, codes[keep], keep_labels)
