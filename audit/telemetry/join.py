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

from ..telemetry_table import series_codes
from ..units import expand_hostlist
from .kernel import Accumulator, HoldIndex, counter_increase, group_reduce, median_interval

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
    """Join a long telemetry table to a canonical job table (see the module docstring).

    ``join`` takes the whole table; ``session`` returns a :class:`JoinSession` that takes it chunk by chunk
    (a file at a time), keeping per-slot accumulators rather than the samples.
    """

    def __init__(self, policy: JoinPolicy | None = None):
        self.policy = policy or JoinPolicy()

    def session(self, jobs: pd.DataFrame, holds: pd.DataFrame | None = None,
                pods: pd.DataFrame | None = None) -> JoinSession:
        return JoinSession(self, jobs, holds, pods)

    def join(self, jobs: pd.DataFrame, telemetry: pd.DataFrame, holds: pd.DataFrame | None = None,
             pods: pd.DataFrame | None = None) -> JoinResult:
        s = self.session(jobs, holds, pods)
        s.add(telemetry)
        return s.finish()


class _Slots:
    """Per (job row, GPU series) slot: count, sum and maximum, grown as new slots appear chunk by chunk."""

    def __init__(self):
        self.index: dict[int, int] = {}
        self.row = np.zeros(0, dtype=np.int64)
        self.count = np.zeros(0, dtype=np.int64)
        self.sum = np.zeros(0)
        self.max = np.zeros(0)

    def add(self, row: np.ndarray, series: np.ndarray, values: np.ndarray) -> None:
        if not len(row):
            return
        key = row.astype(np.int64) * (np.int64(1) << np.int64(32)) + series.astype(np.int64)
        local, uniq = pd.factorize(key)
        ids = np.empty(len(uniq), dtype=np.int64)
        fresh = []
        for k, u in enumerate(uniq.tolist()):  # once per slot in the chunk, never per sample
            got = self.index.get(u)
            if got is None:
                got = self.index[u] = len(self.index)
                fresh.append(u)
            ids[k] = got
        if fresh:
            grow = len(fresh)
            self.row = np.concatenate([self.row, np.asarray(fresh, dtype=np.int64) >> np.int64(32)])
            self.count = np.concatenate([self.count, np.zeros(grow, dtype=np.int64)])
            self.sum = np.concatenate([self.sum, np.zeros(grow)])
            self.max = np.concatenate([self.max, np.full(grow, -np.inf)])
        acc = Accumulator(len(uniq))
        acc.add(local.astype(np.int64), values)
        self.count[ids] += acc.count
        self.sum[ids] += acc.sum
        self.max[ids] = np.maximum(self.max[ids], acc.max)


class JoinSession:
    """One join in progress: :meth:`add` telemetry chunks, then :meth:`finish`."""

    LABEL_COLUMNS = ("cluster", "node", "gpu_index", "uuid", "job_label", "namespace", "pod", "container", "cgroup")

    def __init__(self, owner: TelemetryJoin, jobs: pd.DataFrame, holds, pods):
        self.policy = owner.policy
        self.jobs = jobs.reset_index(drop=True)
        self.n = len(self.jobs)
        self.keys = _JobKeys(self.jobs, pods)
        self.start, self.end = _epoch(self.jobs["start_time"]), _epoch(self.jobs["end_time"])
        self.holds = self._holds(holds)
        self.held_rows = np.zeros(self.n, dtype=bool)
        self.hold_index = None
        if self.holds is not None and len(self.holds):
            self.held_rows[self.holds["row"].to_numpy()] = True
            self.node_names = pd.Index(pd.unique(self.holds["node"].astype("object")), dtype=object)
            gid = self.node_names.get_indexer(self.holds["node"].astype("object")) * 4096 + \
                self.holds["gpu_index"].to_numpy(dtype=np.int64)
            self.hold_index = HoldIndex(gid, self.holds["start"].to_numpy(), self.holds["end"].to_numpy(),
                                        self.policy.skew_tolerance_s)
        gpus = self.jobs["alloc_gpus"].to_numpy(dtype="float64", na_value=0)
        self.node_time_candidates = (gpus > 0) & ~self.held_rows & np.isfinite(self.start)
        self.series: dict[tuple, int] = {}
        self.slots: dict[str, _Slots] = {}
        self.paths: dict[str, np.ndarray] = {}
        self.node_sums: dict[str, list] = {}
        self.usage: list = []
        self.usage_rows: list = []
        self.intervals: list = []
        self.summary: dict = {"samples": 0, "by_path": {}}

    def _holds(self, holds) -> pd.DataFrame | None:
        if holds is None or not len(holds):
            return None
        row = self.keys.by_label(holds["job_id"].astype("object"))
        h = pd.DataFrame({"row": row, "node": holds["node"].astype("object").to_numpy(),
                          "gpu_index": pd.to_numeric(holds["gpu_index"], errors="coerce").to_numpy()})
        h = h[(h["row"] >= 0) & h["gpu_index"].notna()].reset_index(drop=True)
        h["start"], h["end"] = self.start[h["row"]], self.end[h["row"]]
        return h[np.isfinite(h["start"]) & np.isfinite(h["end"])].reset_index(drop=True)

    # -- one chunk ---------------------------------------------------------------------------------------
    def add(self, tel: pd.DataFrame) -> None:
        if not len(tel):
            return
        tel = tel.reset_index(drop=True)
        self.summary["samples"] += len(tel)
        direct = _direct_rows(tel, self.keys)
        metric = tel["metric"]
        gpu_names = list(UTIL_SCALE) + list(GPU_MEM_SCALE)
        gpu_mask = np.array(metric.isin(gpu_names).to_numpy(), dtype=bool)
        if self.policy.interval_s is None and gpu_mask.any() and len(self.intervals) < 8:
            g = tel[gpu_mask]
            step = median_interval(series_codes(g), _epoch(g["time"]))
            if np.isfinite(step):
                self.intervals.append(step)
        for name in gpu_names:
            m = np.array((metric == name).fillna(False).to_numpy(), dtype=bool)
            if m.any():
                self._gpu_chunk(name, tel[m].reset_index(drop=True), direct[m])
        usage = np.array(metric.isin(list(CPU_SOURCES) + list(MEM_SOURCES)).to_numpy(), dtype=bool)
        if usage.any():
            self.usage.append(tel[usage].reset_index(drop=True))
            self.usage_rows.append(direct[usage])

    def _series_ids(self, g: pd.DataFrame, local: np.ndarray, pick: np.ndarray) -> np.ndarray:
        """Global series numbers for the samples ``pick`` (label tuples looked up once per series)."""
        codes = local[pick]
        uniq, first = np.unique(codes, return_index=True)
        reps = g.iloc[np.flatnonzero(pick)[first]][list(self.LABEL_COLUMNS)].astype("object")
        lut = np.empty(int(uniq.max()) + 1 if len(uniq) else 0, dtype=np.int64)
        for u, tup in zip(uniq.tolist(), reps.itertuples(index=False, name=None), strict=True):
            key = tuple(None if x is None or x is pd.NA or (isinstance(x, float) and np.isnan(x)) else x for x in tup)
            lut[u] = self.series.setdefault(key, len(self.series))
        return lut[codes]

    def _gpu_chunk(self, metric: str, g: pd.DataFrame, direct: np.ndarray) -> None:
        scale = UTIL_SCALE.get(metric, GPU_MEM_SCALE.get(metric))
        t = _epoch(g["time"])
        v = g["value"].to_numpy(dtype="float64") * scale
        row = direct.copy()
        path = np.where(row >= 0, 1, 0)
        if self.hold_index is not None:
            node_s = g["node"] if isinstance(g["node"].dtype, pd.CategoricalDtype) else g["node"].astype("category")
            per_cat = self.node_names.get_indexer(pd.Index(node_s.cat.categories.astype(str), dtype=object))
            codes = node_s.cat.codes.to_numpy()
            code_s = np.where(codes >= 0, per_cat[np.maximum(codes, 0)] if len(per_cat) else -1, -1)
            gpu_s = g["gpu_index"].to_numpy(dtype="float64", na_value=np.nan)
            gid_s = np.where(np.isnan(gpu_s) | (code_s < 0), -1, code_s * 4096 + np.nan_to_num(gpu_s)).astype(np.int64)
            free = row < 0
            h = self.hold_index.assign(gid_s[free], np.nan_to_num(t[free], nan=-1.0))
            hr = np.where(h >= 0, self.holds["row"].to_numpy()[np.maximum(h, 0)], -1)
            row[free] = hr
            path[free] = np.where(hr >= 0, 2, 0)
        ok = row >= 0
        series = self._series_ids(g, series_codes(g), ok)
        self.slots.setdefault(metric, _Slots()).add(row[ok], series, v[ok])
        job_path = self.paths.setdefault(metric, np.zeros(self.n, dtype=np.int64))
        np.maximum.at(job_path, row[ok], path[ok])
        by = self.summary["by_path"].setdefault(metric, {"label": 0, "gpu_index": 0, "unattributed": 0})
        by["label"] += int((path == 1).sum())
        by["gpu_index"] += int((path == 2).sum())
        by["unattributed"] += int((~ok).sum())
        unclaimed = ~ok & g["node"].notna().to_numpy() & np.isfinite(t)
        if unclaimed.any() and self.node_time_candidates.any():
            part = pd.DataFrame({"node": g["node"].astype("object").to_numpy()[unclaimed], "t": t[unclaimed],
                                 "v": v[unclaimed]}).groupby(["node", "t"], sort=False)["v"].sum().reset_index()
            self.node_sums.setdefault(metric, []).append(part)

    # -- the end -----------------------------------------------------------------------------------------
    def finish(self) -> JoinResult:
        n = self.n
        interval = self.policy.interval_s
        if interval is None and self.intervals:
            interval = float(np.median(self.intervals))
        util_stats, mem_stats = {}, {}
        for metric in list(UTIL_SCALE) + list(GPU_MEM_SCALE):
            if metric not in self.slots and metric not in self.node_sums:
                continue
            sl = self.slots.get(metric, _Slots())
            cnt, tot, psum, pmax = group_reduce(sl.row, n, sl.count, sl.sum, sl.max)
            job_path = self.paths.get(metric, np.zeros(n, dtype=np.int64)).copy()
            gpu_job = self.node_time_candidates & (cnt == 0)
            if metric in self.node_sums and gpu_job.any():
                sums = pd.concat(self.node_sums[metric], ignore_index=True)
                cap = 1.0 if metric in UTIL_SCALE else np.inf
                c3, s3, p3, m3 = _node_time(self.jobs, np.flatnonzero(gpu_job), sums["node"].to_numpy(dtype=object),
                                            sums["t"].to_numpy(), sums["v"].to_numpy(), self.start, self.end,
                                            self.policy.skew_tolerance_s, cap)
                got = c3 > 0
                cnt, tot, psum, pmax = (np.where(got, c3, cnt), np.where(got, s3, tot), np.where(got, p3, psum),
                                        np.where(got, m3, pmax))
                job_path = np.where(got, 3, job_path)
            stats = {"count": cnt, "sum": tot, "peak_sum": psum, "peak_max": pmax, "path": job_path}
            (util_stats if metric in UTIL_SCALE else mem_stats)[metric] = stats
        if self.usage:
            from ..telemetry_table import concat_telemetry

            usage = concat_telemetry(self.usage)
            rows = np.concatenate(self.usage_rows)
        else:
            usage, rows = None, np.zeros(0, dtype=np.int64)
        cpu = _Usage.cpu_used(usage, rows, n) if usage is not None else np.full(n, np.nan)
        mem = _Usage.mem_peak(usage, rows, n) if usage is not None else np.full(n, np.nan)
        stats = _Usage.assemble(self.jobs, util_stats, mem_stats, cpu, mem, interval)
        self.summary["interval_s"] = None if interval is None or not np.isfinite(interval) else float(interval)
        self.summary["jobs_with_gpu_telemetry"] = int((stats["gpu_samples"] > 0).sum())
        from .caveats import apply_stats

        return JoinResult(jobs=apply_stats(self.jobs, stats, self.policy.partial_below), job_stats=stats,
                          summary=self.summary)


def _direct_rows(tel: pd.DataFrame, keys: _JobKeys) -> np.ndarray:
    """Job row named by the sample's own labels (job label first, then pod), else -1."""
    rows = keys.by_label(tel["job_label"]) if tel["job_label"].notna().any() else np.full(len(tel), -1)
    has_pod = tel["pod"].notna().to_numpy() & (rows < 0)
    if has_pod.any():
        by_pod = keys.by_pod(tel["namespace"], tel["pod"])
        rows = np.where(has_pod, by_pod, rows)
    return np.asarray(rows, dtype=np.int64)


class _Usage:
    """CPU counters and memory gauges per job, and the per-job table."""

    @staticmethod
    def _per_job(tel: pd.DataFrame, direct: np.ndarray, n: int, sources, series_total) -> np.ndarray:
        """For the first source metric that covers a job: ``series_total`` per series, summed per job.

        ``series_total(sub, codes, n_series)`` reduces the samples of each series (``codes``) to one value.
        """
        out = np.full(n, np.nan)
        for metric in sources:
            m = _usable(tel, metric) & (direct >= 0)
            if not m.any():
                continue
            sub = tel[m]
            codes, uni = pd.factorize(series_codes(sub) * np.int64(len(direct) + 1) + direct[m])
            series_row = np.zeros(len(uni), dtype=np.int64)
            series_row[codes] = direct[m]
            total = np.bincount(series_row, weights=series_total(sub, codes, len(uni)), minlength=n)
            seen = np.bincount(series_row, minlength=n) > 0
            out = np.where(np.isnan(out) & seen, total, out)
        return out

    @staticmethod
    def cpu_used(tel: pd.DataFrame, direct: np.ndarray, n: int) -> np.ndarray:
        """CPU seconds per job: each counter series' increase (resets handled), summed over its series."""
        return _Usage._per_job(tel, direct, n, CPU_SOURCES, lambda sub, codes, k: counter_increase(
            codes, _epoch(sub["time"]), sub["value"].to_numpy(dtype="float64")))

    @staticmethod
    def mem_peak(tel: pd.DataFrame, direct: np.ndarray, n: int) -> np.ndarray:
        """Peak memory per job: each gauge series' maximum, summed over the job's series."""
        def series_max(sub, codes, k):
            acc = Accumulator(k)
            acc.add(codes.astype(np.int64), sub["value"].to_numpy(dtype="float64"))
            return np.where(np.isfinite(acc.max), acc.max, 0.0)

        return _Usage._per_job(tel, direct, n, MEM_SOURCES, series_max)

    # -- per-job table and the job table's update --------------------------------------------------------
    @staticmethod
    def assemble(jobs, util_stats, mem_stats, cpu, mem, interval) -> pd.DataFrame:
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
