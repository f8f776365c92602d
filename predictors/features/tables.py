"""The history a job submitted just after the history ends would see, tabled by user, job family, request and
request shape: one job's submission features without recomputing the history of every past job.

A job's history features (``predictors.features``) depend only on the groups it belongs to (its user, its
family, its user and request, its user and request shape) and its submission time.  The advisor submits every
job at the same moment, one second after the history's last job ended, so those figures can be computed once,
when the model is fitted: :func:`feature_tables` adds to the history one *probe* per distinct (user, request
shape) and per family, submitted at that moment and never ending (so no probe enters any other job's
history), computes the features of all rows, and keeps the probes' figures by group.  :func:`job_features`
then gives a new job its figures by looking its groups up, and the figures of an empty history for groups
never seen: exactly what :func:`predictors.features.submission_features` gives the job appended to the whole
history (tested).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit.families import job_family

from .submission import epoch_s, submission_features
from .targets import request

#: what a probe copies of a job: the request columns the features compare (GPUs read both ways: the GPU
#: request reads req_gpus first, the GPU-memory request alloc_gpus first), and the GPU type (card memory)
SHAPE = ("time_limit_s", "req_cpus", "req_mem_bytes", "req_gpus", "alloc_gpus", "gpu_type", "req_nodes")
#: the request shape "the same job again" compares (``features.REQUESTS``, as the job table names them)
SHAPE_KEY = ("time_limit_s", "req_cpus", "req_mem_bytes", "req_gpus", "req_nodes")
KEYS = {"user": ("user",), "family": ("family",), "userreq": ("user", "request_key"),
        "usershape": ("user", *(f"shape_{c}" for c in SHAPE_KEY))}
#: user-level columns that depend on the new job's request (filled by :func:`job_features`)
REQUEST_DEPENDENT = ("user_prev_same_request",)


def _f(jobs: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(jobs[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def shape_frame(jobs: pd.DataFrame) -> pd.DataFrame:
    """Each job's (user, request shape) as the features resolve it."""
    gpus_req = request(jobs, "gpus")
    alloc = _f(jobs, "alloc_gpus")
    return pd.DataFrame({
        "user": jobs["user"].astype("string").to_numpy(),
        "time_limit_s": _f(jobs, "time_limit_s"), "req_cpus": request(jobs, "cpus"),
        "req_mem_bytes": request(jobs, "memory"), "req_gpus": gpus_req,
        "alloc_gpus": np.where(np.isfinite(alloc), alloc, gpus_req),
        "gpu_type": jobs["gpu_type"].astype("string").to_numpy(), "req_nodes": _f(jobs, "req_nodes")})


def probes(history: pd.DataFrame, query_time: pd.Timestamp) -> tuple[pd.DataFrame, int]:
    """Probe rows (one per distinct user and request shape, then one per family) and how many are shapes."""
    shapes = shape_frame(history)
    shapes = shapes[shapes["user"].notna()].drop_duplicates().reset_index(drop=True)
    fam = job_family(history["job_name"]) if "job_name" in history else pd.Series(dtype="string")
    names = (pd.DataFrame({"family": fam.to_numpy(), "job_name": history["job_name"].astype("string").to_numpy()})
             .dropna().drop_duplicates("family"))
    n = len(shapes) + len(names)
    out = pd.DataFrame({c: pd.Series([pd.NA] * n, dtype="string") for c in
                        ("cluster", "job_id", "user", "account", "partition", "qos", "job_name", "gpu_type", "state",
                         "caveats")})
    for c in ("elapsed_s", "cpu_used_s", "mem_peak_bytes", "gpu_util_mean", "gpu_mem_peak_bytes", "alloc_cpus",
              "alloc_mem_bytes"):
        out[c] = np.nan
    for c in ("time_limit_s", "req_cpus", "req_mem_bytes", "req_gpus", "alloc_gpus", "req_nodes"):
        out[c] = np.concatenate([shapes[c].to_numpy(dtype=np.float64), np.full(len(names), np.nan)])
    out["user"] = pd.array([*shapes["user"], *[pd.NA] * len(names)], dtype="string")
    out["gpu_type"] = pd.array([*shapes["gpu_type"], *[pd.NA] * len(names)], dtype="string")
    out["job_name"] = pd.array([*[pd.NA] * len(shapes), *names["job_name"]], dtype="string")
    out["submit_time"] = pd.Series([query_time] * n, dtype=history["submit_time"].dtype)
    out["end_time"] = pd.Series([pd.NaT] * n, dtype=history["end_time"].dtype)
    return out, len(shapes)


def _key(values) -> tuple:
    """A hashable key with NaN and missing equal to themselves."""
    return tuple("<na>" if (v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))) else
                 (float(v) if isinstance(v, int | float | np.floating | np.integer) else str(v)) for v in values)


def last_requests(history: pd.DataFrame, target: str) -> pd.Series:
    """Per user, the request of the job submitted last among those whose request is known (ties: the later
    row), as ``past_stats`` over submissions reads it."""
    req = request(history, target)
    sub = epoch_s(history["submit_time"])
    frame = pd.DataFrame({"user": history["user"].astype("string").to_numpy(), "t": np.floor(sub), "req": req})
    frame = frame[frame["user"].notna() & np.isfinite(frame["t"]) & np.isfinite(frame["req"])]
    frame = frame.sort_values(["user", "t"], kind="stable")
    return frame.groupby("user", sort=False)["req"].last()


def feature_tables(history: pd.DataFrame, target: str, query_time: pd.Timestamp,
                   X_all: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(features of the history's jobs, tables)`` for ``target``.  ``tables`` has a ``table`` column
    (``user``, ``family``, ``userreq``, ``usershape``), the key columns and the figures of that group."""
    pr, n_shapes = probes(history, query_time)
    both = pd.concat([history.reset_index(drop=True), pr], ignore_index=True)
    X = submission_features(both, target) if X_all is None else X_all
    Xp = X.iloc[len(history):].reset_index(drop=True)
    Xs, Xf = Xp.iloc[:n_shapes].reset_index(drop=True), Xp.iloc[n_shapes:].reset_index(drop=True)
    shapes = pr.iloc[:n_shapes].reset_index(drop=True)
    user_cols = [c for c in X.columns if c.startswith("user_") and c not in REQUEST_DEPENDENT]
    fam_cols = [c for c in X.columns if c.startswith("family_")]
    req_cols = [c for c in X.columns if c.startswith("userreq_")]
    shape_cols = [c for c in X.columns if c.startswith("usershape_")]
    key = shape_frame(shapes)
    parts = []
    users = pd.DataFrame({"table": "user", "user": key["user"], **{c: Xs[c] for c in user_cols}}).drop_duplicates("user")
    last = last_requests(history, target)
    users["last_request"] = users["user"].map(last).astype("float64")
    parts.append(users)
    parts.append(pd.DataFrame({"table": "family", "family": Xf["family"].astype("string"), **{c: Xf[c] for c in fam_cols}}))
    reqs = pd.DataFrame({"table": "userreq", "user": key["user"], "request_key": Xs["request"].astype("float64"),
                         **{c: Xs[c] for c in req_cols}})
    parts.append(reqs[np.isfinite(reqs["request_key"])].drop_duplicates(["user", "request_key"]))
    shapes_t = pd.DataFrame({"table": "usershape", "user": key["user"], **{f"shape_{c}": key[c] for c in SHAPE_KEY},
                             **{c: Xs[c] for c in shape_cols}})
    parts.append(shapes_t.drop_duplicates(list(KEYS["usershape"])))
    tables = pd.concat(parts, ignore_index=True)
    for c in ("table", "user", "family"):
        if c in tables:
            tables[c] = tables[c].astype("string")
    return X.iloc[: len(history)].reset_index(drop=True), tables


class TableIndex:
    """The tables of one target, for one-job look-ups by key (NaN matches NaN, as the groups compare)."""

    def __init__(self, tables: pd.DataFrame):
        self.parts = {name: tables[tables["table"] == name].reset_index(drop=True) for name in KEYS}
        self.columns = {name: [c for c in tables.columns if c.startswith(f"{name}_")] for name in KEYS}

    def row(self, name: str, key) -> pd.Series | None:
        sub = self.parts[name]
        hit = np.ones(len(sub), dtype=bool)
        for col, want in zip(KEYS[name], _key(key), strict=True):
            vals = sub[col]
            if want == "<na>":
                hit &= vals.isna().to_numpy()
            elif isinstance(want, float):
                hit &= (pd.to_numeric(vals, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan) == want)
            else:
                hit &= (vals.astype("string") == want).fillna(False).to_numpy(dtype=bool)
        rows = np.flatnonzero(hit)
        return sub.iloc[rows[0]] if len(rows) else None


def job_features(job: pd.DataFrame, target: str, index: TableIndex) -> pd.DataFrame:
    """The submission features of one job (a one-row frame submitted at the tables' moment)."""
    X = submission_features(job.reset_index(drop=True), target)
    user = job["user"].iloc[0]
    keys = {"family": (str(X["family"].iloc[0]),)}
    if user is not None and not pd.isna(user):
        shape = shape_frame(job).iloc[0]
        keys.update({"user": (str(user),), "userreq": (str(user), float(X["request"].iloc[0])),
                     "usershape": (str(user), *(shape[c] for c in SHAPE_KEY))})
    for name, key in keys.items():
        row = index.row(name, key)
        if row is None:
            continue  # a group never seen: its history is empty, as computed
        cols = [c for c in index.columns[name] if c in X.columns]
        X.loc[0, cols] = row[cols].to_numpy(dtype=np.float64)
        if name == "user":
            last, req = float(row["last_request"]), float(X["request"].iloc[0])
            X.loc[0, "user_prev_same_request"] = float(last == req) if np.isfinite(last) else np.nan
    return X
