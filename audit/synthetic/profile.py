"""The workload profile: load the default TOML, merge an override file over it, validate it."""

from __future__ import annotations

import tomllib
from datetime import datetime
from importlib import resources
from pathlib import Path

from ..textio import read_toml

DEFAULT_PROFILE = "profile.toml"


def default_profile_text() -> str:
    return resources.files(__package__).joinpath(DEFAULT_PROFILE).read_text(encoding="utf-8")


def merge(base: dict, override: dict, *, where: str, prefix: str = "") -> dict:
    """``override`` merged over ``base``; a key that ``base`` does not know is an error naming it."""
    out = dict(base)
    for key, value in override.items():
        name = f"{prefix}{key}"
        if key not in base:
            raise ValueError(f"{where}: unknown profile key {name!r}")
        if isinstance(base[key], dict) and not isinstance(value, dict):
            raise ValueError(f"{where}: profile key {name!r} must be a table")
        if isinstance(base[key], dict):
            out[key] = merge(base[key], value, where=where, prefix=f"{name}.")
        else:
            out[key] = value
    return out


def load_profile(path: Path | None = None) -> dict:
    """The default profile, with ``path`` (only the keys it changes) merged over it, validated."""
    profile = tomllib.loads(default_profile_text())
    where = "profile"
    if path is not None:
        where = str(path)
        profile = merge(profile, read_toml(path, ValueError), where=where)
    validate(profile, where)
    return profile


def _share(p: dict, dotted: str, where: str) -> None:
    value = _get(p, dotted)
    if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{where}: {dotted} must be a share between 0 and 1, got {value!r}")


def _positive(p: dict, dotted: str, where: str) -> None:
    value = _get(p, dotted)
    if not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{where}: {dotted} must be a positive number, got {value!r}")


def _non_negative(p: dict, dotted: str, where: str) -> None:
    value = _get(p, dotted)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < float("inf"):
        raise ValueError(f"{where}: {dotted} must be a number of 0 or more, got {value!r}")


def _weights(p: dict, values: str, weights: str, where: str) -> None:
    v, w = _get(p, values), _get(p, weights)
    if len(v) != len(w) or not v:
        raise ValueError(f"{where}: {values} and {weights} must be non-empty lists of the same length")
    if any(x < 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"{where}: {weights} must be non-negative with a positive sum")


def _get(p: dict, dotted: str):
    node = p
    for part in dotted.split("."):
        node = node[part]
    return node


WEIGHTED = (
    ("cpu.cores", "cpu.cores_weights"),
    ("cpu.mpi_nodes", "cpu.mpi_nodes_weights"),
    ("bigmem.cores", "bigmem.cores_weights"),
    ("bigmem.mem_gib", "bigmem.mem_gib_weights"),
    ("debug.cores", "debug.cores_weights"),
    ("gpu.gpus", "gpu.gpus_weights"),
    ("gpu.multinode_nodes", "gpu.multinode_nodes_weights"),
    ("gpu.cpus_per_gpu", "gpu.cpus_per_gpu_weights"),
    ("gpu.mem_gib_per_gpu", "gpu.mem_gib_per_gpu_weights"),
    ("memory.mib_per_core", "memory.mib_per_core_weights"),
    ("steps.srun_steps", "steps.srun_steps_weights"),
    ("states.failed_exit_codes", "states.failed_exit_codes_weights"),
)
SHARES = (
    "population.habit_repeat", "arrivals.array_share", "arrivals.het_share", "arrivals.weekend_factor",
    "cpu.mpi_share", "cpu.totalcpu_zero_share_of_mpi", "gpu.multinode_share", "gpu.untyped_request_share",
    "gpu.preemptible_share", "states.cancelled_pending_share", "states.admin_cancel_share", "cpu_efficiency.single_thread_share",
    "gpu_util.bursty_zero_share", "gpu_util.busy_zero_share", "gpu_memory.mean_to_peak", "jobstats.share",
    "load.target_occupancy", "load.placement_tolerance",
)
POSITIVE = (
    "population.jobs_per_user_month", "population.users_per_account", "population.activity_zipf",
    "arrivals.diurnal_peak_to_trough", "arrivals.array_tasks_mean", "walltime.overrequest_median",
    "memory.overrequest_median", "cpu_efficiency.beta_a", "cpu_efficiency.beta_b", "gpu_util.busy_level_a",
    "gpu_util.busy_level_b", "telemetry.interval_s", "states.cancel_wait_max_s", "load.queue_depth", "debug.max_limit_s",
)
NON_NEGATIVE = (
    "habit_spread.memory_log_sd", "habit_spread.memory_margin_sd", "habit_spread.run_log_sd",
    "habit_spread.cpu_efficiency_logit_sd",
)
STATE_NAMES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED")


def validate(p: dict, where: str = "profile") -> None:
    """Raise ValueError naming the file and key of the first inconsistent parameter."""
    try:
        datetime.fromisoformat(str(p["window"]["start"]))
    except ValueError as exc:
        raise ValueError(f"{where}: window.start {p['window']['start']!r} is not an ISO date-time") from exc
    for values, weights in WEIGHTED:
        _weights(p, values, weights, where)
    for key in SHARES:
        _share(p, key, where)
    for key in POSITIVE:
        _positive(p, key, where)
    for key in NON_NEGATIVE:
        _non_negative(p, key, where)
    total = sum(p["states"][s] for s in STATE_NAMES)
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"{where}: states shares must sum to 1, got {total:.6f}")
    kinds = p["kinds"]
    if any(v < 0 for v in kinds.values()) or sum(kinds.values()) <= 0:
        raise ValueError(f"{where}: kinds shares must be non-negative with a positive sum")
    ladder = p["walltime"]["ladder_s"]
    if sorted(ladder) != list(ladder) or ladder[0] <= 0:
        raise ValueError(f"{where}: walltime.ladder_s must be increasing positive seconds")
    cw = p["gpu_util"]["class_weights"]
    if set(cw) != {"idle", "bursty", "busy"} or sum(cw.values()) <= 0:
        raise ValueError(f"{where}: gpu_util.class_weights needs idle, bursty and busy weights")
    fw = p["memory"]["form_weights"]
    if set(fw) != {"per_cpu", "per_node", "total"} or sum(fw.values()) <= 0:
        raise ValueError(f"{where}: memory.form_weights needs per_cpu, per_node and total weights")
    for kind, target in p["load"]["kind_target"].items():
        if kind not in ("cpu", "bigmem", "gpu", "debug") or not 0.0 < target <= 1.5:
            raise ValueError(f"{where}: load.kind_target.{kind} must name a partition kind and a load in (0, 1.5]")
    if p["telemetry"]["chunk"] != "day":
        raise ValueError(f"{where}: telemetry.chunk must be 'day'")
