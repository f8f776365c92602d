"""Aggregate a generated month of 30-second DCGM samples (100 million) to per-job GPU statistics.

Target: ≥ 5 million samples/s and < 4 GiB peak on this 2-core machine (the Parquet kernel,
:func:`audit.telemetry.stream.stream_parquet`); the same month through the ingest join is timed after it.  The month (580 GPUs on 73 nodes × 2
metrics × 86,400 samples ≈ 100.2 million rows) is written once with NumPy into bench/data/ as Parquet
(dictionary-encoded node and metric, one row group per day; deterministic, seed 11) and reused.  Each job's
planted utilisation is recomputed from the written values and compared with the streamed result.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from audit.telemetry.kernel import group_reduce
from audit.telemetry.stream import stream_parquet

from .common import DATA, peak_rss_mib, timed

NODES, GPUS = 73, 8
GPU_COUNT = 580                   # the last node is partly filled
STEP, DAYS = 30, 30
T0 = 1_793_836_800                # 2026-11-05 00:00 UTC
METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED")
BLOCKS = (4, 2, 1, 1)             # each node's GPUs are held in blocks of this many


def make_jobs(seed: int = 11) -> pd.DataFrame:
    """Per GPU block, a run of jobs with lognormal lengths and idle gaps; one row per (job, GPU) hold."""
    rng = np.random.default_rng(seed)
    end = T0 + DAYS * 86400
    rows = []
    job = 0
    first = np.concatenate([[0], np.cumsum(BLOCKS)[:-1]])
    for n in range(NODES):
        for b, size in zip(first, BLOCKS, strict=True):
            gpus = [n * GPUS + b + k for k in range(size) if n * GPUS + b + k < GPU_COUNT]
            if not gpus:
                continue
            t = T0 + int(rng.integers(0, 3600))
            while t < end:
                length = int(rng.lognormal(9.0, 1.2)) + 60
                rows += [(job, f"g{n:03d}", g - n * GPUS, t, min(t + length, end)) for g in gpus]
                job += 1
                t += length + int(rng.exponential(1800))
    return pd.DataFrame(rows, columns=["job", "node", "gpu_index", "start", "end"])


def month_path():
    return DATA / "dcgm_month.parquet"


def make_month(holds: pd.DataFrame, seed: int = 11) -> dict:
    """Write the month day by day; return per-job truth (sum, count of util samples; Σ per-GPU FB peaks)."""
    rng = np.random.default_rng(seed + 1)
    n_jobs = int(holds["job"].max()) + 1
    level = rng.choice([0.0, 5.0, 35.0, 80.0], n_jobs, p=[0.3, 0.2, 0.25, 0.25])
    fb_peak = rng.uniform(1_000, 80_000, n_jobs)
    gid = holds["node"].str[1:].astype(int).to_numpy() * GPUS + holds["gpu_index"].to_numpy()
    order = np.lexsort((holds["start"].to_numpy(), gid))
    key_g, key_s, key_e = gid[order], holds["start"].to_numpy()[order], holds["end"].to_numpy()[order]
    key_j, key_h = holds["job"].to_numpy()[order], order
    big = np.int64(1) << 40
    keys = key_g.astype(np.int64) * big + key_s
    util_sum = np.zeros(n_jobs)
    util_n = np.zeros(n_jobs)
    fb_max_hold = np.zeros(len(holds))
    node_names = np.array([f"g{n:03d}" for n in range(NODES)])
    per_day = 86400 // STEP
    DATA.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("node", pa.dictionary(pa.int16(), pa.string())), ("gpu_index", pa.int8()),
                        ("metric", pa.dictionary(pa.int8(), pa.string())), ("time", pa.timestamp("s", tz="UTC")),
                        ("value", pa.float32())])
    g_all = np.arange(GPU_COUNT)
    with pq.ParquetWriter(month_path(), schema, compression="zstd") as w:
        for d in range(DAYS):
            t = T0 + d * 86400 + np.arange(per_day) * STEP
            g = np.repeat(g_all, per_day)
            tt = np.tile(t, GPU_COUNT)
            pos = np.searchsorted(keys, g.astype(np.int64) * big + tt, side="right") - 1
            pc_ = np.maximum(pos, 0)
            held = (pos >= 0) & (key_g[pc_] == g) & (key_e[pc_] > tt)
            j = np.where(held, key_j[pc_], -1)
            noise = rng.normal(0, 6, len(g))
            util = np.where(held, np.clip(np.round(level[np.maximum(j, 0)] + noise), 0, 100), 0).astype(np.float32)
            fb = np.where(held, np.round(fb_peak[np.maximum(j, 0)] * rng.uniform(0.6, 1.0, len(g))), 0).astype(np.float32)
            util_sum += np.bincount(j[held], weights=util[held], minlength=n_jobs)
            util_n += np.bincount(j[held], minlength=n_jobs)
            np.maximum.at(fb_max_hold, key_h[pc_[held]], fb[held])
            node_idx = (g // GPUS).astype(np.int16)
            n = len(g)
            for m, vals in enumerate((util, fb)):
                w.write_table(pa.table({
                    "node": pa.DictionaryArray.from_arrays(pa.array(node_idx), pa.array(node_names)),
                    "gpu_index": pa.array((g % GPUS).astype(np.int8)),
                    "metric": pa.DictionaryArray.from_arrays(pa.array(np.full(n, m, np.int8)), pa.array(list(METRICS))),
                    "time": pa.array(tt.astype("datetime64[s]"), pa.timestamp("s", tz="UTC")),
                    "value": pa.array(vals)}, schema=schema))
    fb_job = np.bincount(holds["job"].to_numpy(), weights=fb_max_hold, minlength=n_jobs)
    return {"util_mean": np.where(util_n > 0, util_sum / np.maximum(util_n, 1), np.nan), "samples": util_n,
            "fb_peak_sum": fb_job}


def aggregate(holds: pd.DataFrame):
    res = stream_parquet(month_path(), holds, METRICS)
    n_jobs = int(holds["job"].max()) + 1
    job = holds["job"].to_numpy()
    u = res.stats[METRICS[0]]
    cnt, tot, _, _ = group_reduce(job, n_jobs, u["count"], u["sum"], u["max"])
    f = res.stats[METRICS[1]]
    _, _, fb_sum, _ = group_reduce(job, n_jobs, f["count"], f["sum"], f["max"])
    return res, cnt, np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan), fb_sum


def aggregate_session(holds: pd.DataFrame) -> tuple[int, np.ndarray]:
    """The same month through the ingest join (:class:`~audit.telemetry.join.JoinSession`), batch by batch."""
    from audit.job_table import conform
    from audit.telemetry.join import TelemetryJoin
    from audit.telemetry_table import conform_telemetry

    first = holds.groupby("job", sort=True).agg(node=("node", "first"), start=("start", "first"),
                                                end=("end", "first"), gpus=("gpu_index", "size"))
    ids = first.index.astype(str)
    jobs = conform(pd.DataFrame({
        "cluster": "bench", "job_id": ids, "job_id_raw": ids, "alloc_gpus": first["gpus"].to_numpy(), "alloc_nodes": 1,
        "node_list": first["node"].to_numpy(), "state": "COMPLETED",
        "start_time": pd.to_datetime(first["start"].to_numpy(), unit="s", utc=True),
        "end_time": pd.to_datetime(first["end"].to_numpy(), unit="s", utc=True),
        "elapsed_s": (first["end"] - first["start"]).to_numpy()}))
    session = TelemetryJoin().session(jobs, pd.DataFrame({"job_id": holds["job"].astype(str), "node": holds["node"],
                                                          "gpu_index": holds["gpu_index"]}))
    n = 0
    for batch in pq.ParquetFile(month_path()).iter_batches(batch_size=3_000_000):
        df = batch.to_pandas()
        df["gpu_index"] = df["gpu_index"].astype("Int64")
        session.add(conform_telemetry(df))
        n += len(df)
    return n, session.finish().job_stats["gpu_util_mean"].to_numpy(dtype="float64", na_value=np.nan)


def main() -> None:
    holds = make_jobs()
    truth_path = DATA / "dcgm_month_truth.npz"
    if not month_path().exists() or not truth_path.exists():
        with timed() as gen:
            np.savez(truth_path, **make_month(holds))
        print(f"generated {month_path().name}: {month_path().stat().st_size / 2**20:,.0f} MiB in {gen['s']:.1f} s")
    truth = dict(np.load(truth_path))
    with timed() as agg:
        res, cnt, util, fb = aggregate(holds)
    rate = res.samples / agg["s"]
    print(f"aggregated {res.samples:,} samples ({res.attributed:,} held) of {len(holds):,} holds / "
          f"{int(holds['job'].max()) + 1:,} jobs in {agg['s']:.1f} s: {rate / 1e6:.1f} million samples/s "
          f"(target ≥ 5); peak memory {peak_rss_mib() / 1024:.2f} GiB (target < 4)")
    ok = truth["samples"] > 0
    err = np.abs(util[ok] - truth["util_mean"][ok]).max()
    fb_err = np.abs(fb[ok] - truth["fb_peak_sum"][ok]).max()
    print(f"per-job check against the generator: max |util error| {err:.2e} %, max |FB peak error| {fb_err:.2e} MiB")
    with timed() as ses:
        n, util2 = aggregate_session(holds)
    err2 = np.abs(util2[ok] * 100 - truth["util_mean"][ok]).max()
    print(f"the ingest join (JoinSession, pandas batches) on the same month: {n / ses['s'] / 1e6:.1f} million "
          f"samples/s ({ses['s']:.1f} s); max |util error| {err2:.2e} %; peak memory so far "
          f"{peak_rss_mib() / 1024:.2f} GiB")


if __name__ == "__main__":
    main()
