"""Accounting figures against hand-computed cases: multi-node, multi-task, array, GPU and failed jobs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from audit.accounting.account import account_jobs
from audit.accounting.aggregate import aggregate
from audit.accounting.occupancy import hourly, occupancy
from audit.accounting.pricebook import PriceBookError, load_price_book, parse_price_book
from audit.accounting.shape import partition_capacity, shape_frame
from audit.accounting.waste import per_job_waste
from audit.cluster_shape import load_cluster_shape
from audit.job_table import conform

GiB = 2**30
T0 = pd.Timestamp("2024-03-01T00:00:00Z")

SHAPE = shape_frame(load_cluster_shape({"node_groups": [
    {"name": "cn", "partition": "cpu", "count": 4, "cpus": 16, "mem_gib": 64},
    {"name": "ga", "partition": "gpu", "count": 2, "cpus": 64, "mem_gib": 512, "gpus": 4, "gpu_type": "a100",
     "gpu_mem_gib": 80},
]}))


def job(job_id, *, start_h=0.0, hours=1.0, cpus=1, nodes=1, mem_gib=4, gpus=0, gpu_type=None, cpu_used_s=None,
        peak_gib=None, util=None, gpu_mem_peak_gib=None, state="COMPLETED", partition="cpu", user="alice",
        account="org/team", name="run_1", limit_h=None, caveats=None, req_mem_gib=None):
    start = T0 + pd.Timedelta(hours=start_h)
    return {
        "cluster": "c", "job_id": job_id, "job_id_raw": job_id, "source": "test", "source_file": "t", "source_line": 1,
        "user": user, "account": account, "partition": partition, "qos": "normal", "job_name": name,
        "submit_time": start, "start_time": start, "end_time": start + pd.Timedelta(hours=hours),
        "elapsed_s": int(hours * 3600), "time_limit_s": None if limit_h is None else int(limit_h * 3600),
        "state": state, "req_cpus": cpus, "alloc_cpus": cpus, "alloc_nodes": nodes, "req_nodes": nodes,
        "alloc_mem_bytes": mem_gib * GiB, "req_mem_bytes": (req_mem_gib or mem_gib) * GiB, "alloc_gpus": gpus,
        "req_gpus": gpus, "gpu_type": gpu_type, "cpu_used_s": cpu_used_s,
        "mem_peak_bytes": None if peak_gib is None else int(peak_gib * GiB), "gpu_util_mean": util,
        "gpu_mem_peak_bytes": None if gpu_mem_peak_gib is None else int(gpu_mem_peak_gib * GiB), "caveats": caveats,
    }


def table(*rows) -> pd.DataFrame:
    return conform(pd.DataFrame(list(rows)))


@pytest.fixture
def jobs():
    return table(
        # multi-node, multi-task MPI: 2 nodes x 16 CPUs for 1 h, half the cores busy, 16 of 64 GiB peak
        job("1", cpus=32, nodes=2, mem_gib=64, cpu_used_s=16 * 3600, peak_gib=16, limit_h=4),
        # GPU job: 4 A100 for 2 h at 25 %, 8 CPUs, 64 GiB; GPU memory peak 100 GiB over the 4 GPUs
        job("2", hours=2, cpus=8, mem_gib=64, gpus=4, gpu_type="a100", cpu_used_s=4 * 7200, peak_gib=32, util=0.25,
            gpu_mem_peak_gib=100, partition="gpu", user="bob", account="org/ml"),
        # failed OOM: 1 CPU for 10 min, peak reached the 4 GiB request
        job("3", hours=1 / 6, cpus=1, mem_gib=4, cpu_used_s=500, peak_gib=4, state="OUT_OF_MEMORY"),
        # array task with no usage data: allocated counts, used is unknown (never zero)
        job("4_1", start_h=0.5, hours=1, cpus=4, mem_gib=8, user="carol", account="lab"),
        # TotalCPU zero artefact: CPU use unknown
        job("5", cpus=2, mem_gib=4, cpu_used_s=0, peak_gib=1, caveats="totalcpu_zero", state="TIMEOUT", limit_h=1),
    )


def test_per_job_seconds(jobs):
    w = per_job_waste(jobs).set_index("job_id")
    assert w.loc["1", "core_s_alloc"] == 32 * 3600 and w.loc["1", "core_s_used"] == 16 * 3600
    assert w.loc["1", "core_s_idle"] == 16 * 3600
    assert w.loc["1", "mem_byte_s_alloc"] == 64 * GiB * 3600 and w.loc["1", "mem_byte_s_peak"] == 16 * GiB * 3600
    assert w.loc["1", "walltime_s_unused"] == 3 * 3600
    assert w.loc["2", "gpu_s_alloc"] == 4 * 7200 and w.loc["2", "gpu_s_used"] == 7200
    assert w.loc["2", "gpu_s_idle"] == 3 * 7200
    assert math.isnan(w.loc["4_1", "core_s_used"]) and not w.loc["4_1", "cpu_usage_known"]
    assert math.isnan(w.loc["5", "core_s_used"]) and not w.loc["5", "cpu_usage_known"]
    assert w.loc["3", "failed"] and w.loc["5", "failed"] and not w.loc["1", "failed"]


def test_gpu_memory_held_needs_the_shape(jobs):
    w = per_job_waste(jobs, shape=SHAPE).set_index("job_id")
    assert w.loc["2", "gpu_mem_bytes_held"] == 4 * 80 * GiB and w.loc["2", "gpu_mem_bytes_peak"] == 100 * GiB
    assert math.isnan(per_job_waste(jobs).set_index("job_id").loc["2", "gpu_mem_bytes_held"])


def test_headline_figures(jobs):
    s = account_jobs(jobs).summary
    assert s["core_hours_alloc"] == pytest.approx(32 + 16 + 1 / 6 + 4 + 2)
    assert s["core_hours_used"] == pytest.approx(16 + 8 + 500 / 3600)
    # efficiency only over jobs with known CPU use (1, 2, 3)
    assert s["cpu_efficiency"] == pytest.approx((16 + 8 + 500 / 3600) / (32 + 16 + 1 / 6))
    assert s["jobs_with_cpu_usage"] == 3
    assert s["gpu_hours_alloc"] == 8 and s["gpu_hours_used"] == 2 and s["gpu_efficiency"] == 0.25
    assert s["mem_gib_hours_alloc"] == pytest.approx(64 + 128 + 4 / 6 + 8 + 4)
    assert s["mem_gib_hours_peak"] == pytest.approx(16 + 64 + 4 / 6 + 1)
    assert s["failed_hours_by_state"]["OUT_OF_MEMORY"] == pytest.approx(1 / 6)
    assert s["failed_hours_by_state"]["TIMEOUT"] == pytest.approx(2)
    assert s["failed_jobs_by_state"]["OUT_OF_MEMORY"] == 1


def test_dollars_per_resource_and_dominant(jobs):
    s = account_jobs(jobs, cluster_shape=None).summary
    book = load_price_book()
    cpu, mem, a100 = book.cpu.usd_per_hour, book.memory.usd_per_hour, book.gpu["a100"].usd_per_hour
    assert (cpu, mem, a100) == (0.031611, 0.004237, 3.43)
    assert s["cost_usd_gpu_alloc"] == pytest.approx(8 * 3.43)
    assert s["cost_usd_gpu_idle"] == pytest.approx(6 * 3.43)
    assert s["cost_usd_cpu_alloc"] == pytest.approx((32 + 16 + 1 / 6 + 4 + 2) * cpu)
    assert s["cost_usd_cpu_idle"] == pytest.approx((16 + 8 + (1 / 6 - 500 / 3600)) * cpu)
    assert s["cost_usd_alloc"] == pytest.approx(s["cost_usd_cpu_alloc"] + s["cost_usd_mem_alloc"] + s["cost_usd_gpu_alloc"])
    assert s["cost_usd_dominant"] is None  # needs the node shape


def test_dominant_resource_view(tmp_path, jobs):
    shape_file = tmp_path / "shape.toml"
    shape_file.write_text(
        '[[node_groups]]\nname="cn"\npartition="cpu"\ncount=4\ncpus=16\nmem_gib=64\n'
        '[[node_groups]]\nname="ga"\npartition="gpu"\ncount=2\ncpus=64\nmem_gib=512\ngpus=4\ngpu_type="a100"\n'
        'gpu_mem_gib=80\n')
    w = account_jobs(jobs, cluster_shape=shape_file).waste.set_index("job_id")
    # GPU job blocks all 4 GPUs of a node: share 1 x node price x 2 h
    node_price = 64 * 0.031611 + 512 * 0.004237 + 4 * 3.43
    assert w.loc["2", "cost_usd_dominant"] == pytest.approx(node_price * 2)
    # MPI job: 32 CPUs on 2 nodes of 16 = whole nodes; memory 64 GiB of 128 → CPU share 1 dominates
    assert w.loc["1", "cost_usd_dominant"] == pytest.approx(2 * (16 * 0.031611 + 64 * 0.004237) * 1)


def test_occupancy_hand_checked(jobs):
    w = per_job_waste(jobs)
    occ = occupancy(w, partition_capacity(SHAPE))
    cpu = occ[occ["partition"] == "cpu"].set_index("hour")
    h0, h1 = T0, T0 + pd.Timedelta(hours=1)
    # hour 0: job 1 (32 cores x 1 h), job 3 (1 core x 10 min), job 5 (2 x 1 h), job 4_1 (4 cores x 30 min)
    assert cpu.loc[h0, "core_s_alloc"] == pytest.approx(32 * 3600 + 600 + 2 * 3600 + 4 * 1800)
    assert cpu.loc[h1, "core_s_alloc"] == pytest.approx(4 * 1800)
    assert cpu.loc[h0, "cpu_occupancy"] == pytest.approx((32 * 3600 + 600 + 2 * 3600 + 4 * 1800) / (64 * 3600))
    gpu = occ[occ["partition"] == "gpu"].set_index("hour")
    assert gpu.loc[h0, "gpu_occupancy"] == pytest.approx(0.5) and gpu.loc[h0, "gpu_utilisation"] == pytest.approx(0.25)


def test_hourly_overlap_against_brute_force():
    rng = np.random.default_rng(3)
    start = rng.uniform(0, 20 * 3600, 200)
    end = start + rng.uniform(1, 5 * 3600, 200)
    amount = rng.integers(1, 64, 200).astype(float)
    h = hourly(start, end, {"a": amount}, 0, 26 * 3600)
    brute = [sum(a * max(0.0, min(e, (k + 1) * 3600) - max(s, k * 3600)) for s, e, a in zip(start, end, amount,
                                                                                          strict=True))
             for k in range(26)]
    np.testing.assert_allclose(h["a"].to_numpy(), brute, rtol=1e-9, atol=1e-6)


def test_aggregates_add_up_exactly(jobs):
    w = per_job_waste(jobs, load_price_book())
    total = w["core_s_alloc"].sum() / 3600
    for by in ("user", "partition", "qos", "gpu_type", "job_family", "month"):
        agg = aggregate(w, by)
        assert agg["core_hours_alloc"].sum() == pytest.approx(total, rel=1e-12)
        assert agg["jobs"].sum() == len(w)
        assert agg["cost_usd_alloc"].sum() == pytest.approx(w["cost_usd_alloc"].sum(), rel=1e-12)
    acc = aggregate(w, "account")
    for level, part in acc.groupby("level"):
        if level == 1:
            assert part["core_hours_alloc"].sum() == pytest.approx(total, rel=1e-12)
    org = acc[(acc["level"] == 1) & (acc["account_path"] == "org")].iloc[0]
    kids = acc[(acc["level"] == 2) & acc["account_path"].str.startswith("org/")]
    assert org["core_hours_alloc"] == pytest.approx(kids["core_hours_alloc"].sum())
    assert set(kids["account_path"]) == {"org/team", "org/ml"}


def test_failed_diagnosis_suggests_a_request():
    rows = [job(f"c{i}", peak_gib=p, mem_gib=80, cpu_used_s=1, name="train_7") for i, p in enumerate((60, 70, 71))]
    rows.append(job("oom", peak_gib=63.8, mem_gib=64, state="OUT_OF_MEMORY", cpu_used_s=1, name="train_8"))
    rows.append(job("to", hours=2, limit_h=2, state="TIMEOUT", name="other"))
    rows.append(job("nf", state="NODE_FAIL"))
    res = account_jobs(table(*rows))
    d = res.failed.set_index("job_id")["diagnosis"]
    q95 = np.quantile([60, 70, 71], 0.95)
    assert d["oom"] == (f"OOM: peak 63.8 GiB reached the 64.0 GiB request; similar jobs peak at {q95:.1f} GiB — "
                        f"request {math.ceil(q95 * 1.1)} GiB")
    assert d["to"].startswith("TIMEOUT: ran 2.00 h into its 2.00 h limit; too few similar")
    assert d["nf"].startswith("NODE_FAIL")


def test_caveat_shares(jobs):
    res = account_jobs(jobs)
    q = {r["caveat"]: r for r in res.quality}
    assert q["totalcpu_zero"]["jobs"] == 1
    assert q["totalcpu_zero"]["share_of_core_hours"] == pytest.approx(2 / (32 + 16 + 1 / 6 + 4 + 2))


BOOK = """
[book]
name = "t"
date = "2025-01-01"
[cpu]
usd_per_hour = 0.01
source = "s"
date = "2025-01-01"
[memory]
usd_per_hour = 0.001
source = "s"
date = "2025-01-01"
[gpu.a100]
usd_per_hour = 2.0
source = "s"
date = "2025-01-01"
"""


def test_price_book_validation(tmp_path, jobs):
    import tomllib

    good = tomllib.loads(BOOK)
    assert parse_price_book(good).gpu["a100"].usd_per_hour == 2.0
    bad = tomllib.loads(BOOK.replace("usd_per_hour = 2.0", "usd_per_hour = -2.0"))
    with pytest.raises(PriceBookError, match=r"\[gpu.a100\].*negative"):
        parse_price_book(bad)
    undated = tomllib.loads(BOOK.replace('usd_per_hour = 0.001\nsource = "s"\ndate = "2025-01-01"',
                                         'usd_per_hour = 0.001\nsource = "s"'))
    with pytest.raises(PriceBookError, match=r"\[memory\]: undated"):
        parse_price_book(undated)
    f = tmp_path / "book.toml"
    f.write_text(BOOK.replace("[gpu.a100]", "[gpu.h100]"))
    with pytest.raises(PriceBookError, match=r"no entry \[gpu.a100\]"):
        account_jobs(jobs, price_book=f)


def test_amortised_price():
    import tomllib

    spec = tomllib.loads(BOOK.replace("usd_per_hour = 2.0",
                                      "capital_usd = 8766.0\nlifetime_years = 1\npower_kw = 1.0\npue = 1.5\n"
                                      "usd_per_kwh = 0.1"))
    assert parse_price_book(spec).gpu["a100"].usd_per_hour == pytest.approx(1.0 + 0.15)
