"""A cluster shape inferred from the accounting's node lists (audit.shape_inference), worked by hand."""

from __future__ import annotations

import pandas as pd

from audit.cluster_shape import load_cluster_shape, toml_text
from audit.ingest import ingest
from audit.job_table import conform
from audit.node_table import conform_placements
from audit.shape_inference import infer_shape, node_capacity, placements_from_jobs

GIB = 2**30


def _jobs(rows) -> pd.DataFrame:
    cols = ["job_id", "partition", "node_list", "alloc_nodes", "alloc_cpus", "alloc_mem_bytes", "alloc_gpus", "gpu_type"]
    df = pd.DataFrame(rows, columns=cols)
    df["cluster"] = "c1"
    return conform(df)


def test_a_jobs_allocation_is_shared_out_over_its_nodes():
    jobs = _jobs([["1", "cpu", "cn[001-002]", 2, 64, 200 * GIB, 0, None],
                  ["2", "cpu", "cn003", 1, 7, 10 * GIB, 0, None]])
    p = placements_from_jobs(jobs)
    assert sorted(p["node"].tolist()) == ["cn001", "cn002", "cn003"]
    got = p.set_index("node")
    assert got.loc["cn001", "cpus"] == 32 and got.loc["cn001", "mem_bytes"] == 100 * GIB
    assert got.loc["cn003", "cpus"] == 7 and got.loc["cn003", "job_id"] == "2"


def test_each_node_shows_the_most_one_job_held_there_and_its_group_the_most_any_node_showed():
    # cn001 is seen full (48 cores, 180 GiB), cn002 only half; both are cn### in cpu: one group of 2 nodes, 48
    # cores and 180 GiB each.  ga01 held 4 a100 GPUs; gpu is its own group.  A job in two partitions' nodes lists
    # both partitions on the group.
    jobs = _jobs([["1", "cpu", "cn001", 1, 48, 180 * GIB, 0, None],
                  ["2", "cpu", "cn002", 1, 24, 90 * GIB, 0, None],
                  ["3", "cpu", "cn002", 1, 2, 2 * GIB, 0, None],
                  ["4", "gpu", "ga01", 1, 16, 64 * GIB, 4, "a100"],
                  ["5", "gpu", "ga01", 1, 8, 32 * GIB, 1, "a100"]])
    shape = infer_shape(jobs)
    groups = {g["name"]: g for g in shape["node_groups"]}
    assert groups["cn"] == {"name": "cn", "count": 2, "cpus": 48, "mem_bytes": 180 * GIB, "gpus": 0,
                            "partitions": ["cpu"], "nodes": "cn[001-002]"}
    assert groups["ga"]["count"] == 1 and groups["ga"]["gpus"] == 4 and groups["ga"]["gpu_type"] == "a100"
    assert shape["name"] == "c1" and shape["inferred"]
    assert [p["name"] for p in shape["partitions"]] == ["cpu", "gpu"]
    # the dict is a valid shape file, and says it was inferred
    loaded = load_cluster_shape(shape)
    assert loaded.inferred and sum(g.count for g in loaded.groups) == 3
    assert load_cluster_shape(__import__("tomllib").loads(toml_text(shape))).inferred == shape["inferred"]


def test_a_cpu_index_says_more_than_the_cores_held():
    """PBS's exec_host n1/31 places a one-core job on CPU 31: n1 has at least 32 cores."""
    p = conform_placements(pd.DataFrame({"cluster": ["c1"], "node": ["n1"], "job_id": ["9"], "partition": ["batch"],
                                         "cpus": [1.0], "cpu_index_max": [31]}))
    cap = node_capacity(p)
    assert cap.loc[0, "cpus"] == 32


def test_a_reader_placements_are_used_before_the_node_list():
    jobs = _jobs([["7", "batch", "n1", 1, 1, GIB, 0, None]])
    p = conform_placements(pd.DataFrame({"cluster": ["c1"], "node": ["n1"], "job_id": ["7"], "partition": ["batch"],
                                         "cpus": [1.0], "cpu_index_max": [15], "mem_bytes": [GIB]}))
    g = infer_shape(jobs, p)["node_groups"][0]
    assert g["cpus"] == 16 and g["count"] == 1


def test_no_node_names_no_shape():
    assert infer_shape(_jobs([["1", "cpu", None, 1, 4, GIB, 0, None]])) is None


def test_ingest_infers_the_shape_when_none_is_given_and_says_so(tmp_path):
    f = tmp_path / "sacct.txt"
    f.write_text("JobID|JobIDRaw|Cluster|Partition|User|Submit|Start|End|Elapsed|Timelimit|State|ExitCode|NNodes|"
                 "NCPUS|ReqMem|AllocTRES|NodeList|JobName\n"
                 "1|1|c1|cpu|u|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T01:00:00|01:00:00|02:00:00|"
                 "COMPLETED|0:0|2|64|100G|cpu=64,mem=100G,node=2|cn[01-02]|a\n"
                 "2|2|c1|cpu|u|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T01:00:00|01:00:00|02:00:00|"
                 "COMPLETED|0:0|1|8|8G|cpu=8,mem=8G,node=1|cn03|b\n")
    res = ingest([f], tmp_path / "store")
    shape = load_cluster_shape(tmp_path / "store" / "cluster_shape.toml")
    assert shape.inferred and [(g.count, g.cpus, g.mem_bytes) for g in shape.groups] == [(3, 32, 50 * GIB)]
    prov = res.ledger["cluster_shape"]
    assert prov["source"] == "inferred" and prov["nodes"] == 3
    # a shape file given wins, and the ledger says so
    given = tmp_path / "shape.toml"
    given.write_text('name = "c1"\n[[node_groups]]\nname = "cn"\ncount = 3\ncpus = 64\nmem_gib = 128\n'
                     'partition = "cpu"\n')
    res = ingest([f], tmp_path / "store2", cluster_shape=given)
    assert res.ledger["cluster_shape"]["source"] == "given"
    assert not load_cluster_shape(tmp_path / "store2" / "cluster_shape.toml").inferred


def test_a_format_without_memory_per_node_takes_the_jobs_memory_shared_over_its_nodes():
    """Grid Engine's placements name no memory: a job asking 64 GiB over two hosts shows 32 GiB on each."""
    jobs = _jobs([["5", "all.q", None, 2, 16, None, 0, None]])
    jobs["req_mem_bytes"] = pd.array([64 * GIB], dtype="Int64")
    p = conform_placements(pd.DataFrame({"cluster": ["c1", "c1"], "node": ["h1", "h2"], "job_id": ["5", "5"],
                                         "partition": ["all.q", "all.q"], "cpus": [8.0, 8.0]}))
    cap = node_capacity(p, jobs)
    assert cap["mem_bytes"].tolist() == [32 * GIB, 32 * GIB]
