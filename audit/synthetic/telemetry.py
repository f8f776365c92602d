"""Per-GPU DCGM-exporter series (utilisation %, framebuffer MiB) on a fixed grid, and what each job saw.

Every GPU of every GPU node reports at ``t0 + k x interval`` for the whole trace.  A sample belongs to
the job holding that GPU when ``start <= t < end``; GPUs no job holds report 0 % and 0 MiB.  A job's
truth (``gpu_util_mean``, per-GPU peak memory) is computed from exactly these samples.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cluster import Cluster
from .hashing import uniform

METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED")
DAY = 86400


@dataclass
class Holds:
    """One entry per (job row, GPU) held."""

    row: np.ndarray
    node: np.ndarray
    gpu: np.ndarray        # GPU index on the node (the minor number)
    local: np.ndarray      # position of this GPU within the job (0..alloc_gpus-1)
    start: np.ndarray
    end: np.ndarray


def expand_holds(alloc_row, alloc_node, alloc_gmask, start, elapsed, max_gpus: int) -> Holds:
    rows, nodes, idx = [], [], []
    for b in range(max_gpus):
        on = ((alloc_gmask >> b) & 1).astype(bool)
        rows.append(alloc_row[on])
        nodes.append(alloc_node[on])
        idx.append(np.full(on.sum(), b, dtype=np.int64))
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    node = np.concatenate(nodes) if nodes else np.zeros(0, np.int64)
    gpu = np.concatenate(idx) if idx else np.zeros(0, np.int64)
    order = np.lexsort((gpu, node, row))
    row, node, gpu = row[order], node[order], gpu[order]
    first = np.concatenate([[0], np.flatnonzero(row[1:] != row[:-1]) + 1]) if len(row) else np.zeros(0, np.int64)
    local = np.arange(len(row)) - np.repeat(first, np.diff(np.concatenate([first, [len(row)]])))
    return Holds(row=row, node=node, gpu=gpu, local=local, start=start[row], end=start[row] + elapsed[row])


def gpu_uuid(cluster_name: str, node: str, index: int) -> str:
    h = hashlib.md5(f"{cluster_name}/{node}/{index}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


class TelemetryModel:
    """Sample values for held GPUs from each job's planted class, level and memory shape."""

    def __init__(self, jobs: dict, holds: Holds, gpu_mem_mib: np.ndarray, prof: dict):
        r = holds.row
        gu, gm = prof["gpu_util"], prof["gpu_memory"]
        self.seed = (jobs["gpu_series_seed"][r].astype(np.uint64) ^ (holds.local.astype(np.uint64) * np.uint64(7919)))
        self.zero = jobs["gpu_zero_share"][r]
        self.level = jobs["gpu_level"][r]
        self.noise = gu["sample_noise_sd"]
        idle = jobs["gpu_class"][r] == 0
        self.peak_mib = np.where(idle, gm["idle_peak_mib"], jobs["gpu_mem_share"][r] * gpu_mem_mib)
        self.m = jobs["gpu_mean_to_peak"][r]

    def values(self, h: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(util %, FB MiB) as integers for samples ``k`` (global sample numbers) of holds ``h``."""
        seed = self.seed[h]
        u1, u2, u3 = uniform(seed, k, 1), uniform(seed, k, 2), uniform(seed, k, 3)
        level = self.level[h] * (1.0 + self.noise * (u2 - 0.5) * np.sqrt(12.0))
        util = np.where(u1 >= self.zero[h], np.clip(np.round(level), 1, 100), 0).astype(np.int64)
        m = self.m[h]
        v = np.clip(m + (1.0 - m) * (2.0 * u3 - 1.0), 0.05, 1.0)
        fb = np.round(self.peak_mib[h] * v).astype(np.int64)
        return util, fb


@dataclass
class HoldStats:
    util_sum: np.ndarray
    n: np.ndarray
    zeros: np.ndarray
    fb_max_mib: np.ndarray
    samples_total: int
    files: list


def _gpu_table(cluster: Cluster):
    """Global GPU list: node index, GPU index, labels."""
    node = np.repeat(np.arange(len(cluster.node_name)), cluster.node_gpus)
    first = np.cumsum(cluster.node_gpus) - cluster.node_gpus
    idx = np.arange(len(node)) - np.repeat(first, cluster.node_gpus)
    return node, idx, first


def run_telemetry(cluster: Cluster, holds: Holds, model: TelemetryModel, t0: int, t_end: int, interval: int,
                  out_dir: Path | None) -> HoldStats:
    """Walk the grid day by day: accumulate per-hold statistics and (when ``out_dir``) write the JSON files."""
    g_node, g_idx, g_first = _gpu_table(cluster)
    n_gpu = len(g_node)
    hold_gid = g_first[holds.node] + holds.gpu
    order = np.lexsort((holds.start, hold_gid))
    key_gid, key_start, key_end = hold_gid[order], holds.start[order], holds.end[order]
    big = np.int64(1) << np.int64(40)
    hold_key = key_gid * big + (key_start - t0)
    nh = len(holds.row)
    util_sum = np.zeros(nh)
    count = np.zeros(nh, dtype=np.int64)
    zeros = np.zeros(nh, dtype=np.int64)
    fb_max = np.zeros(nh, dtype=np.int64)
    n_samples = int(np.ceil((t_end - t0) / interval))
    files: list[Path] = []
    labels = _labels(cluster, g_node, g_idx)
    lut_cache: dict = {}
    n_days = int(np.ceil((t_end - t0) / DAY))
    for d in range(n_days):
        # samples whose time falls in UTC day d (t0 is a midnight): one file per metric per day
        k = np.arange(-(-d * DAY // interval), min(-(-(d + 1) * DAY // interval), n_samples), dtype=np.int64)
        if not len(k):
            continue
        t = t0 + k * interval
        gid = np.repeat(np.arange(n_gpu, dtype=np.int64), len(k))
        kk = np.tile(k, n_gpu)
        tt = t0 + kk * interval
        pos = np.searchsorted(hold_key, gid * big + (tt - t0), side="right") - 1
        ok = pos >= 0
        pos_c = np.maximum(pos, 0)
        if nh:
            ok &= (key_gid[pos_c] == gid) & (key_end[pos_c] > tt)
        else:
            ok[:] = False
        h = order[pos_c[ok]]
        util = np.zeros(len(gid), dtype=np.int64)
        fb = np.zeros(len(gid), dtype=np.int64)
        if ok.any():
            u, f = model.values(h, kk[ok])
            util[ok], fb[ok] = u, f
            util_sum += np.bincount(h, weights=u, minlength=nh)
            count += np.bincount(h, minlength=nh)
            zeros += np.bincount(h, weights=(u == 0), minlength=nh).astype(np.int64)
            np.maximum.at(fb_max, h, f)
        if out_dir is not None and n_gpu:
            day = np.datetime_as_string(np.datetime64(int(t[0]), "s"), unit="D")
            for metric, vals in zip(METRICS, (util, fb), strict=True):
                path = out_dir / f"{metric}_{day}.json"
                path.write_text(_matrix_json(metric, labels, t, vals.reshape(n_gpu, len(k)), lut_cache),
                                encoding="utf-8")
                files.append(path)
    return HoldStats(util_sum=util_sum, n=count, zeros=zeros, fb_max_mib=fb_max, samples_total=n_samples * n_gpu * len(METRICS),
                     files=files)


def _labels(cluster: Cluster, g_node, g_idx) -> list[dict]:
    group_of = cluster.node_group
    out = []
    for n, i in zip(g_node.tolist(), g_idx.tolist(), strict=True):
        g = cluster.groups[group_of[n]]
        host = cluster.node_name[n]
        out.append({"Hostname": host, "UUID": gpu_uuid(cluster.name, host, i), "gpu": str(i),
                    "instance": f"{host}:9400", "job": "dcgm-exporter", "modelName": g.gpu_model or g.gpu_type})
    return out


def _lut(cache: dict, top: int) -> np.ndarray:
    if cache.get("n", -1) < top + 1:
        cache["n"] = max(top + 1, 2 * cache.get("n", 0))
        cache["lut"] = np.array([f'{v}"]' for v in range(cache["n"])], dtype=object)
    return cache["lut"]


def _matrix_json(metric: str, labels: list[dict], t: np.ndarray, vals: np.ndarray, cache: dict) -> str:
    """Prometheus ``query_range`` matrix JSON, built by joining pre-formatted pieces (no per-sample json.dumps)."""
    lut = _lut(cache, int(vals.max()) if vals.size else 0)
    pre = np.array([f',[{x},"' for x in t.tolist()], dtype=object)
    pre[0] = pre[0][1:]
    parts = []
    for g, lab in enumerate(labels):
        inter = np.empty(2 * len(t), dtype=object)
        inter[0::2] = pre
        inter[1::2] = lut[vals[g]]
        metric_obj = json.dumps({"__name__": metric, **lab}, sort_keys=True, separators=(",", ":"))
        parts.append('{"metric":' + metric_obj + ',"values":[' + "".join(inter.tolist()) + "]}")
    return '{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(parts) + "]}}\n"
