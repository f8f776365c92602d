"""The front door's ingest: what it takes among its inputs."""

from __future__ import annotations

import pytest

from audit.ingest import ingest

from .conftest import ROOT


def test_a_cluster_shape_named_among_the_inputs_is_the_shape(tmp_path):
    week = ROOT / "sample_traces" / "week"
    if not (week / "sacct.txt").exists():
        pytest.skip("sample week absent")
    res = ingest([week / "sacct.txt", week / "cluster.toml"], tmp_path / "store")
    assert res.cluster_shape is not None and (tmp_path / "store" / "cluster_shape.toml").exists()
    with pytest.raises(Exception, match="not a recognised accounting format"):
        ingest([week / "sacct.txt", week / "truth.json"], tmp_path / "other")


def _swf(path, procs, rows=((1, 0, 2, 10, 10), (2, 1, 4, 5, 5))):
    head = "; UnixStartTime: 1000000000\n" + (f"; MaxProcs: {procs}\n" if procs else "")
    path.write_text(head + "".join(f"{j} {s} -1 {r} {p} -1 -1 {p} {q} -1 1 1 1 -1 -1 1 -1 -1\n"
                                   for j, s, p, r, q in rows))
    return path


def test_an_swf_header_declares_the_shape_a_store_keeps(tmp_path):
    from audit.accounting import account_jobs
    from audit.cluster_shape import load_cluster_shape, pool_procs
    from reports.sections import _shape_note

    res = ingest([_swf(tmp_path / "a.swf", 4)], tmp_path / "store")
    assert res.ledger["cluster_shape"]["source"] == "declared" and res.ledger["cluster_shape"]["procs"] == 4
    assert "MaxProcs 4" in _shape_note(res.ledger["cluster_shape"])
    kept = load_cluster_shape(tmp_path / "store" / "cluster_shape.toml")
    assert kept.procs == 4 and "a.swf" in kept.inferred and pool_procs(tmp_path / "store" / "cluster_shape.toml") == 4
    # accounting has no partitions or node types in a pool: its per-partition figures are left out, not an error
    assert account_jobs(res.jobs, cluster_shape=tmp_path / "store" / "cluster_shape.toml").summary["jobs"] == 2


def test_files_of_two_machines_or_one_undeclared_declare_no_shape(tmp_path):
    two = ingest([_swf(tmp_path / "a.swf", 4), _swf(tmp_path / "b.swf", 8)], tmp_path / "s2")
    assert two.cluster_shape is None and not (tmp_path / "s2" / "cluster_shape.toml").exists()
    one = ingest([_swf(tmp_path / "a.swf", 4), _swf(tmp_path / "c.swf", None)], tmp_path / "s1")
    assert one.cluster_shape is None
    same = ingest([_swf(tmp_path / "a.swf", 4), _swf(tmp_path / "d.swf", 4, rows=((3, 5, 1, 4, 4),))], tmp_path / "s")
    from audit.cluster_shape import pool_procs

    assert pool_procs(same.cluster_shape) == 4 and len(same.jobs) == 3
