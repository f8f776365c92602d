"""Per-hold GPU statistics from a long telemetry table too large for memory, streamed from Parquet.

The Parquet file holds ``node`` (string, dictionary-encoded is best), ``gpu_index``, ``metric``, ``time`` and
``value``; it is read in record batches, and each batch goes through :class:`~audit.telemetry.kernel.HoldIndex`
and one :class:`~audit.telemetry.kernel.Accumulator` per metric — NumPy on whole batches, no Python per sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .kernel import Accumulator, HoldIndex

GPUS_PER_NODE_MAX = 4096


@dataclass
class StreamResult:
    """Per hold and metric: ``count``, ``sum``, ``max`` arrays; plus samples seen and samples held."""

    stats: dict
    samples: int
    attributed: int


class GpuHoldStream:
    """Accumulate GPU samples per hold.  ``holds``: ``node``, ``gpu_index``, ``start``, ``end`` (epoch s)."""

    def __init__(self, holds: pd.DataFrame, metrics, tolerance_s: float = 0.0):
        self.nodes = pd.Index(pd.unique(holds["node"].astype("object")))
        gid = self.nodes.get_indexer(holds["node"].astype("object")) * GPUS_PER_NODE_MAX + holds["gpu_index"].to_numpy()
        self.index = HoldIndex(gid, holds["start"].to_numpy(), holds["end"].to_numpy(), tolerance_s)
        self.metrics = list(metrics)
        self.acc = {m: Accumulator(len(holds)) for m in self.metrics}
        self.samples = 0
        self.attributed = 0

    def _node_codes(self, col: pa.Array) -> np.ndarray:
        if pa.types.is_dictionary(col.type):
            lut = self.nodes.get_indexer(col.dictionary.to_pandas().astype("object"))
            idx = col.indices.to_numpy(zero_copy_only=False)
            return lut[idx]
        return self.nodes.get_indexer(col.to_pandas().astype("object"))

    def add_batch(self, batch: pa.RecordBatch) -> None:
        node = self._node_codes(batch.column("node"))
        gpu = batch.column("gpu_index").to_numpy(zero_copy_only=False).astype(np.int64)
        t = batch.column("time")
        if pa.types.is_timestamp(t.type):
            t = pc.cast(pc.cast(t, pa.timestamp("s")), pa.int64())
        tt = t.to_numpy(zero_copy_only=False)
        val = batch.column("value").to_numpy(zero_copy_only=False)
        gid = np.where(node >= 0, node.astype(np.int64) * GPUS_PER_NODE_MAX + gpu, -1)
        hold = self.index.assign(gid, tt)
        metric = batch.column("metric")
        self.samples += len(hold)
        self.attributed += int((hold >= 0).sum())
        if pa.types.is_dictionary(metric.type):
            names = metric.dictionary.to_pylist()
            codes = metric.indices.to_numpy(zero_copy_only=False)
            for k, name in enumerate(names):
                if name in self.acc:
                    m = codes == k
                    self.acc[name].add(np.where(m, hold, -1), val)
        else:
            for name in self.metrics:
                m = np.asarray(pc.equal(metric, name).to_numpy(zero_copy_only=False), dtype=bool)
                self.acc[name].add(np.where(m, hold, -1), val)

    def result(self) -> StreamResult:
        return StreamResult({m: {"count": a.count, "sum": a.sum, "max": a.max} for m, a in self.acc.items()},
                            self.samples, self.attributed)


def stream_parquet(path, holds: pd.DataFrame, metrics, *, tolerance_s: float = 0.0,
                   batch_rows: int = 2_000_000) -> StreamResult:
    """Stream one Parquet file of GPU samples through :class:`GpuHoldStream`."""
    stream = GpuHoldStream(holds, metrics, tolerance_s)
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=batch_rows, columns=["node", "gpu_index", "metric", "time", "value"]):
        stream.add_batch(batch)
    return stream.result()
