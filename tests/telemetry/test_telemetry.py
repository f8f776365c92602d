"""The telemetry join on hand-built cases, one per path and per trap, with hand-computed answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audit.job_table import conform
from audit.telemetry.join import join_telemetry
from audit.telemetry.kernel import HoldIndex, counter_increase
from audit.telemetry_table import conform_telemetry

T0 = 1_700_000_000
MiB = 2**20


def ts(sec):
    return pd.to_datetime(np.asarray(sec, dtype="int64"), unit="s", utc=True)


def job(job_id, start, end, *, gpus=0, cpus=1, node="n1", **kw):
    row = {"cluster": "c", "job_id": job_id, "job_id_raw": job_id, "alloc_gpus": gpus, "alloc_cpus": cpus,
           "alloc_nodes": 1, "node_list": node, "start_time": pd.Timestamp(T0 + start, unit="s", tz="UTC"),
           "end_time": pd.Timestamp(T0 + end, unit="s", tz="UTC"), "elapsed_s": end - start, "state": "COMPLETED",
           "caveats": "no_gpu_telemetry" if gpus else None}
    row.update(kw)
    return row


def jobs_frame(*rows):
    return conform(pd.DataFrame(list(rows)))


def gpu_series(node, gpu, times, values, metric="DCGM_FI_DEV_GPU_UTIL", **labels):
    n = len(times)
    d = {"node": [node] * n, "gpu_index": [gpu] * n, "metric": [metric] * n, "time": ts(T0 + np.asarray(times)),
         "value": np.asarray(values, dtype="float64")}
    d.update({k: [v] * n for k, v in labels.items()})
    return pd.DataFrame(d)


def tel(*frames):
    return conform_telemetry(pd.concat(frames, ignore_index=True))


GRID = np.arange(0, 3600, 30)  # an hour of 30 s samples


def shared_node_telemetry():
    """8 GPUs on n1: job A holds GPUs 2 and 3 during [600, 1800); job B holds 0 and 1 during [0, 3600)."""
    frames = []
    for g in range(8):
        util = np.zeros(len(GRID))
        fb = np.zeros(len(GRID))
        in_a = (GRID >= 600) & (GRID < 1800)
        if g == 2:
            util[in_a], fb[in_a] = 50, np.where(GRID[in_a] < 1200, 10_000, 8_000)
        if g == 3:
            util[in_a], fb[in_a] = 70, 20_000
        if g in (0, 1):
            util[:], fb[:] = 90, 30_000
        frames += [gpu_series("n1", g, GRID, util), gpu_series("n1", g, GRID, fb, metric="DCGM_FI_DEV_FB_USED")]
    return tel(*frames)


HOLDS = pd.DataFrame({"job_id": ["A", "A", "B", "B"], "node": ["n1"] * 4, "gpu_index": [2, 3, 0, 1]})


def test_two_of_eight_gpus_by_gpu_index():
    jobs = jobs_frame(job("A", 600, 1800, gpus=2), job("B", 0, 3600, gpus=2))
    r = join_telemetry(jobs, shared_node_telemetry(), HOLDS)
    st = r.job_stats.set_index("job_id")
    a = st.loc["A"]
    assert a.gpu_util_mean == pytest.approx(0.60) and a.gpu_util_peak == pytest.approx(0.70)
    assert a.gpu_mem_peak_bytes == (10_000 + 20_000) * MiB  # each GPU's own peak, summed
    assert a.join_path == "gpu_index" and a.gpu_samples == 2 * 40 and a.gpu_coverage == pytest.approx(1.0)
    assert st.loc["B"].gpu_util_mean == pytest.approx(0.90)
    out = r.jobs.set_index("job_id")
    assert out.loc["A", "gpu_util_mean"] == pytest.approx(0.60) and out.loc["A", "caveats"] == "telemetry"
    # the four GPUs no job held are idle capacity, not either job's waste
    idle_util = 4 * len(GRID) + 2 * (len(GRID) - 40)
    assert r.summary["by_path"]["DCGM_FI_DEV_GPU_UTIL"]["unattributed"] == idle_util


def test_node_and_time_fallback_shares_in_proportion():
    # no GPU index record: A alone on the node gets the node's busy sum over the GPUs it holds
    only_a = shared_node_telemetry()
    only_a = only_a[~only_a["gpu_index"].isin([0, 1])]
    r = join_telemetry(jobs_frame(job("A", 600, 1800, gpus=2)), only_a)
    a = r.job_stats.iloc[0]
    assert a.join_path == "node_time" and a.gpu_util_mean == pytest.approx(0.60)
    assert a.gpu_mem_peak_bytes == 30_000 * MiB  # peak of the summed memory: a lower bound of Σ peaks
    assert "telemetry_node_attributed" in r.jobs.iloc[0].caveats
    # two jobs without GPU index share the node's samples by GPUs held (2 and 6 of 8)
    both = jobs_frame(job("A", 600, 1800, gpus=2), job("C", 600, 1800, gpus=6))
    r2 = join_telemetry(both, only_a).job_stats.set_index("job_id")
    busy = (50 + 70) / 8  # per held GPU, the six GPUs of C idle
    assert r2.loc["A", "gpu_util_mean"] == pytest.approx(busy / 100)
    assert r2.loc["C", "gpu_util_mean"] == pytest.approx(busy / 100)


def test_job_label_and_sm_active_preferred():
    t = np.arange(0, 600, 60)
    frames = [gpu_series("n9", 0, t, np.full(len(t), 80.0), hpc_job=None, job_label="77"),
              gpu_series("n9", 0, t, np.full(len(t), 0.25), metric="DCGM_FI_PROF_SM_ACTIVE", job_label="77")]
    jobs = jobs_frame(job("77", 0, 600, gpus=1, node="n9"))
    r = join_telemetry(jobs, tel(*[f.drop(columns=["hpc_job"], errors="ignore") for f in frames]))
    s = r.job_stats.iloc[0]
    assert s.join_path == "label" and s.gpu_util_metric == "DCGM_FI_PROF_SM_ACTIVE"
    assert s.gpu_util_mean == pytest.approx(0.25)
    assert set(r.jobs.iloc[0].caveats.split(";")) == {"telemetry", "gpu_util_sm_active"}


def test_pod_label_joins_k8s_rows():
    t = np.arange(0, 300, 15)
    frame = gpu_series("gpu-node-1", 3, t, np.where(t < 150, 40.0, 60.0), pod="train-a", namespace="ml-team")
    jobs = jobs_frame(job("ml-team/train-a", 0, 300, gpus=1, node="gpu-node-1"))
    r = join_telemetry(jobs, tel(frame))
    assert r.job_stats.iloc[0].gpu_util_mean == pytest.approx(0.50)
    assert r.job_stats.iloc[0].join_path == "label"


def test_jobstats_summary_wins():
    jobs = jobs_frame(job("A", 600, 1800, gpus=2, gpu_util_mean=0.123, gpu_mem_peak_bytes=123, caveats="jobstats"),
                      job("B", 0, 3600, gpus=2))
    out = join_telemetry(jobs, shared_node_telemetry(), HOLDS).jobs.set_index("job_id")
    assert out.loc["A", "gpu_util_mean"] == pytest.approx(0.123) and out.loc["A", "caveats"] == "jobstats"


def test_counter_reset_and_restart():
    # one series: 0, 30, 60, 90, then the container restarts and the counter starts again: 5, 35
    inc = counter_increase(np.zeros(6, dtype=int), np.arange(6.0), np.array([0, 30, 60, 90, 5, 35.0]))
    assert inc[0] == pytest.approx(125.0)
    # out of order input and two series
    inc2 = counter_increase(np.array([1, 0, 1, 0]), np.array([2.0, 1.0, 1.0, 2.0]), np.array([4.0, 10, 3, 12]))
    assert list(inc2) == [12.0, 4.0]


def test_pod_restarted_after_oomkilled():
    """A pod whose container was OOMKilled and restarted: CPU is the sum over both runs, memory the peak."""
    t = np.arange(0, 1200, 60)
    first = t < 600
    cpu = np.where(first, t * 0.5, (t - 600) * 0.25)  # counter restarts at 0 with the new container
    mem = np.where(first, 1.0e9 + t * 1.0e6, 5.0e8)
    n = len(t)
    frame = pd.DataFrame({"metric": ["container_cpu_usage_seconds_total"] * n + ["container_memory_working_set_bytes"] * n,
                          "time": list(ts(T0 + t)) * 2, "value": np.concatenate([cpu, mem]),
                          "pod": "etl-b", "namespace": "data", "container": "etl", "node": "cpu-node-1"})
    pause = pd.DataFrame({"metric": ["container_cpu_usage_seconds_total"] * n, "time": ts(T0 + t),
                          "value": np.full(n, 1e6), "pod": "etl-b", "namespace": "data", "container": ""})
    jobs = jobs_frame(job("data/etl-b", 0, 1200, cpus=2, node="cpu-node-1", caveats="no_usage_fields;pod_restarted"))
    out = join_telemetry(jobs, tel(frame, pause)).jobs.iloc[0]
    assert out.cpu_used_s == pytest.approx(cpu[first].max() + cpu[~first].max())  # 295.5 + 135
    assert out.mem_peak_bytes == int(1.0e9 + 540 * 1.0e6)
    assert set(out.caveats.split(";")) == {"pod_restarted", "telemetry"}  # use is now known


def test_samples_missing_for_part_of_a_job():
    t = np.arange(0, 3600, 30)
    seen = t < 1800  # the exporter was down for the second half
    frame = gpu_series("n1", 0, t[seen], np.full(seen.sum(), 40.0))
    jobs = jobs_frame(job("A", 0, 3600, gpus=1))
    r = join_telemetry(jobs, tel(frame), pd.DataFrame({"job_id": ["A"], "node": ["n1"], "gpu_index": [0]}))
    s = r.job_stats.iloc[0]
    assert s.gpu_coverage == pytest.approx(0.5) and s.gpu_util_mean == pytest.approx(0.40)
    assert "telemetry_partial" in r.jobs.iloc[0].caveats


def test_clock_skew_of_a_few_seconds():
    """The exporter's clock runs 5 s behind the scheduler's: A's first sample and B's first sample are
    stamped 5 s early.  Without tolerance A loses its first sample and steals B's; with it both are exact."""
    grid = np.arange(0, 1200, 30)  # true times
    stamped = grid - 5
    util = np.where(grid < 600, np.where(grid == 0, 100.0, 20.0), 60.0)  # A: 100 then 20s; B: 60
    frame = gpu_series("n1", 0, stamped, util)
    holds = pd.DataFrame({"job_id": ["A", "B"], "node": ["n1"] * 2, "gpu_index": [0, 0]})
    jobs = jobs_frame(job("A", 0, 600, gpus=1), job("B", 600, 1200, gpus=1))
    exact = {"A": (100 + 19 * 20) / 20 / 100, "B": 0.60}
    skewed = join_telemetry(jobs, tel(frame), holds).job_stats.set_index("job_id")
    assert skewed.loc["A", "gpu_util_mean"] != pytest.approx(exact["A"])
    fixed = join_telemetry(jobs, tel(frame), holds, skew_tolerance_s=10).job_stats.set_index("job_id")
    assert fixed.loc["A", "gpu_util_mean"] == pytest.approx(exact["A"])
    assert fixed.loc["B", "gpu_util_mean"] == pytest.approx(exact["B"])
    assert fixed.loc["A", "gpu_util_peak"] == pytest.approx(1.0) and fixed.loc["A", "gpu_samples"] == 20


def test_hold_index_boundaries():
    idx = HoldIndex(np.array([0, 0, 1]), np.array([100, 200, 100]), np.array([200, 300, 150]))
    got = idx.assign(np.array([0, 0, 0, 0, 1, 1, 2]), np.array([99, 100, 199, 200, 149, 150, 120]))
    assert list(got) == [-1, 0, 0, 1, 2, -1, -1]


def test_week_per_job_gpu_figures_match_truth():
    """The committed week: every GPU job whose GPUs were sampled (and that has no jobstats summary) gets
    the generator's per-job truth from the telemetry join, within 1 %."""
    from audit.ingest import read_inputs

    from ..conftest import ROOT

    week = ROOT / "sample_traces" / "week"
    if not (week / "truth_jobs.csv").exists():
        pytest.skip("sample week absent")
    ing = read_inputs([week])
    truth = pd.read_csv(week / "truth_jobs.csv", dtype={"job_id": str})
    m = ing.job_telemetry.merge(truth, on="job_id", suffixes=("", "_truth"))
    sampled = m[(m["gpu_samples_truth"] > 0) & ~m["jobstats"]]
    assert len(sampled) > 100 and (sampled["join_path"] == "gpu_index").all()
    util = sampled["gpu_util_mean"].astype(float)
    assert np.allclose(util, sampled["gpu_util_mean_truth"], rtol=0.01, atol=1e-6)
    assert np.allclose(sampled["gpu_mem_peak_bytes"].astype(float), sampled["gpu_mem_peak_bytes_truth"], rtol=0.01)
    assert (sampled["gpu_samples"] == sampled["gpu_samples_truth"]).all()  # samples summed over the job's GPUs
    jobs = ing.jobs.set_index("job_id").loc[sampled["job_id"]]
    assert not jobs["caveats"].fillna("").str.contains("no_gpu_telemetry").any()


def test_stream_matches_the_join(tmp_path):
    """The Parquet stream (used at month scale) and the in-memory join agree on a shared-node case."""
    from audit.telemetry.kernel import group_reduce
    from audit.telemetry.stream import stream_parquet

    t = shared_node_telemetry()
    path = tmp_path / "t.parquet"
    t[["node", "gpu_index", "metric", "time", "value"]].to_parquet(path)
    jobs = jobs_frame(job("A", 600, 1800, gpus=2), job("B", 0, 3600, gpus=2))
    holds = HOLDS.assign(start=T0 + np.array([600, 600, 0, 0]), end=T0 + np.array([1800, 1800, 3600, 3600]))
    res = stream_parquet(path, holds, ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"], batch_rows=1000)
    row = np.array([0, 0, 1, 1])
    u = res.stats["DCGM_FI_DEV_GPU_UTIL"]
    cnt, tot, _, _ = group_reduce(row, 2, u["count"], u["sum"], u["max"])
    f = res.stats["DCGM_FI_DEV_FB_USED"]
    _, _, fb, _ = group_reduce(row, 2, f["count"], f["sum"], f["max"])
    joined = join_telemetry(jobs, t, HOLDS).job_stats
    assert np.allclose(tot / cnt / 100, joined["gpu_util_mean"].astype(float))
    assert np.allclose(fb * MiB, joined["gpu_mem_peak_bytes"].astype(float))
    assert res.samples == len(t) and res.attributed == 2 * (2 * 40 + 2 * len(GRID))


def test_week_telemetry_only_totals_match_truth():
    """GPU jobs without a jobstats summary get their use from telemetry alone: their GPU-hours used and
    GPU-memory GiB-hours at peak equal truth.json's ``gpu_by_usage_source.telemetry_only`` within 0.5 %."""
    import json

    from audit.ingest import read_inputs

    from ..conftest import ROOT

    week = ROOT / "sample_traces" / "week"
    truth = json.loads((week / "truth.json").read_text()) if (week / "truth.json").exists() else {}
    if "gpu_by_usage_source" not in truth:
        pytest.skip("sample week without per-source GPU truth")
    want = truth["gpu_by_usage_source"]["telemetry_only"]
    j = read_inputs([week]).jobs
    g = j[(j["alloc_gpus"] > 0) & ~j["caveats"].fillna("").str.contains("jobstats")]
    el, n = g["elapsed_s"].astype(float), g["alloc_gpus"].astype(float)
    assert len(g) == want["jobs"]
    used = (n * el * g["gpu_util_mean"].astype(float).fillna(0)).sum() / 3600
    peak = (el * g["gpu_mem_peak_bytes"].astype(float).fillna(0)).sum() / 2**30 / 3600
    assert used == pytest.approx(want["gpu_hours_used"], rel=0.005)
    assert peak == pytest.approx(want["gpu_mem_gib_hours_peak"], rel=0.005)


def test_store_streams_telemetry_and_reruns_cleanly(tmp_path):
    """``ingest`` streams samples into telemetry.parquet (a DuckDB view), job figures into job_telemetry;
    a second run into the same folder without telemetry leaves neither behind."""
    import duckdb

    from audit.ingest import ingest

    from ..conftest import ROOT

    week = ROOT / "sample_traces" / "week"
    if not (week / "sacct.txt").exists():
        pytest.skip("sample week absent")
    out = tmp_path / "store"
    res = ingest([week], out)
    assert res.telemetry is None  # streamed, not kept
    samples = res.ledger["telemetry"]["samples"]
    con = duckdb.connect(str(out / "reclaim.duckdb"))
    n, = con.execute("SELECT count(*) FROM telemetry").fetchone()
    k, = con.execute("SELECT count(*) FROM job_telemetry WHERE gpu_samples > 0").fetchone()
    con.close()
    assert n == samples > 0 and k == res.ledger["telemetry"]["jobs_with_gpu_telemetry"]
    again = ingest([week], out)
    assert again.ledger["telemetry"]["samples"] == samples
    ingest([week / "sacct.txt"], out)
    assert not (out / "telemetry.parquet").exists() and not (out / "job_telemetry.parquet").exists()
    con = duckdb.connect(str(out / "reclaim.duckdb"))
    names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    con.close()
    assert names == {"jobs", "quarantine"}


def test_glossary_names_the_telemetry_tables():
    """docs/glossary.md documents exactly the columns of telemetry.parquet and job_telemetry.parquet."""
    import re

    from audit.telemetry.join import STAT_COLUMNS
    from audit.telemetry_table import TELEMETRY_COLUMNS

    from ..conftest import ROOT

    text = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")

    def documented(title):
        m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
        assert m, title
        cells = re.findall(r"^\| (`[^|]+`) \|", m.group(1), flags=re.M)
        return [name for cell in cells for name in re.findall(r"`([^`]+)`", cell)]

    assert documented("The telemetry table (`telemetry.parquet`)") == list(TELEMETRY_COLUMNS)
    jobs = pd.DataFrame([job("A", 0, 60)])
    stats = join_telemetry(conform(jobs), tel(gpu_series("n1", 0, [0], [1.0]))).job_stats
    assert documented("Per-job telemetry (`job_telemetry.parquet`)") == list(STAT_COLUMNS) == \
        [c for c in stats.columns if not c.startswith("_")]
