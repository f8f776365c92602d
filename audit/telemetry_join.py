"""Attach telemetry samples to jobs and summarise them per job.

Three paths, tried in order for every sample:

1. **label** — the series names its job: ``hpc_job``/``jobid`` (→ ``job_id`` or ``job_id_raw``) or the pod
   (``namespace/pod`` → the pod's job through the pods map);
2. **gpu_index** — the prolog record (``job_id, node, gpu_index``) says which GPUs the job held; a sample of
   that GPU at ``start ≤ t < end`` (widened by the clock-skew tolerance) is the job's;
3. **node_time** — for GPU jobs with neither: the samples of their nodes that no other job claimed, shared
   in proportion to the GPUs each running job held (unheld GPUs assumed idle); the row carries
   ``telemetry_node_attributed``.

GPU samples that no job held are idle capacity: counted in the summary, never a job's waste.
Per job: mean and peak GPU utilisation (``DCGM_FI_PROF_SM_ACTIVE`` preferred to duty cycle), peak GPU memory
(the sum over its GPUs of each GPU's peak), CPU used (counter increase, resets handled), peak memory and the
share of its GPU-time covered by samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .telemetry_kernel import Accumulator, HoldIndex, counter_increase, group_reduce, median_interval
from .telemetry_table import series_codes
from .units import expand_hostlist

#: utilisation metrics, preferred first, with the factor that makes them 0–1
UTIL_SCALE = {"DCGM_FI_PROF_SM_ACTIVE": 1.0, "DCGM_FI_DEV_GPU_UTIL": 0.01, "pod_gpu_duty_cycle": 0.01}
#: GPU memory metrics with the factor that makes them bytes
GPU_MEM_SCALE = {"DCGM_FI_DEV_FB_USED": 2.0**20, "pod_gpu_memory_used_bytes": 1.0}
#: CPU counters (seconds) and memory gauges (bytes), preferred first; container series "" and "POD" are skipped
CPU_SOURCES = ("container_cpu_usage_seconds_total", "pod_cpu_usage_seconds_total", "cgroup_cpu_total_seconds")
MEM_SOURCES = ("container_memory_working_set_bytes", "pod_memory_working_set_bytes", "cgroup_memory_rss_bytes")

STAT_COLUMNS = ("cluster", "job_id", "join_path", "gpu_util_metric", "gpu_util_mean", "gpu_util_peak",
                "gpu_mem_peak_bytes", "gpu_samples", "gpu_coverage", "cpu_used_s", "mem_peak_bytes")


@dataclass
class JoinPolicy:
    """``skew_tolerance_s``: how far exporter and scheduler clocks may disagree; ``partial_below``: coverage
    under which a row carries ``telemetry_partial`` (only when at least two samples per GPU were due);
    ``interval_s``: the sample interval (estimated from the samples when None)."""

    skew_tolerance_s: float = 0.0
    partial_below: float = 0.9
    interval_s: float | None = None


@dataclass
class JoinResult:
    jobs: pd.DataFrame
    job_stats: pd.DataFrame
    summary: dict = field(default_factory=dict)


def _epoch(ts: pd.Series) -> np.ndarray:
    """UTC timestamps → float epoch seconds (NaN for NaT)."""
    s = pd.to_datetime(ts, utc=True)
    ns = s.to_numpy(dtype="datetime64[ns]").astype("int64").astype("float64")
    return np.where(s.isna().to_numpy(), np.nan, ns / 1e9)


def _lookup(keys: pd.Series, index: pd.Index) -> np.ndarray:
    """Positions of ``keys`` in ``index`` (-1 when absent or null); a categorical is looked up per category."""
    if not len(index):
        return np.full(len(keys), -1)
    if isinstance(keys.dtype, pd.CategoricalDtype):
        per_cat = index.get_indexer(pd.Index(keys.cat.categories.astype(str), dtype=object))
        codes = keys.cat.codes.to_numpy()
        return np.where(codes >= 0, per_cat[np.maximum(codes, 0)] if len(per_cat) else -1, -1)
    k = keys.astype("object").where(keys.notna(), None)
    return index.get_indexer(k)


class _FirstIndex:
    """Look names up to the row of their first occurrence (names may repeat, nulls never match)."""

    def __init__(self, names: np.ndarray, rows: np.ndarray):
        names = pd.Series(names, dtype="object")
        keep = (names.notna() & ~names.duplicated(keep="first")).to_numpy()
        self.index = pd.Index(names[keep].to_numpy())
        self.rows = np.asarray(rows)[keep]

    def rows_of(self, keys: pd.Series) -> np.ndarray:
        if not len(self.index):
            return np.full(len(keys), -1, dtype=np.int64)
        pos = _lookup(pd.Series(keys).reset_index(drop=True), self.index)
        return np.where(pos >= 0, self.rows[np.maximum(pos, 0)], -1).astype(np.int64)


class _JobKeys:
    """Ways to name a job row: its id, raw id, and (through the pods map) ``namespace/pod``."""

    def __init__(self, jobs: pd.DataFrame, pods: pd.DataFrame | None):
        n = len(jobs)
        ids = jobs["job_id"].astype("object").to_numpy()
        raw = jobs["job_id_raw"].astype("object").to_numpy()
        self.ids = _FirstIndex(ids, np.arange(n))
        self.labels = _FirstIndex(np.concatenate([ids, raw]), np.concatenate([np.arange(n), np.arange(n)]))
        if pods is not None and len(pods):
            key = (pods["namespace"].astype("object") + "/" + pods["pod"].astype("object")).to_numpy()
            self.pods = _FirstIndex(key, self.ids.rows_of(pods["job_id"].astype("object")))
        else:
            self.pods = None

    def by_label(self, labels: pd.Series) -> np.ndarray:
        return self.labels.rows_of(labels)

    def by_pod(self, namespace: pd.Series, pod: pd.Series) -> np.ndarray:
        """Rows for ``namespace/pod`` pairs, built once per distinct pair (never a string per sample)."""
        ns = namespace.astype("category") if not isinstance(namespace.dtype, pd.CategoricalDtype) else namespace
        pd_ = pod.astype("category") if not isinstance(pod.dtype, pd.CategoricalDtype) else pod
        a, b = ns.cat.codes.to_numpy().astype(np.int64) + 1, pd_.cat.codes.to_numpy().astype(np.int64) + 1
        width = len(pd_.cat.categories) + 1
        pair, uniq = pd.factorize(a * width + b)
        ua, ub = uniq // width - 1, uniq % width - 1  # -1: label absent
        ns_cats = np.asarray(list(ns.cat.categories.astype(str)) + [""], dtype=object)
        pod_cats = np.asarray(list(pd_.cat.categories.astype(str)) + [""], dtype=object)
        ns_txt, pod_txt = ns_cats[ua], pod_cats[ub]  # index -1 picks the trailing ""
        key = pd.Series(ns_txt.astype(object) + "/" + pod_txt.astype(object), dtype=object)
        key = key.where(ub >= 0, None)
        rows = (self.ids if self.pods is None else self.pods).rows_of(key)  # without a pods map: ``namespace/pod`` ids
        return rows[pair]


class TelemetryJoin:
    """Join a long telemetry table to a canonical job table (see the module docstring)."""

    def __init__(self, policy: JoinPolicy | None = None):
        self.policy = policy or JoinPolicy()

    def join(self, jobs: pd.DataFrame, telemetry: pd.DataFrame, holds: pd.DataFrame | None = None,
             pods: pd.DataFrame | None = None) -> JoinResult:
        jobs = jobs.reset_index(drop=True)
        n = len(jobs)
        keys = _JobKeys(jobs, pods)
        start, end = _epoch(jobs["start_time"]), _epoch(jobs["end_time"])
        tel = telemetry.reset_index(drop=True)
        direct = self._direct_rows(tel, keys)
        hold_tab = self._holds(jobs, holds, keys, start, end)
        summary: dict = {"samples": int(len(tel)), "by_path": {}}
        interval = self.policy.interval_s
        util_stats, mem_stats = {}, {}
        gpu_metric_mask = tel["metric"].isin(list(UTIL_SCALE) + list(GPU_MEM_SCALE)).to_numpy()
        if interval is None and gpu_metric_mask.any():
            g = tel[gpu_metric_mask]
            interval = median_interval(series_codes(g), _epoch(g["time"]))
        for metric in list(UTIL_SCALE) + list(GPU_MEM_SCALE):
            m = np.array((tel["metric"] == metric).fillna(False).to_numpy(), dtype=bool)
            if not m.any():
                continue
            scale = UTIL_SCALE.get(metric, GPU_MEM_SCALE.get(metric))
            stats = self._gpu_metric(tel[m], direct[m], hold_tab, jobs, start, end, scale, summary, metric)
            (util_stats if metric in UTIL_SCALE else mem_stats)[metric] = stats
        cpu = self._cpu(tel, direct, n)
        mem = self._mem(tel, direct, n)
        stats = self._assemble(jobs, util_stats, mem_stats, cpu, mem, interval, start, end)
        summary["interval_s"] = None if interval is None or not np.isfinite(interval) else float(interval)
        summary["jobs_with_gpu_telemetry"] = int((stats["gpu_samples"] > 0).sum())
        return JoinResult(jobs=self._apply(jobs, stats), job_stats=stats, summary=summary)

    # -- attribution -------------------------------------------------------------------------------------
    def _direct_rows(self, tel: pd.DataFrame, keys: _JobKeys) -> np.ndarray:
        """Job row named by the sample's own labels (job label first, then pod), else -1."""
        rows = keys.by_label(tel["job_label"]) if tel["job_label"].notna().any() else np.full(len(tel), -1)
        has_pod = tel["pod"].notna().to_numpy() & (rows < 0)
        if has_pod.any():
            by_pod = keys.by_pod(tel["namespace"], tel["pod"])
            rows = np.where(has_pod, by_pod, rows)
        return np.asarray(rows, dtype=np.int64)

    def _holds(self, jobs, holds, keys: _JobKeys, start, end) -> pd.DataFrame | None:
        if holds is None or not len(holds):
            return None
        row = keys.by_label(holds["job_id"].astype("string"))
        h = pd.DataFrame({"row": row, "node": holds["node"].astype("object").to_numpy(),
                          "gpu_index": pd.to_numeric(holds["gpu_index"], errors="coerce").to_numpy()})
        h = h[(h["row"] >= 0) & h["gpu_index"].notna()].reset_index(drop=True)
        h["start"], h["end"] = start[h["row"]], end[h["row"]]
        return h[np.isfinite(h["start"]) & np.isfinite(h["end"])].reset_index(drop=True)

    def _gpu_metric(self, g: pd.DataFrame, direct: np.ndarray, holds, jobs, start, end, scale, summary, metric):
        """Per job for one GPU metric: samples, sum, peak (largest sample) and Σ per-GPU peaks; path used."""
        n = len(jobs)
        t = _epoch(g["time"])
        v = g["value"].to_numpy(dtype="float64") * scale
        series = series_codes(g)
        row = direct.copy()
        path = np.where(row >= 0, 1, 0)
        tol = self.policy.skew_tolerance_s
        if holds is not None and len(holds):
            node_s = g["node"] if isinstance(g["node"].dtype, pd.CategoricalDtype) else g["node"].astype("category")
            code_s = node_s.cat.codes.to_numpy().astype(np.int64)
            code_h = pd.Index(node_s.cat.categories.astype(str), dtype=object).get_indexer(
                holds["node"].astype("object"))
            gpu_h = holds["gpu_index"].to_numpy(dtype="float64")
            gpu_s = g["gpu_index"].to_numpy(dtype="float64", na_value=np.nan)
            gid_h = np.where(np.isnan(gpu_h) | (code_h < 0), -1, code_h * 4096 + np.nan_to_num(gpu_h))
            gid_s = np.where(np.isnan(gpu_s) | (code_s < 0), -1, code_s * 4096 + np.nan_to_num(gpu_s))
            idx = HoldIndex(gid_h.astype(np.int64), holds["start"].to_numpy(), holds["end"].to_numpy(), tol)
            free = row < 0
            h = idx.assign(gid_s.astype(np.int64)[free], np.nan_to_num(t[free], nan=-1.0))
            hr = np.where(h >= 0, holds["row"].to_numpy()[np.maximum(h, 0)], -1)
            row[free] = hr
            path[free] = np.where(hr >= 0, 2, 0)
            held_rows = np.zeros(n, dtype=bool)
            held_rows[holds["row"].to_numpy()] = True
        else:
            held_rows = np.zeros(n, dtype=bool)
        # slots: (job row, series) pairs
        ok = row >= 0
        width = np.int64(series.max() + 1) if len(series) else np.int64(1)
        slot_codes, slot_uni = pd.factorize(row[ok].astype(np.int64) * width + series[ok])
        slot_row = row[ok][np.unique(slot_codes, return_index=True)[1]]  # codes number first appearances
        acc = Accumulator(len(slot_uni))
        acc.add(slot_codes.astype(np.int64), v[ok])
        cnt, tot, psum, pmax = group_reduce(slot_row, n, acc.count, acc.sum, acc.max)
        job_path = np.zeros(n, dtype=np.int64)
        np.maximum.at(job_path, row[ok], path[ok])
        # path 3: node and time
        unclaimed = ~ok & g["node"].notna().to_numpy() & np.isfinite(t)
        gpu_job = (jobs["alloc_gpus"].fillna(0).to_numpy() > 0) & (cnt == 0) & ~held_rows & np.isfinite(start)
        if unclaimed.any() and gpu_job.any():
            cap = 1.0 if metric in UTIL_SCALE else np.inf
            c3, s3, p3, m3 = _node_time(jobs, np.flatnonzero(gpu_job), g["node"].to_numpy(dtype=object)[unclaimed],
                                        t[unclaimed], v[unclaimed], start, end, tol, cap)
            got = c3 > 0
            cnt, tot, psum, pmax = (np.where(got, c3, cnt), np.where(got, s3, tot), np.where(got, p3, psum),
                                    np.where(got, m3, pmax))
            job_path = np.where(got, 3, job_path)
        summary["by_path"][metric] = {"label": int((path == 1).sum()), "gpu_index": int((path == 2).sum()),
                                      "unattributed": int((~ok).sum())}
        return {"count": cnt, "sum": tot, "peak_sum": psum, "peak_max": pmax, "path": job_path}

    def _cpu(self, tel: pd.DataFrame, direct: np.ndarray, n: int) -> np.ndarray:
        out = np.full(n, np.nan)
        for metric in CPU_SOURCES:
            m = _usable(tel, metric) & (direct >= 0)
            if not m.any():
                continue
            sub = tel[m]
            codes, _ = pd.factorize(series_codes(sub) * np.int64(len(direct) + 1) + direct[m])
            inc = counter_increase(codes, _epoch(sub["time"]), sub["value"].to_numpy(dtype="float64"))
            series_row = np.zeros(len(inc), dtype=np.int64)
            series_row[codes] = direct[m]
            total = np.bincount(series_row, weights=inc, minlength=n)
            seen = np.bincount(series_row, minlength=n) > 0
            out = np.where(np.isnan(out) & seen, total, out)
        return out

    def _mem(self, tel: pd.DataFrame, direct: np.ndarray, n: int) -> np.ndarray:
        out = np.full(n, np.nan)
        for metric in MEM_SOURCES:
            m = _usable(tel, metric) & (direct >= 0)
            if not m.any():
                continue
            sub = tel[m]
            codes, uni = pd.factorize(series_codes(sub) * np.int64(len(direct) + 1) + direct[m])
            acc = Accumulator(len(uni))
            acc.add(codes.astype(np.int64), sub["value"].to_numpy(dtype="float64"))
            series_row = np.zeros(len(uni), dtype=np.int64)
            series_row[codes] = direct[m]
            _, _, psum, _ = group_reduce(series_row, n, acc.count, acc.sum, acc.max)
            seen = np.bincount(series_row, minlength=n) > 0
            out = np.where(np.isnan(out) & seen, psum, out)
        return out

    # -- per-job table and the job table's update --------------------------------------------------------
    def _assemble(self, jobs, util_stats, mem_stats, cpu, mem, interval, start, end) -> pd.DataFrame:
        n = len(jobs)
        metric = np.full(n, None, dtype=object)
        mean = np.full(n, np.nan)
        peak = np.full(n, np.nan)
        cnt = np.zeros(n)
        path = np.zeros(n, dtype=np.int64)
        for name, st in util_stats.items():  # preferred first (dict order follows UTIL_SCALE)
            take = (st["count"] > 0) & (cnt == 0)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(take, st["sum"] / np.maximum(st["count"], 1), mean)
            peak = np.where(take, st["peak_max"], peak)
            metric = np.where(take, name, metric)
            cnt = np.where(take, st["count"], cnt)
            path = np.where(take, st["path"], path)
        mem_peak = np.full(n, np.nan)
        for st in mem_stats.values():
            take = (st["count"] > 0) & np.isnan(mem_peak)
            mem_peak = np.where(take, st["peak_sum"], mem_peak)
            path = np.where((path == 0) & take, st["path"], path)
        elapsed = jobs["elapsed_s"].astype("Float64").fillna(np.nan).to_numpy(dtype="float64")
        gpus = jobs["alloc_gpus"].astype("Float64").fillna(0).to_numpy(dtype="float64")
        step = float(interval) if interval is not None and np.isfinite(interval) and interval > 0 else np.nan
        # samples due per GPU: at least floor(elapsed / interval) grid points fall in any run of that length
        with np.errstate(invalid="ignore"):
            due = np.where((gpus > 0) & (elapsed >= 0), gpus * np.floor(elapsed / step), np.nan)
            cover = np.where(gpus > 0, np.minimum(cnt / np.maximum(due, 1.0), 1.0), np.nan)
        names = np.array([None, "label", "gpu_index", "node_time"], dtype=object)
        return pd.DataFrame({
            "cluster": jobs["cluster"].astype("string"),
            "job_id": jobs["job_id"].astype("string"),
            "join_path": pd.array(names[path], dtype="string"),
            "gpu_util_metric": pd.array(metric, dtype="string"),
            "gpu_util_mean": pd.array(np.clip(mean, 0, 1), dtype="Float64"),
            "gpu_util_peak": pd.array(np.clip(peak, 0, 1), dtype="Float64"),
            "gpu_mem_peak_bytes": pd.array(np.round(mem_peak), dtype="Float64").astype("Int64"),
            "gpu_samples": cnt.astype(np.int64),
            "gpu_coverage": pd.array(cover, dtype="Float64"),
            "cpu_used_s": pd.array(cpu, dtype="Float64"),
            "mem_peak_bytes": pd.array(np.round(mem), dtype="Float64").astype("Int64"),
            "_due": due,
        })

    def _apply(self, jobs: pd.DataFrame, stats: pd.DataFrame) -> pd.DataFrame:
        from .telemetry_caveats import apply_stats

        return apply_stats(jobs, stats, self.policy.partial_below)


def _usable(tel: pd.DataFrame, metric: str) -> np.ndarray:
    m = np.array((tel["metric"] == metric).fillna(False).to_numpy(), dtype=bool)
    if metric.startswith("container_"):  # "" (read as null) is cAdvisor's pod total, POD the pause container
        cont = tel["container"]
        m &= ~(cont.isna() | cont.isin(["", "POD"])).to_numpy()
    return m & np.isfinite(tel["value"].to_numpy(dtype="float64"))


def _node_time(jobs, cand: np.ndarray, node: np.ndarray, t: np.ndarray, v: np.ndarray, start, end, tol, cap):
    """Path 3: per candidate job, node samples shared in proportion to the GPUs held on the node at each time.

    Per node and time, the unclaimed samples are summed (unheld GPUs are taken as idle, so they add 0);
    each held GPU is credited ``sum / held`` (capped at 100 % for utilisation).  Loops over nodes and
    job-node intervals, never over samples.
    """
    n = len(jobs)
    cnt, tot, psum, pmax = np.zeros(n), np.zeros(n), np.zeros(n), np.full(n, -np.inf)
    gpus = jobs["alloc_gpus"].to_numpy(dtype="float64", na_value=0)
    nnodes = jobs["alloc_nodes"].to_numpy(dtype="float64", na_value=1)
    lists = jobs["node_list"].astype("object").to_numpy()
    iv = []
    for r in cand:
        if lists[r] is None or lists[r] is pd.NA:
            continue
        hosts = expand_hostlist(str(lists[r]))
        per = gpus[r] / max(len(hosts), 1) if nnodes[r] else gpus[r]
        iv.extend((h, r, per) for h in hosts)
    if not iv:
        return cnt, tot, psum, pmax
    ivs = pd.DataFrame(iv, columns=["node", "row", "g"])
    frame = pd.DataFrame({"node": node, "t": t, "v": v})
    per_t = frame.groupby(["node", "t"], sort=True)["v"].sum().reset_index()
    for nd, sub in ivs.groupby("node", sort=False):
        pts = per_t[per_t["node"] == nd]
        if pts.empty:
            continue
        tt, ss = pts["t"].to_numpy(), pts["v"].to_numpy()
        s_j, e_j = start[sub["row"].to_numpy()] - tol, end[sub["row"].to_numpy()] + tol
        g_j = sub["g"].to_numpy()
        held = np.zeros(len(tt))
        for s, e, g in zip(s_j, e_j, g_j, strict=True):
            held[(tt >= s) & (tt < e)] += g
        for r, s, e, g in zip(sub["row"].to_numpy(), s_j, e_j, g_j, strict=True):
            w = (tt >= s) & (tt < e) & (held > 0)
            if not w.any():
                continue
            per_gpu = np.minimum(ss[w] / held[w], cap)
            cnt[r] += w.sum() * g
            tot[r] += per_gpu.sum() * g
            psum[r] += (per_gpu * g).max()
            pmax[r] = max(pmax[r], per_gpu.max())
    return cnt, tot, psum, pmax


def join_telemetry(jobs: pd.DataFrame, telemetry: pd.DataFrame, holds: pd.DataFrame | None = None,
                   pods: pd.DataFrame | None = None, **policy) -> JoinResult:
    """Functional front door: ``TelemetryJoin(JoinPolicy(**policy)).join(...)``."""
    return TelemetryJoin(JoinPolicy(**policy)).join(jobs, telemetry, holds, pods)
