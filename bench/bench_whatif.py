"""The what-if sweep on the generated 122,000-job month (with its telemetry), on this machine's cores.

1. The whole sweep as ``reclaim whatif`` runs it (predictions; actual, oracle and five levels in both modes;
   the capacity search of each; ten shaken replicates of the recommended level; then headroom and policies) on
   a local Dask cluster of two workers.  Target: under 5 minutes for the stages up to the shaken replicates;
   the time of each stage is printed, headroom and policies beside the target.
2. The replay stage alone (every scenario on every pool at full size) on one worker and on two.  Target:
   a speed-up of at least 1.7×.

The month is generated once (seed 1) into bench/data/whatif_month/ and ingested into its store beside it.
"""

from __future__ import annotations

import time

from .common import DATA, current, made

JOBS = 122_000


def month_store():
    from audit.ingest import ingest
    from audit.synthetic import generate

    root = DATA / "whatif_month"
    store = root / "store"
    if not current(root):
        generate(root / "trace", jobs=JOBS, days=30.0, seed=1)
        ingest([root / "trace"], store)
        made(root)
    return store


TARGET_STAGES = ("predictions", "replay", "capacity", "shaken")


def replay_stage(table, shape, frame, workers: int) -> float:
    """Seconds of the full-size replay of every scenario on ``workers`` local workers, from the predictions
    ``frame`` already made."""
    from audit.whatif.month import build_month
    from audit.whatif.replays import Setting
    from audit.whatif.runner import Runner
    from audit.whatif.sweep import Options, _Replayer, full_round, pools_of, scenarios_for
    from audit.whatif.to_simulator import to_cluster
    from audit.whatif.whatif import predictions_for

    opts = Options()
    cluster = to_cluster(shape)
    with Runner(workers=workers, progress=False) as runner:
        preds = predictions_for(table, opts, procs=None, frame=frame, cluster=cluster)
        month, _ = build_month(table, cluster, preds)
        setting = Setting(month=month, cluster=cluster)
        replay = _Replayer(runner, setting)
        t = time.perf_counter()
        full_round(scenarios_for(opts, month), pools_of(setting), replay, setting, opts)
        return time.perf_counter() - t


def main() -> None:
    import tempfile

    import pandas as pd

    from audit.ingest import read_table
    from audit.whatif import whatif

    store = month_store()
    table, shape = read_table([store])
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        result = whatif(table, cluster_shape=shape, workers=2, quiet=True, out=out)
        total = time.perf_counter() - t
        frame = pd.read_parquet(f"{out}/predictions.parquet")
    stages = ", ".join(f"{k} {v:.0f} s" for k, v in result.stages.items())
    swept = sum(result.stages.get(k, 0.0) for k in TARGET_STAGES)
    rec = result.summary.get("recommended") or {}
    print(f"whatif month: {len(table):,} jobs, {result.replays:,} replays on {result.runner} in {total:.0f} s: "
          f"{stages}; the sweep to the shaken replicates {swept:.0f} s (target < 300 s); recommended "
          f"{rec.get('scenario')} recovering {rec.get('nodes_recovered')} of {result.summary['cluster']['nodes']} nodes")
    one = replay_stage(table, shape, frame, 1)
    two = replay_stage(table, shape, frame, 2)
    print(f"whatif replay stage: 1 worker {one:.0f} s, 2 workers {two:.0f} s, speed-up {one / two:.2f}x (target ≥ 1.7x)")
