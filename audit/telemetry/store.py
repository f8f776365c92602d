"""Store the telemetry beside the job table: ``telemetry.parquet`` (a view of the same name in ``reclaim.duckdb``
that reads the file in place), ``job_telemetry.parquet`` and ``nodes.parquet`` (tables), and ``cluster_shape.toml``
when nodes were read."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

from ..cluster_shape import toml_text
from ..node_table import shape_dict
from ..store import create_parquet_view, drop
from ..textio import read_toml


def write_telemetry_store(out: Path, telemetry: pd.DataFrame | None, job_stats: pd.DataFrame | None,
                          nodes: pd.DataFrame | None, cluster_shape: Path | dict | None = None) -> Path | None:
    """Write what exists; return the path of the cluster shape written (from the nodes, or the one among
    the inputs; else None).

    The shape merges the node groups of ``cluster_shape`` (a Slurm TOML among the inputs) with those of the
    nodes, so Slurm partitions and Kubernetes pools are accounted side by side.
    """
    tables = {}
    if telemetry is not None and len(telemetry):
        telemetry.to_parquet(out / "telemetry.parquet", index=False)
    if (out / "telemetry.parquet").exists():  # written here, or streamed there while reading
        tables["telemetry"] = out / "telemetry.parquet"
    if job_stats is not None and len(job_stats):
        job_stats.to_parquet(out / "job_telemetry.parquet", index=False)
        tables["job_telemetry"] = out / "job_telemetry.parquet"
    shape = None
    if nodes is not None and len(nodes):
        nodes.to_parquet(out / "nodes.parquet", index=False)
        tables["nodes"] = out / "nodes.parquet"
        spec = shape_dict(nodes, str(nodes["cluster"].iloc[0]))
        if cluster_shape is not None:
            base = cluster_shape if isinstance(cluster_shape, dict) else read_toml(cluster_shape)
            spec = {"name": base.get("name", spec["name"]),
                    "partitions": [{"name": p["name"]} for p in base.get("partitions", [])] + spec["partitions"],
                    "node_groups": [_flat(g) for g in base.get("node_groups", [])] + spec["node_groups"]}
        shape = out / "cluster_shape.toml"
        shape.write_text(toml_text(spec), encoding="utf-8")
    elif cluster_shape is not None:  # the shape among the inputs (or inferred), kept with the store it describes
        shape = out / "cluster_shape.toml"
        if isinstance(cluster_shape, dict):
            shape.write_text(toml_text(cluster_shape), encoding="utf-8")
        else:
            shape.write_bytes(Path(cluster_shape).read_bytes())
    con = duckdb.connect(str(out / "reclaim.duckdb"))
    try:
        for name in ("telemetry", "job_telemetry", "nodes"):
            drop(con, name)  # also what an earlier run left
        for name, path in tables.items():
            if name == "telemetry":  # a month of samples stays in Parquet; DuckDB reads it in place
                create_parquet_view(con, name, path)
            else:
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet(?)", [str(path)])
    finally:
        con.close()
    return shape


STORE_FILES = ("telemetry.parquet", "job_telemetry.parquet", "nodes.parquet", "cluster_shape.toml")


def clear_telemetry_store(out: Path) -> None:
    """Remove the files a previous run left in ``out`` (so a run without telemetry shows none)."""
    for name in STORE_FILES:
        (Path(out) / name).unlink(missing_ok=True)


def _flat(group: dict) -> dict:
    """A node group's scalar entries (and lists of scalars): what the shape needs, in TOML we can write."""
    scalar = str | int | float | bool
    return {k: v for k, v in group.items()
            if isinstance(v, scalar) or isinstance(v, list) and all(isinstance(x, scalar) for x in v)}
