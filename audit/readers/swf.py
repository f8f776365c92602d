"""Reader for the Standard Workload Format of the Parallel Workloads Archive (plain or gzip).

SWF fields (1-based): 1 job, 2 submit s, 3 wait s, 4 run s, 5 allocated procs, 6 average CPU time
per processor s, 7 used memory KB per processor, 8 requested procs, 9 requested time s,
10 requested memory KB per processor, 11 status, 12 user, 13 group, 14 executable, 15 queue,
16 partition, 17 preceding job, 18 think time; -1 means unknown.  Times are offsets from the
header's ``UnixStartTime``.  The header's ``MaxProcs`` (the machine's processors) is declared as the cluster
shape: one pool of that many processors, the archive's own model of the machine (``ReadResult.cluster_shape``).

ASCII text is split into lines and tokens by pyarrow (its CSV reader with one column and no quoting, then
whitespace splits and a cast of the tokens to floats), line for line as ``str.splitlines`` and
``str.split`` would; other text, and files with a line that is not 18 numbers, are read line by line so
that each malformed line is quarantined with the field at fault.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from ..job_table import caveats_from_masks, conform
from ..ledger import FileLedger, Quarantine, ReadResult, record_quarantine
from ..textio import read_bytes

FIELDS = (
    "job", "submit", "wait", "run", "alloc_procs", "cpu_time", "used_mem_kb", "req_procs", "req_time",
    "req_mem_kb", "status", "user", "group", "executable", "queue", "partition", "preceding", "think",
)

#: SWF status → canonical state (0 failed, 1 completed, 2/3/4 partial executions, 5 cancelled)
STATUS = {0: "FAILED", 1: "COMPLETED", 2: "REQUEUED", 3: "COMPLETED", 4: "FAILED", 5: "CANCELLED"}


def read_swf(path, *, cluster: str | None = None) -> ReadResult:
    """Read one SWF file into the canonical job table, with its ledger and quarantine."""
    raw = read_bytes(path)
    name = str(path)
    ledger = FileLedger(file=name, format="swf")
    quarantine = Quarantine()
    split = _split_lines(raw)
    if split is None:  # text the columnar split cannot take line for line as ``str.splitlines`` does
        lines = raw.decode("utf-8", errors="replace").splitlines()
        data = [i for i, line in enumerate(lines) if (head := line.lstrip()) and head[0] != ";"]
        n_lines, comments = len(lines), [line for line in lines if line.lstrip()[:1] == ";"]
        data_lines = [lines[i] for i in data]
        values = None
    else:
        del raw  # the data lines hold what is needed of the text
        n_lines, comments, data, data_arr = split
        del split
        values = _values(data_arr)
        data_lines = data_arr.to_pylist() if values is None else None
    ledger.structural = n_lines - len(data)
    ledger.read = len(data)
    header = _header(comments)
    data = np.asarray(data, dtype=np.int64)
    if values is not None:  # every line 18 numbers
        num, counts = values, np.full(len(data), len(FIELDS))
    else:
        frame, counts = _numbers(data_lines)
        num = frame.to_numpy(dtype=np.float64)
    wrong = counts != len(FIELDS)
    bad = ~np.isfinite(num) & ~wrong[:, None]  # NaN (a "nan" token) or infinite: no number of seconds or processors
    bad_rows = wrong | bad.any(axis=1)
    if bad_rows.any():
        if data_lines is None:
            data_lines = data_arr.to_pylist()
        for pos in np.flatnonzero(bad_rows):
            if wrong[pos]:
                record_quarantine(ledger, quarantine, int(data[pos]) + 1, "line",
                                  f"expected 18 fields, got {counts[pos]}", data_lines[pos])
            else:
                record_quarantine(ledger, quarantine, int(data[pos]) + 1, FIELDS[int(np.argmax(bad[pos]))],
                                  "not a number", data_lines[pos])
        num = num[~bad_rows]
        data = data[~bad_rows]
    ledger.used = len(num)
    ledger.jobs_emitted = len(num)
    jobs = _to_canonical(num, data + 1, header, name, cluster)
    shape = declared_shape(header, name, cluster or _cluster_name(header, name))
    return ReadResult(jobs=jobs, ledger=ledger, quarantine=quarantine, cluster_shape=shape)


def declared_shape(header: dict, name: str, cluster: str) -> dict | None:
    """The cluster shape an SWF header declares (the layout of a cluster-shape TOML): one pool of ``MaxProcs``
    processors (``procs``), with what it rests on (``inferred``); None where the header gives no positive whole
    number there."""
    text = str(header.get("MaxProcs", "")).strip()
    if not text.isdigit() or int(text) < 1:
        return None
    return {"name": cluster, "procs": int(text),
            "inferred": f"the header of {Path(name).name}: MaxProcs {int(text)}, one pool of that many processors "
                        "(memory and GPUs not modelled)"}


def _cluster_name(header: dict, name: str) -> str:
    return header.get("Computer") or header.get("Installation") or _stem(name)


#: bytes ``str.splitlines`` breaks lines at and a CSV reader does not (vertical tab, form feed, the
#: file/group/record separators) and the unit separator used below as the column delimiter
_OTHER_BREAKS = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")


def _split_lines(raw: bytes):
    """``(lines, comment lines, data line indices, data lines as a pyarrow array)`` of ASCII text, split into
    lines by pyarrow's CSV reader (one column, no quoting: every line a row, blank ones too), or None for
    text it would not split as ``str.splitlines`` does (non-ASCII bytes, line breaks other than ``\\n``,
    ``\\r\\n`` and ``\\r``).  A line is data unless it is blank or its first non-blank character is ``;``."""
    if not raw.isascii() or any(b in raw for b in _OTHER_BREAKS):
        return None
    try:
        table = pcsv.read_csv(
            pa.py_buffer(raw),
            read_options=pcsv.ReadOptions(autogenerate_column_names=True, use_threads=False, block_size=1 << 22),
            parse_options=pcsv.ParseOptions(delimiter="\x1f", quote_char=False, escape_char=False,
                                            ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(column_types={"f0": pa.string()}, strings_can_be_null=False,
                                                quoted_strings_can_be_null=False),
        )
    except pa.ArrowInvalid:
        return None
    if table.num_columns != 1:
        return None
    lines = table.column(0).combine_chunks()
    first = pc.utf8_slice_codeunits(pc.ascii_ltrim_whitespace(lines), 0, 1)
    comment = pc.equal(first, ";").to_numpy(zero_copy_only=False)
    data = pc.and_(pc.not_equal(first, ""), pc.invert(pc.equal(first, ";"))).to_numpy(zero_copy_only=False)
    idx = np.flatnonzero(data)
    return len(lines), lines.filter(pa.array(comment)).to_pylist(), idx, lines.take(pa.array(idx))


def _values(data_lines: pa.Array):
    """The 18 fields of every data line as a float array (lines × 18), or None when some line holds another
    number of tokens or a token that is not a number (then :func:`_numbers` says which)."""
    tokens = pc.ascii_split_whitespace(pc.ascii_trim_whitespace(data_lines))
    if len(data_lines) and not pc.all(pc.equal(pc.list_value_length(tokens), len(FIELDS))).as_py():
        return None
    try:
        flat = pc.cast(pc.list_flatten(tokens), pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return flat.to_numpy(zero_copy_only=False).reshape(len(data_lines), len(FIELDS))


def _header(comment_lines) -> dict:
    """``; Key: value`` header lines → {Key: value} (the first occurrence of a key wins)."""
    header: dict = {}
    for line in comment_lines:
        m = re.match(r"\s*;\s*(\w+):\s*(.*)$", line)
        if m and m.group(1) not in header:
            header[m.group(1)] = m.group(2).strip()
    return header


def _numbers(lines: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """The 18 fields as floats (NaN where a token is missing or not a number) and the token count per line.

    The fast path parses every line at once; a line with a token that is not a number, or too many
    tokens, sends the file down the line-by-line path.
    """
    if not lines:
        return pd.DataFrame({f: pd.Series(dtype=float) for f in FIELDS}), np.zeros(0, dtype=int)
    try:
        num = pd.read_csv(io.StringIO("\n".join(lines)), sep=r"\s+", header=None, names=FIELDS, dtype="float64",
                          engine="c")
        if len(num) == len(lines):
            missing = num.isna().to_numpy()
            if not missing.any():
                return num, np.full(len(lines), len(FIELDS))
            trailing = np.cumprod(missing[:, ::-1], axis=1).sum(axis=1)  # only missing tokens can be NaN here
            return num, len(FIELDS) - trailing
    except ValueError:
        pass
    counts = np.array([len(line.split()) for line in lines])
    ok = counts == len(FIELDS)
    num = pd.DataFrame(np.nan, index=range(len(lines)), columns=list(FIELDS))
    if ok.any():
        good = [line for line, k in zip(lines, ok, strict=True) if k]
        frame = pd.read_csv(io.StringIO("\n".join(good)), sep=r"\s+", header=None, names=FIELDS, dtype=str,
                            engine="c")
        num.loc[ok] = frame.apply(pd.to_numeric, errors="coerce").to_numpy()
    return num, counts


def _known(s: pd.Series) -> pd.Series:
    return s.where(s >= 0)


def _to_canonical(values: np.ndarray, lines: np.ndarray, header: dict, name: str, cluster: str | None) -> pd.DataFrame:
    num = pd.DataFrame(values, columns=list(FIELDS), copy=False)
    lines = pd.Series(lines)
    origin = header.get("UnixStartTime")
    t0 = int(origin) if origin and origin.lstrip("-").isdigit() else 0
    submit = _known(num["submit"])
    wait = _known(num["wait"])
    run = _known(num["run"])
    procs = _known(num["alloc_procs"])
    req_procs = _known(num["req_procs"])
    cpu_per_proc = _known(num["cpu_time"])
    used_kb = _known(num["used_mem_kb"])
    req_kb = _known(num["req_mem_kb"])
    mem_copy = used_kb.notna() & (used_kb == req_kb)
    # Some archives put total CPU time in field 6: flag rows where per-processor time exceeds the runtime.
    cpu_total_like = cpu_per_proc.notna() & run.notna() & (cpu_per_proc > run * 1.05) & (procs > 1)
    cpu_used = cpu_per_proc.where(cpu_total_like, cpu_per_proc * procs)
    submit_t = pd.to_datetime(t0 + submit, unit="s", utc=True)
    start_t = pd.to_datetime(t0 + submit + wait, unit="s", utc=True)
    end_t = pd.to_datetime(t0 + submit + wait + run, unit="s", utc=True)
    n = len(num)
    state = num["status"].map(STATUS).astype("string")
    cav = caveats_from_masks(n, {
        "no_usage_fields": (cpu_per_proc.isna() & used_kb.isna()).to_numpy(),
        "swf_used_mem_copy": mem_copy.to_numpy(),
        "swf_cpu_time_total": cpu_total_like.to_numpy(),
        "swf_no_start_time": np.full(n, origin is None),
    })
    ints = lambda s: s.round().astype("Int64")  # noqa: E731
    job_id = _label(num["job"], keep_negative=True)
    # req_nodes (SWF has no node count) is left to conform, which adds it as nulls
    df = pd.DataFrame({
        "cluster": cluster or _cluster_name(header, name),
        "job_id": job_id,
        "job_id_raw": job_id,
        "source": "swf",
        "source_file": name,
        "source_line": lines.astype("Int64"),
        "user": _label(num["user"]),
        "account": _label(num["group"]),
        "partition": _label(num["partition"]),
        "qos": _label(num["queue"]),
        "job_name": _label(num["executable"]),
        "submit_time": submit_t,
        "eligible_time": submit_t,
        "start_time": start_t,
        "end_time": end_t,
        "elapsed_s": ints(run),
        "time_limit_s": ints(_known(num["req_time"])),
        "state": state,
        "req_cpus": ints(req_procs.fillna(procs)),
        "req_mem_bytes": ints(req_kb * 1024 * req_procs.fillna(procs)),
        "req_gpus": 0,
        "alloc_cpus": ints(procs),
        "alloc_mem_bytes": ints(req_kb * 1024 * procs),
        "alloc_gpus": 0,
        "cpu_used_s": cpu_used.astype("Float64"),
        "mem_peak_bytes": ints((used_kb * 1024 * procs).where(~mem_copy)),
        "caveats": cav,
    })
    return conform(df)


def _label(s: pd.Series, keep_negative: bool = False) -> pd.Series:
    """SWF numeric identifiers (users, groups, queues…) as strings; -1 → null (formatted by pyarrow)."""
    values = s.to_numpy(dtype="float64")
    mask = np.isnan(values) if keep_negative else (np.isnan(values) | (values < 0))
    ints = pa.array(np.nan_to_num(values).astype(np.int64), mask=mask)
    return pd.Series(pc.cast(ints, pa.string()).to_pandas(types_mapper=pd.ArrowDtype), index=s.index).astype("string")


def _stem(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return base.split(".swf")[0]
