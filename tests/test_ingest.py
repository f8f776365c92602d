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
