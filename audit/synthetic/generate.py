"""The orchestrator: sample the workload, place it, derive steps and telemetry, write every file."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from .cluster import cluster_toml, compress_hostlist, load_cluster
from .corrupt import corrupt_lines
from .ids import job_ids
from .jobstats_comments import admin_comments
from .load import calibrate, settle
from .lsf_acct import write_lsb_acct
from .pbs_accounting import write_pbs_accounting
from .placement import Placer
from .profile import load_profile
from .sacct_records import build_sacct_lines, node_lists
from .sacct_text import HEADER
from .sge_accounting import write_sge_accounting
from .steps import build_steps
from .telemetry import METRICS, TelemetryModel, expand_holds, run_telemetry
from .truth import job_truth_frame, truth_totals, within_habit
from .workload import sample_jobs

#: ``--format``: the accounting file each writes (the rest of the month is the same in every format)
FORMATS = ("sacct", "pbs", "lsf", "sge")
WRITERS = {"pbs": write_pbs_accounting, "lsf": write_lsb_acct, "sge": write_sge_accounting}
#: what each format writes, so that a run in another format leaves none of it behind
ACCOUNTING_FILES = {"sacct": "sacct.txt", "pbs": "accounting/", "lsf": "lsb.acct", "sge": "accounting"}


def _epoch(text: str) -> int:
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp())


def generate(out, *, jobs: int = 122_000, days: float = 30.0, cluster_spec=None, profile=None, seed: int = 1,
             corrupt: int = 0, telemetry_interval_s: int | None = None, write_telemetry: bool = True,
             fmt: str = "sacct") -> list[Path]:
    """Write ``sacct.txt``, ``telemetry/``, ``cluster.toml``, ``truth.json`` and ``truth_jobs.csv`` into ``out``.

    ``telemetry_interval_s`` overrides the profile's sample interval; ``write_telemetry=False`` still
    computes the per-job GPU truth on that grid but writes no telemetry files.  ``fmt`` (:data:`FORMATS`) writes
    the accounting as PBS daily logs (``accounting/YYYYMMDD``), LSF's ``lsb.acct`` or Grid Engine's ``accounting``
    instead of ``sacct.txt``: the same jobs, every other file byte for byte the same.  Returns the files written.
    """
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    if days <= 0:
        raise ValueError(f"--days must be positive, got {days}")
    if corrupt < 0:
        raise ValueError(f"--corrupt must be 0 or more, got {corrupt}")
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if corrupt and fmt != "sacct":
        raise ValueError("--corrupt corrupts sacct lines: it needs --format sacct")
    prof = load_profile(profile)
    cluster = load_cluster(cluster_spec)
    interval = int(telemetry_interval_s or prof["telemetry"]["interval_s"])
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _remove_stale(out, fmt)
    # a fifth stream for the spread of use around habits: the first four are those of a four-stream spawn,
    # so a profile with every [habit_spread] setting 0 gives back the month made without spread, byte for byte
    rng_work, rng_steps, rng_misc, rng_corrupt, rng_spread = (np.random.default_rng(s)
                                                              for s in np.random.SeedSequence(seed).spawn(5))
    t0 = _epoch(prof["window"]["start"])
    span = float(days) * 86400.0
    weekday0 = datetime.fromtimestamp(t0, UTC).weekday()

    sampled = sample_jobs(rng_work, int(jobs), span, cluster, prof, weekday0, rng_spread)
    j, pop = sampled["jobs"], sampled["pop"]
    cal = calibrate(j, cluster, span, prof)
    _derive(rng_misc, j, pop, cluster, prof, t0)

    het_next = (j["sub_type"] == 2) & (j["task"] == 0)
    placer = Placer(depth=prof["load"]["queue_depth"])

    def place(jj: dict):
        return placer.place(cluster, jj["submit"], jj["elapsed_s"], jj["partition"], jj["nodes"], jj["cpus_pn"],
                            jj["mem_pn_mib"], jj["gpus_pn"], jj["exclusive"], jj["pending_cancel"], het_next)

    placed, cal = settle(j, cluster, t0, span, prof, cal, place)
    start = placed.start
    st = build_steps(rng_steps, j, start)
    ids = job_ids(j["sub"], j["sub_type"], j["task"])
    nl = node_lists(j["n"], placed.alloc_row, placed.alloc_node, cluster.node_name, compress_hostlist)

    written: list[Path] = []
    tel_dir = out / "telemetry"
    if write_telemetry:
        tel_dir.mkdir(exist_ok=True)
    holds = expand_holds(placed.alloc_row, placed.alloc_node, placed.alloc_gmask, start, j["elapsed_s"],
                         int(cluster.node_gpus.max(initial=0)))
    gpu_mem_mib = j["gpu_mem_gib"][holds.row] * 1024
    model = TelemetryModel(j, holds, gpu_mem_mib, prof)
    t_end = int(max(t0 + span, (start + j["elapsed_s"]).max(initial=t0) + 1))
    t_end = t0 + int(np.ceil((t_end - t0) / 86400)) * 86400
    hs = run_telemetry(cluster, holds, model, t0, t_end, interval, tel_dir if write_telemetry else None)
    written += hs.files
    gpu = _gpu_truth(j, holds, hs, model)
    if write_telemetry:
        written.append(_write_gpu_index(tel_dir / "gpu_index.csv", ids["job_id"], holds, cluster.node_name))

    mem_peak_bytes = st["mem_peak_kib"] * 1024
    ctx = {
        "jobs": j, "steps": st, "ids": ids, "start": start, "cluster_name": cluster.name, "node_lists": nl,
        "account_name": pop["account_name"], "user_name": pop["user_name"],
        "partition_name": np.array([p.name for p in cluster.partitions], dtype=object),
        "jobstats_short_s": prof["jobstats"]["short_s"], "node_name": cluster.node_name,
        "row_nodes": _row_nodes(placed), "gpu_per_hold": gpu["per_row"], "cpu_used_ms": st["cpu_used_ms"],
        "mem_peak_bytes": mem_peak_bytes, "gpu_mem_bytes": j["gpu_mem_gib"] * 2**30, "uid": pop["uid"],
    }
    corrupted = []
    # truth.json counts the sacct lines in every format: the month is the same whatever file carries it
    sacct_lines = int(j["n"] + st["has_batch"].sum() + st["has_ext"].sum() + len(st["srun"]["job"]))
    if fmt == "sacct":
        ctx["admin_comment"] = admin_comments(ctx)
        lines, kinds = build_sacct_lines(ctx)
        corrupted = corrupt_lines(rng_corrupt, lines, kinds, int(corrupt))
        sacct = out / "sacct.txt"
        sacct.write_text(HEADER + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
        written.append(sacct)
    else:
        written += WRITERS[fmt](ctx, out)
    if corrupted:
        path = out / "corrupted_lines.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=["line", "kind", "field"])
            w.writeheader()
            w.writerows(corrupted)
        written.append(path)

    ct = out / "cluster.toml"
    ct.write_text(cluster_toml(cluster), encoding="utf-8")
    written.append(ct)

    started = start >= 0
    el = np.where(started, j["elapsed_s"], 0)
    alloc_gpus = j["gpus_pn"] * j["nodes"]
    table = {
        "job_id": ids["job_id"], "account": pop["account_name"][j["account"]],
        "partition": np.array([p.name for p in cluster.partitions], dtype=object)[j["partition"]],
        "state": j["state"], "start": np.where(started, start, -1), "end": np.where(started, start + el, -1),
        "elapsed_s": el, "limit_s": j["limit_s"], "alloc_cpus": np.where(started, j["alloc_cpus"], 0),
        "alloc_mem_bytes": np.where(started, st["alloc_mem_bytes"], 0), "alloc_gpus": np.where(started, alloc_gpus, 0),
        "cpu_used_ms": st["cpu_used_ms"], "cpu_true_ms": st["cpu_true_ms"],
        "mem_peak_bytes": np.where(started, mem_peak_bytes, 0), "gpu_util_mean": gpu["util_mean"],
        "gpu_mem_peak_bytes": gpu["mem_peak_bytes"], "gpu_mem_max_per_gpu_bytes": gpu["mem_max_per_gpu_bytes"],
        "gpu_samples": gpu["samples"], "jobstats": j["jobstats"] & started, "totalcpu_zero": j["totalcpu_zero"] & started,
    }
    frame = job_truth_frame(table)
    frame_h = frame.assign(gpu_mem_alloc_bytes=table["alloc_gpus"] * j["gpu_mem_gib"] * 2**30)
    extra = {
        "generator": {"jobs": int(jobs), "days": float(days), "seed": int(seed), "corrupt": int(corrupt),
                      "window_start": prof["window"]["start"], "window_end_epoch": int(t0 + span),
                      "window_start_epoch": int(t0), "cluster": cluster.name, "telemetry_interval_s": interval,
                      "telemetry_samples": int(hs.samples_total), "telemetry_written": bool(write_telemetry),
                      "runtime_scale": {k: round(v, 6) for k, v in cal["scale"].items()},
                      "offered_load": {k: round(v, 6) for k, v in cal["offered_load"].items()},
                      "placement_rounds": int(prof["load"]["placement_rounds"])},
        "occupancy": _occupancy(j, start, cluster, t0, span),
        "checks": _checks(frame, hs),
        "habit_spread": within_habit({
            "user": j["user"], "job_name": j["job_name"], "partition": j["partition"], "cpus": j["alloc_cpus"],
            "mem_bytes": st["alloc_mem_bytes"], "nodes": j["nodes"], "gpus": alloc_gpus, "limit_s": j["limit_s"],
            "start": table["start"], "elapsed_s": el, "submit": j["submit"], "state": j["state"],
            "mem_peak_bytes": mem_peak_bytes, "cpu_true_s": st["cpu_true_ms"] / 1000.0,
            "single_thread": j["single_thread"]}, prof["habit_spread"], sampled["spread"]),
        "sacct_lines": {"data": sacct_lines, "jobs": int(j["n"]), "steps": int(sacct_lines - j["n"]),
                        "corrupted": len(corrupted)},
    }
    truth = truth_totals(frame_h, extra, prof["jobstats"]["short_s"])
    tj = out / "truth.json"
    tj.write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    written.append(tj)
    tc = out / "truth_jobs.csv"
    frame.to_csv(tc, index=False, lineterminator="\n")
    written.append(tc)
    return written


def _remove_stale(out: Path, fmt: str = "sacct") -> None:
    """Files an earlier run may have left that this run might not overwrite (other days, corruption list, the
    accounting of another format: only the names the generator writes)."""
    stale = [out / "corrupted_lines.csv"]
    stale += [p for m in METRICS for p in (out / "telemetry").glob(f"{m}_*.json")]
    stale += [out / name for f, name in ACCOUNTING_FILES.items() if f != fmt and not name.endswith("/")]
    days = out / "accounting"
    if days.is_dir():  # PBS daily logs: another run's days, or a folder where Grid Engine's file goes
        stale += [p for p in days.iterdir() if p.is_file() and len(p.name) == 8 and p.name.isdigit()]
    for p in stale:
        if p.is_file():
            p.unlink()
    if fmt != "pbs" and days.is_dir() and not any(days.iterdir()):
        days.rmdir()


def _derive(rng: np.random.Generator, j: dict, pop: dict, cluster, prof: dict, t0: int) -> None:
    """Columns that follow from the sample and the cluster: absolute times, GPU type, who cancelled."""
    j["submit"] = j["submit"] + t0
    j["alloc_cpus"] = j["cpus_pn"] * j["nodes"]
    gtype = {}
    gmem = {}
    for g in cluster.groups:
        gtype.setdefault(g.partition, g.gpu_type)
        gmem.setdefault(g.partition, g.gpu_mem_gib)
    names = [p.name for p in cluster.partitions]
    j["gpu_type"] = np.array([gtype[x] for x in names], dtype=object)[j["partition"]]
    j["gpu_mem_gib"] = np.array([gmem[x] for x in names], dtype=np.int64)[j["partition"]]
    j["untyped"] = (j["gpus_pn"] > 0) & (rng.random(j["n"]) < prof["gpu"]["untyped_request_share"])
    admin = rng.random(j["n"]) < prof["states"]["admin_cancel_share"]
    j["cancel_uid"] = np.where(admin, 0, pop["uid"][j["user"]])


def _row_nodes(placed) -> dict:
    out: dict[int, list] = {}
    for r, nd in zip(placed.alloc_row.tolist(), placed.alloc_node.tolist(), strict=True):
        out.setdefault(r, []).append(nd)
    return {r: sorted(v) for r, v in out.items()}


def _gpu_truth(j: dict, holds, hs, model) -> dict:
    """Per job: mean utilisation (0-1) and peak GPU memory from the samples; planted values where none fell."""
    n = j["n"]
    planted_util = (1.0 - model.zero) * model.level
    util_h = np.where(hs.n > 0, hs.util_sum / np.maximum(hs.n, 1), planted_util)
    fb_h = np.where(hs.n > 0, hs.fb_max_mib, np.round(model.peak_mib)).astype(np.int64) * 2**20
    samples = np.bincount(holds.row, weights=hs.n, minlength=n).astype(np.int64)
    usum = np.bincount(holds.row, weights=hs.util_sum, minlength=n)
    held = np.bincount(holds.row, minlength=n)
    psum = np.bincount(holds.row, weights=planted_util, minlength=n)
    util = np.where(samples > 0, usum / np.maximum(samples, 1), psum / np.maximum(held, 1)) / 100.0
    util = np.where(held > 0, util, np.nan)
    mem_sum = np.bincount(holds.row, weights=fb_h, minlength=n).astype(np.int64)
    mem_max = np.zeros(n, dtype=np.int64)
    np.maximum.at(mem_max, holds.row, fb_h)
    per_row: dict[int, list] = {}
    for r, nd, gi, u, fb in zip(holds.row.tolist(), holds.node.tolist(), holds.gpu.tolist(), util_h.tolist(),
                                fb_h.tolist(), strict=True):
        per_row.setdefault(r, []).append((nd, gi, u, fb))
    return {
        "util_mean": util, "samples": samples,
        "mem_peak_bytes": np.where(held > 0, mem_sum, -1), "mem_max_per_gpu_bytes": np.where(held > 0, mem_max, -1),
        "per_row": per_row, "zero_samples": int(hs.zeros.sum()), "held_samples": int(hs.n.sum()),
    }


def _write_gpu_index(path: Path, job_id: np.ndarray, holds, node_name: np.ndarray) -> Path:
    lines = ["job_id,node,gpu_index"]
    lines += (job_id[holds.row] + "," + node_name[holds.node] + "," + holds.gpu.astype(str).astype(object)).tolist()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _occupancy(j: dict, start: np.ndarray, cluster, t0: int, span: float) -> dict:
    """Share of each partition's cores, memory and GPUs allocated over the submission window, and the
    dominant (binding) one; ``by_kind`` is the dominant share over all partitions of a kind."""
    on = start >= 0
    inside = np.where(on, np.clip(start + j["elapsed_s"], t0, t0 + span) - np.clip(start, t0, t0 + span), 0)
    held = inside * j["nodes"]
    dims = (("cores", j["cpus_pn"], cluster.node_cpus), ("memory", j["mem_pn_mib"], cluster.node_mem_mib),
            ("gpus", j["gpus_pn"], cluster.node_gpus))
    out = {}
    kinds: dict = {}
    for i, p in enumerate(cluster.partitions):
        m = j["partition"] == i
        on_node = cluster.node_partition == i
        shares = {}
        acc = kinds.setdefault(p.kind, {})
        for name, per_node, cap in dims:
            total = float(cap[on_node].sum())
            if total > 0:
                used = float((per_node[m] * held[m]).sum())
                shares[name] = round(used / (total * span), 6)
                u, c = acc.get(name, (0.0, 0.0))
                acc[name] = (u + used, c + total)
        shares["dominant"] = max(shares.values())
        out[p.name] = shares
    by_kind = {kind: round(max(u / (c * span) for u, c in acc.values()), 6) for kind, acc in sorted(kinds.items())}
    return {"by_partition": out, "by_kind": by_kind}


def _checks(frame, hs) -> dict:
    """The figures tests/synthetic/test_generate.py compares with the profile's [checks] ranges."""
    comp = frame[(frame["state"] == "COMPLETED") & (frame["elapsed_s"] >= 60)]
    ran = frame[frame["elapsed_s"] > 0]
    c = comp[comp["mem_peak_bytes"] > 0]
    gpu = frame[frame["alloc_gpus"] > 0]
    gpu_h = (gpu["alloc_gpus"] * gpu["elapsed_s"]).sum()
    return {
        "walltime_overrequest_median": round(float((comp["limit_s"] / comp["elapsed_s"]).median()), 6),
        "memory_overrequest_median": round(float((c["alloc_mem_bytes"] / c["mem_peak_bytes"]).median()), 6),
        "cpu_used_share": round(float(ran["cpu_used_s"].sum() / (ran["alloc_cpus"] * ran["elapsed_s"]).sum()), 6),
        "gpu_used_share": round(float((gpu["alloc_gpus"] * gpu["elapsed_s"] * gpu["gpu_util_mean"]).sum() / gpu_h), 6)
        if gpu_h else None,
        "gpu_util_zero_share": round(float(hs.zeros.sum() / max(hs.n.sum(), 1)), 6),
        "completed_share": round(float((frame["state"] == "COMPLETED").mean()), 6),
    }
