"""Failure warnings before submission, each with a stable code, its evidence and, where one can be put on it,
the probability that what it warns of happens (``risk``).

| code | raised when | risk |
|---|---|---|
| ``OOM_RISK`` | the memory asked is below the predicted need: P(need > asked) above 1 − level | that probability |
| ``TIMEOUT_RISK`` | the time limit is below the predicted run time, likewise | that probability |
| ``RECENT_FAILURES`` | at least 2 of the user's last 10 similar jobs (same family, else same request) ended in the last 14 days of the history FAILED, OUT_OF_MEMORY or TIMEOUT | the share that failed |
| ``GPU_SINGLE_PROCESS`` | two or more GPUs, and the script starts one process (no launcher, nothing in the background) | none (read from the text) |
| ``GPU_IDLE_HISTORY`` | at least half of the user's similar GPU jobs (3 or more with GPU figures) kept their GPUs under 5 % busy | that share |
| ``EXCLUSIVE_SERIAL`` | ``--exclusive`` for a serial program | the share of similar jobs that kept at most 1.5 cores busy (none when only the script's text says serial) |
| ``MANY_CORES_SERIAL`` | 4 or more CPUs for a serial program (not exclusive) | likewise |
| ``MEM_ALL`` | ``--mem=0``: all the memory of every node | none (read from the text) |

A program is serial when at least half of the user's similar jobs with CPU figures (3 or more) kept at most 1.5
cores busy; with fewer such jobs, when the script starts one process and shows no sign of threads
(``predictors.advisor.launch``).  A warning *blocks* (``reclaim predict`` exits 3) when its risk is at or above
1 − level; warnings without a risk block only under ``--strict``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .launch import LaunchFacts
from .sched_units import EXCLUSIVE_OPTION, MEM_OPTION, TIME_OPTION, odds_words, readable_size

FAILED = ("FAILED", "OUT_OF_MEMORY", "TIMEOUT")
RECENT_DAYS = 14.0
RECENT_JOBS = 10
MIN_FAILURES = 2
MIN_SIMILAR = 3
IDLE_UTIL = 0.05
SERIAL_CORES = 1.5
MANY_CORES = 4
WHY = {"OUT_OF_MEMORY": "out of memory", "TIMEOUT": "out of time", "FAILED": "failed"}
EXIT_MEANING = {1: "a general error", 2: "a shell usage error", 126: "a command that cannot run",
                127: "a command not found", 137: "killed (signal 9)", 139: "a segmentation fault (signal 11)"}


def _num(frame: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(frame[col], errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def warning(code: str, kind: str, risk: float | None, message: str, evidence: dict) -> dict:
    return {"code": code, "kind": kind, "risk": None if risk is None else round(float(risk), 4), "message": message,
            "evidence": evidence}


def _kill_warning(code: str, res: dict, level: float, what: str, fix: str, similar: pd.DataFrame, state: str) -> dict | None:
    r = res.get("asked_risk")
    if r is None or r <= 1 - level:
        return None
    killed = int((similar["state"].astype("string") == state).sum()) if len(similar) else 0
    if res.get("capped_by") and res["suggested"] is not None and res["suggested"] <= res["asked"]:
        fix = f"{fix.split(';')[0]}; {res['capped_by']}" if ";" in fix else res["capped_by"]
    elif res.get("capped_by"):
        fix += f" ({res['capped_by']})"
    msg = f"{odds_words(r, res['asked_risk_bound'])} similar jobs {what}: {fix}"
    if res.get("censored") and not res.get("capped_by"):
        msg += (" (they stopped at the limit, so how much more they need is not known: the suggestion is "
                f"{res['suggested_text']}, 1.5 times what was asked)")
    return warning(code, "failure", r, msg, {
        "asked": res["asked"], "asked_text": res["asked_text"], f"p{round(level * 100)}": res["suggested_raw"],
        "suggested_text": res["suggested_text"], "capped_by": res.get("capped_by"), "similar_jobs": len(similar),
        f"similar_{state.lower()}": killed})


def recent_failures(similar: pd.DataFrame, history_end: pd.Timestamp, family: str) -> dict | None:
    if not len(similar):
        return None
    ended = similar[similar["end_time"].notna()]
    ended = ended[ended["end_time"] >= history_end - pd.Timedelta(days=RECENT_DAYS)]
    last = ended.sort_values("end_time").tail(RECENT_JOBS)
    state = last["state"].astype("string").fillna("")
    failed = last[state.isin(FAILED).to_numpy()]
    if len(failed) < MIN_FAILURES:
        return None
    by_state = failed["state"].astype("string").value_counts().to_dict()
    codes = pd.to_numeric(failed.loc[failed["state"] == "FAILED", "exit_code"], errors="coerce").dropna().astype(int)
    parts = [f"{n} {WHY[s]}" if s != "FAILED" else "" for s, n in by_state.items()]
    for c, n in codes.value_counts().items():
        parts.append(f"{n} exit code {c}" + (f" ({EXIT_MEANING[c]})" if c in EXIT_MEANING else ""))
    if "FAILED" in by_state and codes.empty:
        parts.append(f"{by_state['FAILED']} failed")
    newest = failed.sort_values("end_time").iloc[-1]
    code = pd.to_numeric(pd.Series([newest["exit_code"]]), errors="coerce").iloc[0]
    how = (f"exit code {int(code)}" if newest["state"] == "FAILED" and pd.notna(code) else WHY[str(newest["state"])])
    share = len(failed) / len(last)
    msg = (f"{len(failed)} of your last {len(last)} similar jobs ({family}) failed: "
           f"{', '.join(p for p in parts if p)}; the latest, job {newest['job_id']}, ended "
           f"{pd.Timestamp(newest['end_time']):%Y-%m-%d %H:%M} UTC ({how})")
    return warning("RECENT_FAILURES", "failure", share, msg, {
        "similar_jobs": len(last), "failed": len(failed), "by_state": {str(k): int(v) for k, v in by_state.items()},
        "exit_codes": {int(k): int(v) for k, v in codes.value_counts().items()},
        "latest_failure": {"job_id": str(newest["job_id"]), "state": str(newest["state"]),
                           "end_time": pd.Timestamp(newest["end_time"]).isoformat()},
        "window_days": RECENT_DAYS})


def serial_evidence(similar: pd.DataFrame, facts: LaunchFacts) -> tuple[bool, float | None, dict]:
    """(serial?, share of similar jobs that ran serial or None, evidence)."""
    if len(similar):
        el = _num(similar, "elapsed_s")
        cores = _num(similar, "cpu_used_s") / np.where(el > 0, el, np.nan)
        cav = similar["caveats"].astype("string").fillna("")
        unknown = (cav.str.contains("totalcpu_zero") | cav.str.contains("no_usage_fields")).to_numpy(dtype=bool)
        cores = cores[np.isfinite(cores) & ~unknown]
        if len(cores) >= MIN_SIMILAR:
            share = float((cores <= SERIAL_CORES).mean())
            return share >= 0.5, share, {"similar_jobs_with_cpu_figures": len(cores),
                                         "median_cores_busy": round(float(np.median(cores)), 2),
                                         "share_at_most_1.5_cores": round(share, 3)}
    return facts.serial, None, {"script_starts_one_process": facts.processes_one,
                                "thread_hint": facts.threads, "launcher": facts.launcher}


def gpu_idle(similar: pd.DataFrame, user_rows: pd.DataFrame) -> dict | None:
    for rows, which in ((similar, "similar"), (user_rows, "your")):
        if not len(rows):
            continue
        util = _num(rows, "gpu_util_mean")
        gpus = _num(rows, "alloc_gpus")
        util = util[(gpus > 0) & np.isfinite(util)]
        if len(util) < MIN_SIMILAR:
            continue
        share = float((util < IDLE_UTIL).mean())
        if share < 0.5:
            return None
        return warning("GPU_IDLE_HISTORY", "waste", share,
                       f"{round(share * 100)} % of {which} {len(util):,} past GPU jobs kept their GPUs under "
                       f"{round(IDLE_UTIL * 100)} % busy (mean {util.mean():.0%}): check that the program uses the GPU, "
                       "or run it on CPUs", {"gpu_jobs": len(util), "idle_share": round(share, 3),
                                            "mean_utilisation": round(float(util.mean()), 4), "from": which})
    return None


def preflight(req, facts: LaunchFacts, resources: dict, similar: pd.DataFrame, user_rows: pd.DataFrame, *,
              level: float, history_end: pd.Timestamp, family: str) -> list[dict]:
    """Every warning for one job: ``req`` its :class:`JobRequest`, ``resources`` the advice per target,
    ``similar`` the user's past jobs of the same family (else of the same request), ``user_rows`` all theirs."""
    out = []
    scheduler = req.scheduler if req.scheduler in TIME_OPTION else "slurm"
    script = scheduler != "kubernetes"  # a job script (sbatch, qsub, bsub), else a manifest's container
    if "memory" in resources:
        out.append(_kill_warning("OOM_RISK", resources["memory"], level,
                                 f"needed all of the {resources['memory']['asked_text']} asked",
                                 f"they are killed out of memory; raise {MEM_OPTION[scheduler]} "
                                 f"to {resources['memory']['suggested_text']}", similar, "OUT_OF_MEMORY"))
    if "walltime" in resources:
        w = resources["walltime"]
        out.append(_kill_warning("TIMEOUT_RISK", w, level, f"ran past {w['asked_words']}",
                                 f"raise {TIME_OPTION[scheduler]} to {w['suggested_text']} "
                                 "or checkpoint", similar, "TIMEOUT"))
    out.append(recent_failures(similar, history_end, family))
    if req.gpus >= 2 and facts.processes_one:
        out.append(warning("GPU_SINGLE_PROCESS", "waste", None,
                           f"{req.gpus} GPUs, but the {'script' if script else 'container'} starts one process (no srun, "
                           f"torchrun, mpirun or similar, nothing in the background): unless the program spreads "
                           f"itself over the GPUs, {req.gpus - 1} of them sit idle",
                           {"gpus": req.gpus, "commands_read": facts.commands}))
    if req.gpus > 0:
        out.append(gpu_idle(similar, user_rows))
    cpus = req.cpus or 0
    if req.exclusive or cpus >= MANY_CORES:
        serial, share, ev = serial_evidence(similar, facts)
        if serial:
            ev = {**ev, "cpus": req.cpus, "exclusive": req.exclusive}
            basis = (f"{round(share * 100)} % of your {ev['similar_jobs_with_cpu_figures']:,} similar jobs kept at most "
                     f"{SERIAL_CORES} cores busy" if share is not None else
                     "the script starts one process with no sign of threads")
            if req.exclusive:
                out.append(warning("EXCLUSIVE_SERIAL", "waste", share,
                                   f"{EXCLUSIVE_OPTION.get(scheduler, '--exclusive')} holds whole nodes for a serial "
                                   f"program ({basis}): drop it "
                                   "and ask for the cores it uses", ev))
            else:
                out.append(warning("MANY_CORES_SERIAL", "waste", share,
                                   f"{cpus} CPUs for a serial program ({basis}): "
                                   f"{cpus - 1} of them would sit idle", ev))
    if req.mem_all:
        node = f" ({readable_size(req.mem_bytes / max(req.nodes, 1))} a node here)" if req.mem_bytes else ""
        out.append(warning("MEM_ALL", "waste", None,
                           f"--mem=0 holds all the memory of every node{node}: no other job can share the node; "
                           "ask for what the job needs", {"line": req.lines.get("mem"), "nodes": req.nodes}))
    return [w for w in out if w is not None]


def blocking(warnings: list[dict], level: float, *, strict: bool = False) -> bool:
    """Whether a warning is at or above the chosen risk (any warning under ``strict``)."""
    return any(strict or (w["risk"] is not None and w["risk"] >= 1 - level - 1e-12) for w in warnings)
