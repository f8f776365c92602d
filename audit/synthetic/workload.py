"""Workload sampling: users with habits, submissions, sizes, requests, run times, states and planted use.

Everything is drawn with numpy from one Generator, column by column; the result is one row per job
allocation (array task or heterogeneous-job component) in a plain dict of arrays (see :data:`COLUMNS`).
"""

from __future__ import annotations

import numpy as np

from ..cluster_shape import KINDS
from .arrivals import submit_offsets
from .cluster import Cluster

MIB = 2**20
GIB = 2**30
STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED")
FORMS = ("per_cpu", "per_node", "total")
GPU_CLASSES = ("idle", "bursty", "busy")
NAME_FAMILIES = {
    "cpu": ("relax", "md_prod", "scf", "postproc", "mesh", "assembly", "blast", "cfd_run", "mcmc", "r_sim"),
    "bigmem": ("assembly", "bigmatrix", "genome_idx", "graph_part"),
    "gpu": ("train", "finetune", "infer", "jupyter", "cryoem", "alphafold", "md_gpu", "sweep"),
    "debug": ("test", "debug", "interactive", "build"),
}


def pick(rng: np.random.Generator, values, weights, n: int) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    return np.asarray(values)[rng.choice(len(w), size=n, p=w / w.sum())]


def ladder_ceil(x: np.ndarray, ladder) -> np.ndarray:
    """Smallest ladder value >= x (the largest when x exceeds it)."""
    lad = np.asarray(ladder)
    return lad[np.minimum(np.searchsorted(lad, x, side="left"), len(lad) - 1)]


def population(rng: np.random.Generator, n_jobs: int, days: float, prof: dict) -> dict:
    """Users, their accounts and activity weights (users scale with the monthly job rate)."""
    pop = prof["population"]
    per_month = n_jobs * 30.0 / max(days, 1e-9)
    n_users = max(int(pop["min_users"]), int(round(per_month / pop["jobs_per_user_month"])))
    n_accounts = max(2, int(np.ceil(n_users / pop["users_per_account"])))
    activity = 1.0 / np.arange(1, n_users + 1) ** pop["activity_zipf"]
    activity = activity[rng.permutation(n_users)]
    account = np.concatenate([np.arange(n_accounts), rng.integers(0, n_accounts, n_users - n_accounts)]) \
        if n_users >= n_accounts else np.arange(n_users)
    depts = ("phys", "chem", "bio", "eng", "cs", "geo", "math", "med")
    acct_names = np.array([f"{depts[i % len(depts)]}-{chr(97 + (i // len(depts)) % 26)}{i // 208 or ''}"
                           for i in range(n_accounts)], dtype=object)
    return {
        "n_users": n_users,
        "user_name": np.array([f"u{i + 1:04d}" for i in range(n_users)], dtype=object),
        "uid": 20000 + np.arange(n_users),
        "user_account": account,
        "account_name": acct_names,
        "activity": activity / activity.sum(),
    }


def submissions(rng: np.random.Generator, n_jobs: int, prof: dict) -> dict:
    """Submission units (single, array, het) whose rows add up to exactly ``n_jobs``."""
    arr = prof["arrivals"]
    n_sub = n_jobs
    kind = rng.choice(3, size=n_sub, p=[1 - arr["array_share"] - arr["het_share"], arr["array_share"],
                                         arr["het_share"]])
    rows = np.ones(n_sub, dtype=np.int64)
    is_arr = kind == 1
    p = 1.0 / max(arr["array_tasks_mean"], 1.0)
    rows[is_arr] = np.minimum(rng.geometric(p, is_arr.sum()) + 1, arr["array_tasks_max"])
    rows[kind == 2] = 2
    cum = np.cumsum(rows)
    m = int(np.searchsorted(cum, n_jobs, side="left")) + 1
    kind, rows = kind[:m], rows[:m]
    excess = int(cum[m - 1] - n_jobs)
    if excess:
        if kind[-1] == 2:  # a het job cannot be cut: make the last unit a single job
            kind[-1], rows[-1] = 0, 1
        else:
            rows[-1] -= excess
            if rows[-1] == 1:
                kind[-1] = 0
    return {"sub_type": kind, "sub_rows": rows}


def partition_caps(cluster: Cluster) -> dict:
    """Per-partition smallest node shape (requests are capped to fit every node of the partition)."""
    n = len(cluster.partitions)
    caps = {k: np.zeros(n, dtype=np.int64) for k in ("cpus", "mem_mib", "gpus", "nodes", "max_time")}
    for i, p in enumerate(cluster.partitions):
        on = cluster.node_partition == i
        caps["cpus"][i] = cluster.node_cpus[on].min()
        caps["mem_mib"][i] = cluster.node_mem_mib[on].min()
        caps["gpus"][i] = cluster.node_gpus[on].min()
        caps["nodes"][i] = on.sum()
        caps["max_time"][i] = p.max_time_s
    return caps


def sample_jobs(rng: np.random.Generator, n_jobs: int, span_s: float, cluster: Cluster, prof: dict,
                weekday0: int, rng_spread: np.random.Generator | None = None) -> dict:
    """One row per job allocation with requests, intended run times and planted use (before placement).

    ``rng_spread`` (its own stream) draws the per-job spread of use around the habit (``[habit_spread]``);
    with every spread 0 it is never used and the jobs are exactly those of the habit alone.
    """
    pop = population(rng, n_jobs, span_s / 86400.0, prof)
    sub = submissions(rng, n_jobs, prof)
    n_sub = len(sub["sub_type"])
    arr = prof["arrivals"]
    sub_t = submit_offsets(rng, n_sub, span_s, weekday0=weekday0, peak_hour=arr["diurnal_peak_hour"],
                           peak_to_trough=arr["diurnal_peak_to_trough"], weekend_factor=arr["weekend_factor"])
    sub_user = rng.choice(pop["n_users"], size=n_sub, p=pop["activity"])
    # partition kind per submission; het jobs are CPU jobs, arrays are never debug jobs
    avail = [k for k in KINDS if cluster.partitions_of_kind(k)]
    shares = np.array([prof["kinds"].get(k, 0.0) for k in avail], dtype=float)
    sub_kind = rng.choice(len(avail), size=n_sub, p=shares / shares.sum())
    kind_ix = {k: i for i, k in enumerate(avail)}
    fallback = kind_ix.get("cpu", 0)
    sub_kind[sub["sub_type"] == 2] = fallback
    if "debug" in kind_ix:
        sub_kind[(sub["sub_type"] == 1) & (sub_kind == kind_ix["debug"])] = fallback
    # partition within the kind, weighted by capacity (GPUs for GPU partitions, cores otherwise); a user
    # following the habit goes back to the same partition of that kind
    sub_habit = rng.random(n_sub) < prof["population"]["habit_repeat"]
    sub_part = np.zeros(n_sub, dtype=np.int64)
    for k, ki in kind_ix.items():
        parts = np.asarray(cluster.partitions_of_kind(k))
        cap = np.array([cluster.capacity(p)[1 if k == "gpu" else 0] for p in parts], dtype=float)
        usual = parts[rng.choice(len(parts), size=pop["n_users"], p=cap / cap.sum())]
        fresh = parts[rng.choice(len(parts), size=n_sub, p=cap / cap.sum())]
        on = sub_kind == ki
        sub_part[on] = np.where(sub_habit, usual[sub_user], fresh)[on]

    # expand submissions to rows
    rows = sub["sub_rows"]
    sid = np.repeat(np.arange(n_sub), rows)
    n = len(sid)
    first = np.concatenate([[0], np.cumsum(rows)[:-1]])
    within = np.arange(n) - np.repeat(first, rows)
    sub_type = sub["sub_type"][sid]
    kinds = np.array(avail, dtype=object)[sub_kind[sid]]
    part = sub_part[sid]
    user = sub_user[sid]
    caps = partition_caps(cluster)
    jobs = {
        "sub": sid, "sub_type": sub_type, "task": within, "submit": sub_t[sid], "user": user,
        "account": pop["user_account"][user], "kind": kinds, "partition": part, "habit": sub_habit[sid],
    }
    habits = _Habits(rng, jobs, sid, n_sub, pop["n_users"], jobs["habit"])
    _sizes(habits, jobs, caps, prof)
    _limits_and_runtimes(rng, jobs, sid, n_sub, caps, prof, pop["n_users"])
    _states(rng, jobs, prof)
    _use(rng, jobs, prof, habits)
    spread = habit_spread(rng_spread, jobs, prof)
    if spread["forced_oom"].any() or spread["forced_timeout"].any():
        # fates drawn again so that the jobs that cannot fit their request take their share of OOM/TIMEOUT
        _states(rng_spread, jobs, prof, forced=spread)
    _names_and_qos(rng, jobs, pop)
    jobs["n"] = n
    return {"jobs": jobs, "pop": pop, "spread": spread}


class _Habits:
    """Draws that repeat per user and partition kind: a job takes its user's habitual value when it follows
    the habit (probability ``population.habit_repeat``, decided once per submission), else a fresh draw."""

    def __init__(self, rng: np.random.Generator, jobs: dict, sid: np.ndarray, n_sub: int, n_users: int,
                 habit: np.ndarray):
        self.rng, self.sid, self.n_sub, self.habit = rng, sid, n_sub, habit
        kind_ix = np.array([KINDS.index(k) for k in jobs["kind"]], dtype=np.int64)
        self.key = jobs["user"] * len(KINDS) + kind_ix
        self.n_keys = n_users * len(KINDS)

    def draw(self, values, weights) -> np.ndarray:
        usual = pick(self.rng, values, weights, self.n_keys)[self.key]
        fresh = pick(self.rng, values, weights, self.n_sub)[self.sid]
        return np.where(self.habit, usual, fresh)

    def chance(self, p: float) -> np.ndarray:
        return self.draw([True, False], [p, 1.0 - p]).astype(bool)

    def sample(self, fn) -> np.ndarray:
        """``fn(size)`` draws values; the user's usual one or a fresh one per submission."""
        return np.where(self.habit, fn(self.n_keys)[self.key], fn(self.n_sub)[self.sid])


def _sizes(h: _Habits, jobs, caps, prof) -> None:
    n = len(jobs["sub"])
    kind, part = jobs["kind"], jobs["partition"]
    node_cpus, node_mem, node_gpus = caps["cpus"][part], caps["mem_mib"][part], caps["gpus"][part]
    nodes = np.ones(n, dtype=np.int64)
    cpus_pn = np.ones(n, dtype=np.int64)
    gpus_pn = np.zeros(n, dtype=np.int64)
    mem_pn = np.zeros(n, dtype=np.int64)  # MiB per node
    form = h.draw(FORMS, [prof["memory"]["form_weights"][f] for f in FORMS]).astype(object)
    exclusive = np.zeros(n, dtype=bool)
    mpi = np.zeros(n, dtype=bool)
    mib_core = h.draw(prof["memory"]["mib_per_core"], prof["memory"]["mib_per_core_weights"])

    c = kind == "cpu"
    cpu = prof["cpu"]
    cores = h.draw(cpu["cores"], cpu["cores_weights"])
    is_mpi = c & h.chance(cpu["mpi_share"]) & (jobs["sub_type"] == 0)
    mpi_nodes = h.draw(cpu["mpi_nodes"], cpu["mpi_nodes_weights"])
    cpus_pn[c] = cores[c]
    mpi[is_mpi] = True
    wide = np.maximum(caps["nodes"] // 4, 1)  # no job spans more than a quarter of its partition
    nodes[is_mpi] = np.minimum(mpi_nodes[is_mpi], np.minimum(wide, caps["nodes"])[part[is_mpi]])
    cpus_pn[is_mpi] = node_cpus[is_mpi]
    exclusive[is_mpi] = True
    form[is_mpi & (form == "total")] = "per_cpu"

    d = kind == "debug"
    dcores = h.draw(prof["debug"]["cores"], prof["debug"]["cores_weights"])
    cpus_pn[d] = dcores[d]

    b = kind == "bigmem"
    bm = prof["bigmem"]
    bcores = h.draw(bm["cores"], bm["cores_weights"])
    bmem = h.draw(bm["mem_gib"], bm["mem_gib_weights"]) * 1024
    cpus_pn[b] = bcores[b]
    form[b & (form == "per_cpu")] = "per_node"

    g = kind == "gpu"
    gp = prof["gpu"]
    gpus = h.draw(gp["gpus"], gp["gpus_weights"])
    multi = g & h.chance(gp["multinode_share"]) & (jobs["sub_type"] == 0)
    mnodes = h.draw(gp["multinode_nodes"], gp["multinode_nodes_weights"])
    cpg = h.draw(gp["cpus_per_gpu"], gp["cpus_per_gpu_weights"])
    mpg = h.draw(gp["mem_gib_per_gpu"], gp["mem_gib_per_gpu_weights"]) * 1024
    gpus_pn[g] = np.minimum(gpus[g], node_gpus[g])
    gpus_pn[multi] = node_gpus[multi]
    nodes[multi] = np.minimum(mnodes[multi], np.minimum(wide, caps["nodes"])[part[multi]])
    cpus_pn[g] = gpus_pn[g] * cpg[g]
    form[g & (form == "per_cpu")] = "total"
    form[multi] = "per_node"
    mpi[multi] = True

    # het components: component 0 is a small controller, component 1 the worker
    het0 = (jobs["sub_type"] == 2) & (jobs["task"] == 0)
    cpus_pn[het0] = np.minimum(cpus_pn[het0], 4)
    form[(jobs["sub_type"] == 2)] = "per_cpu"

    cpus_pn = np.minimum(np.maximum(cpus_pn, 1), node_cpus)
    # memory per node, in MiB, by habit form
    gib_ladder = np.asarray(prof["memory"]["gib_ladder"]) * 1024
    need = mib_core * cpus_pn
    mem_pn[:] = need
    tot = form == "total"
    mem_pn[tot] = ladder_ceil(need[tot], gib_ladder)
    pn = form == "per_node"
    mem_pn[pn] = ladder_ceil(need[pn], gib_ladder) // 1024 * 1000  # --mem=16000 style (MB as written)
    mem_pn[b] = np.where(form[b] == "per_node", bmem[b] // 1024 * 1000, bmem[b])
    mem_pn[g] = np.where(form[g] == "per_node", mpg[g] * gpus_pn[g] // 1024 * 1000, mpg[g] * gpus_pn[g])
    # never more than the node holds: fall back to a per-CPU request that fits
    over = mem_pn > node_mem
    per_core_fit = np.maximum(node_mem // np.maximum(cpus_pn, 1) // 1000 * 1000, 1000)
    mem_pn[over] = np.minimum(per_core_fit[over], 8000) * cpus_pn[over]
    form[over] = "per_cpu"
    still = mem_pn > node_mem
    mem_pn[still] = node_mem[still]
    form[still] = "per_node"
    # per-cpu requests must be an exact multiple of the CPUs
    pc = form == "per_cpu"
    mem_pn[pc] = mem_pn[pc] // cpus_pn[pc] * cpus_pn[pc]
    jobs.update(nodes=nodes, cpus_pn=cpus_pn, gpus_pn=gpus_pn, mem_pn_mib=mem_pn, mem_form=form,
                exclusive=exclusive, mpi=mpi)


def _limits_and_runtimes(rng, jobs, sid, n_sub, caps, prof, n_users) -> None:
    """Intended run times (user habit x job spread), round-value limits and the over-request ratio.

    Run times are scaled later (:func:`apply_load_scale`) so the offered load meets the target.
    """
    n = len(sid)
    rt = prof["runtime"]
    user_mu = rt["user_log_mean_s"] + rt["user_log_sd"] * rng.standard_normal((n_users, len(KINDS)))
    kind_ix = np.array([KINDS.index(k) for k in jobs["kind"]], dtype=np.int64)
    mu = user_mu[jobs["user"], kind_ix]
    z_sub = rng.standard_normal(n_sub)[sid]
    fresh = np.where(jobs["habit"], 0.0, rt["job_log_sd"] * z_sub)
    wt = prof["walltime"]
    q = np.exp(np.log(wt["overrequest_median"]) + wt["overrequest_log_sd"] * rng.standard_normal(n))
    jobs["intent_log"] = mu + fresh          # log of the user's intended limit-setting run time
    jobs["overrequest"] = np.maximum(q, 1.0)
    jobs["max_time"] = caps["max_time"][jobs["partition"]]
    jobs["debug_cap"] = np.where(jobs["kind"] == "debug", prof["debug"]["max_limit_s"], np.iinfo(np.int64).max)
    jobs["frac"] = rng.random(n)             # where in its run an early-ending job stops
    jobs["timeout_extra"] = rng.integers(0, 60, n)


def apply_scale(jobs: dict, scale: np.ndarray, prof: dict) -> None:
    """Limits on the round-value ladder from the scaled intended run time; run time = limit / over-request."""
    wt = prof["walltime"]
    intent = np.exp(jobs["intent_log"]) * scale * wt["overrequest_median"]
    cap = np.minimum(jobs["max_time"], jobs["debug_cap"])
    limit = np.minimum(ladder_ceil(intent, wt["ladder_s"]), cap)
    jobs["limit_s"] = limit.astype(np.int64)
    jobs["planned_s"] = np.maximum(np.round(limit / jobs["overrequest"]), 5).astype(np.int64)
    st = jobs["state"]
    el = jobs["planned_s"].copy()
    early = np.isin(st, ["FAILED", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "CANCELLED"])
    el[early] = np.maximum(np.round(jobs["planned_s"][early] * jobs["frac"][early]), 3)
    to = st == "TIMEOUT"
    el[to] = limit[to] + jobs["timeout_extra"][to]
    el[jobs["pending_cancel"]] = 0
    het1 = np.flatnonzero((jobs["sub_type"] == 2) & (jobs["task"] == 1))
    el[het1] = el[het1 - 1]
    jobs["elapsed_s"] = el.astype(np.int64)


def _states(rng, jobs, prof, forced: dict | None = None) -> None:
    """Terminal states from the profile's shares.

    ``forced`` (from :func:`habit_spread`) names the jobs whose drawn use cannot fit their request: memory
    peak above the allocation (``forced_oom``) or run time beyond the limit (``forced_timeout``).  They end
    OUT_OF_MEMORY / TIMEOUT, and the other jobs draw those two states only for what is left of their
    shares, so that each state keeps its profile share overall (unless the forced jobs alone exceed it).
    """
    n = len(jobs["sub"])
    st = prof["states"]
    names = [s for s in STATES if s != "PREEMPTED"]
    w = np.array([st[s] for s in names])
    free = np.ones(n, dtype=bool)
    if forced is not None:
        oom, tout = forced["forced_oom"], forced["forced_timeout"] & ~forced["forced_oom"]
        free = ~(oom | tout)
        w = w.copy()
        w[names.index("OUT_OF_MEMORY")] = max(st["OUT_OF_MEMORY"] - oom.sum() / max(n, 1), 0.0)
        w[names.index("TIMEOUT")] = max(st["TIMEOUT"] - tout.sum() / max(n, 1), 0.0)
    state = np.array(names, dtype=object)[rng.choice(len(names), size=n, p=w / w.sum())]
    if forced is not None:
        state[oom] = "OUT_OF_MEMORY"
        state[tout] = "TIMEOUT"
    pre = (jobs["kind"] == "gpu") & (rng.random(n) < prof["gpu"]["preemptible_share"])
    p_pre = min(1.0, st["PREEMPTED"] * n / max((pre & free).sum(), 1))
    state[pre & free & (rng.random(n) < p_pre)] = "PREEMPTED"
    # het components share one fate
    het1 = (jobs["sub_type"] == 2) & (jobs["task"] == 1)
    state[het1] = state[np.flatnonzero(het1) - 1]
    jobs["state"] = state
    jobs["preemptible"] = pre
    pend = (state == "CANCELLED") & (rng.random(n) < st["cancelled_pending_share"]) & (jobs["sub_type"] != 2)
    jobs["pending_cancel"] = pend
    jobs["cancel_wait_s"] = rng.integers(120, max(int(st["cancel_wait_max_s"]), 121), n)
    jobs["fail_code"] = pick(rng, np.array(st["failed_exit_codes"], dtype=object), st["failed_exit_codes_weights"], n)


def _use(rng, jobs, prof, h: _Habits) -> None:
    """Planted use: CPU efficiency, memory peak share, GPU behaviour class and its parameters.

    Users have habits here too: a submission that follows its user's habit also behaves like the user's
    usual job (single-threaded or not, efficiency, memory over-request, GPU class and memory share), so
    the waste concentrates on identifiable users as it does on real clusters.  These are the habit's values;
    :func:`habit_spread` then spreads each job's efficiency and memory peak around them.
    """
    n = len(jobs["sub"])
    ce = prof["cpu_efficiency"]
    cpus = jobs["cpus_pn"] * jobs["nodes"]
    single = h.chance(ce["single_thread_share"])
    eff = h.sample(lambda size: rng.beta(ce["beta_a"], ce["beta_b"], size))
    eff[single] = rng.uniform(0.85, 1.0, single.sum()) / cpus[single]
    jobs["single_thread"] = single
    jobs["cpu_eff_habit"] = eff           # before the MPI floor: habit_spread spreads it and applies the floor
    eff = eff.copy()
    eff[jobs["mpi"] & ~single] = np.maximum(eff[jobs["mpi"] & ~single], 0.5)
    jobs["cpu_eff"] = np.clip(eff, 0.001, 0.98)
    mem = prof["memory"]
    ratio = np.exp(np.log(mem["overrequest_median"]) + mem["overrequest_log_sd"] * h.sample(rng.standard_normal))
    jobs["mem_ratio"] = np.maximum(ratio, 1.05)
    jobs["batch_rss_kib"] = mem["batch_rss_mib"] * 1024 + rng.integers(0, 2048, n)
    jobs["extern_rss_kib"] = rng.integers(mem["extern_rss_kib"] // 2, mem["extern_rss_kib"] + 100, n)
    stp = prof["steps"]
    srun = pick(rng, stp["srun_steps"], stp["srun_steps_weights"], n)
    srun[jobs["mpi"]] = np.maximum(srun[jobs["mpi"]], 1)
    srun[jobs["sub_type"] == 2] = 1
    jobs["srun_steps"] = srun.astype(np.int64)
    zero_cpu = jobs["mpi"] & (jobs["kind"] == "cpu") & (rng.random(n) < prof["cpu"]["totalcpu_zero_share_of_mpi"])
    jobstats = rng.random(n) < prof["jobstats"]["share"]
    jobs["jobstats"] = jobstats & ~zero_cpu
    jobs["totalcpu_zero"] = zero_cpu
    gu = prof["gpu_util"]
    cw = np.array([gu["class_weights"][c] for c in GPU_CLASSES])
    cls = h.draw([0, 1, 2], cw).astype(np.int64)
    zero = np.where(cls == 1, np.clip(gu["bursty_zero_share"] + gu["bursty_zero_share_sd"] * rng.standard_normal(n),
                                      0.0, 1.0), gu["busy_zero_share"])
    zero[cls == 0] = 1.0
    level = np.where(cls == 1, np.exp(gu["bursty_log_mean"] + gu["bursty_log_sd"] * rng.standard_normal(n)),
                     100.0 * rng.beta(gu["busy_level_a"], gu["busy_level_b"], n))
    jobs["gpu_class"] = cls
    jobs["gpu_zero_share"] = zero
    jobs["gpu_level"] = np.clip(level, 1.0, 100.0)
    gm = prof["gpu_memory"]
    share = np.exp(gm["peak_share_log_mean"] + gm["peak_share_log_sd"] * h.sample(rng.standard_normal))
    jobs["gpu_mem_share"] = np.clip(share, 0.02, 0.98)
    jobs["gpu_mean_to_peak"] = np.clip(gm["mean_to_peak"] + gm["mean_to_peak_sd"] * rng.standard_normal(n), 0.2, 0.95)
    jobs["gpu_series_seed"] = rng.integers(0, 2**62, n)


def habit_spread(rng: np.random.Generator | None, jobs: dict, prof: dict) -> dict:
    """The per-job spread of use around the habit (``[habit_spread]``), and the jobs it cannot fit.

    A habitual submission repeats its user's request exactly; its use is the habit's value times a per-job
    factor: memory peak / ``exp(memory_log_sd x z)`` of the over-request ratio, run time x
    ``exp(run_log_sd x z)``, CPU efficiency ``logit(eff) + cpu_efficiency_logit_sd x z`` (multi-threaded
    jobs; single-threaded ones already vary per job), each z standard normal per job from ``rng``.  Fresh
    submissions get the same spread around their own draw (an array's tasks differ as a habit's jobs do).
    With a memory spread, a habit's request / typical peak is at least ``exp(memory_margin_sd x
    memory_log_sd)`` (and 1.05 as without spread).  Returns the jobs whose drawn peak passes their
    allocation (``forced_oom``) and whose drawn run passes their limit (``forced_timeout``); every spread 0
    changes nothing and draws nothing.
    """
    n = len(jobs["sub"])
    hs = prof["habit_spread"]
    s_mem, s_run, s_cpu = (float(hs[k]) for k in ("memory_log_sd", "run_log_sd", "cpu_efficiency_logit_sd"))
    none = np.zeros(n, dtype=bool)
    out = {"forced_oom": none, "forced_timeout": none.copy()}
    if s_mem == 0 and s_run == 0 and s_cpu == 0:
        return out
    if rng is None:
        raise ValueError("habit_spread needs its own random stream when a spread is not 0")
    z_mem, z_run, z_cpu = rng.standard_normal((3, n))   # always all three: one setting never moves another's draws
    if s_mem > 0:
        floor = max(1.05, float(np.exp(hs["memory_margin_sd"] * s_mem)))
        ratio = np.maximum(jobs["mem_ratio"], floor) * np.exp(-s_mem * z_mem)
        jobs["mem_ratio"] = ratio
        # the job's recorded peak is at most extern + batch shell + working set (steps.build_steps)
        alloc_kib = jobs["mem_pn_mib"] * jobs["nodes"] * 1024
        work_kib = np.maximum(np.floor(alloc_kib / ratio), 1024)
        peak_kib = work_kib + jobs["extern_rss_kib"] * jobs["nodes"] + jobs["batch_rss_kib"] * (jobs["srun_steps"] > 0)
        out["forced_oom"] = peak_kib > alloc_kib
    if s_run > 0:
        factor = np.exp(s_run * z_run)
        over = factor > jobs["overrequest"]          # limit / run below 1: the run passes its limit
        jobs["overrequest"] = np.where(over, 1.0, jobs["overrequest"] / factor)
        out["forced_timeout"] = over
    if s_cpu > 0:
        multi = ~jobs["single_thread"]
        base = np.clip(jobs["cpu_eff_habit"], 1e-6, 1.0 - 1e-6)
        spread = 1.0 / (1.0 + np.exp(-(np.log(base / (1.0 - base)) + s_cpu * z_cpu)))
        eff = np.where(multi, spread, jobs["cpu_eff_habit"])
        mpi = jobs["mpi"] & multi
        eff[mpi] = np.maximum(eff[mpi], 0.5)
        jobs["cpu_eff"] = np.clip(eff, 0.001, 0.98)
    # a heterogeneous job's components share one fate
    het0 = np.flatnonzero((jobs["sub_type"] == 2) & (jobs["task"] == 0))
    for key in ("forced_oom", "forced_timeout"):
        f = out[key]
        both = f[het0] | f[het0 + 1]
        f[het0], f[het0 + 1] = both, both
    return out


def _names_and_qos(rng, jobs, pop) -> None:
    n = len(jobs["sub"])
    names = np.empty(n, dtype=object)
    for k, fams in NAME_FAMILIES.items():
        on = jobs["kind"] == k
        if on.any():
            # a user's jobs of one kind mostly share a family (habit): family from a hash of the user
            fam = (jobs["user"][on] * 7 + rng.integers(0, 2, on.sum()) * (rng.random(on.sum()) < 0.3)) % len(fams)
            names[on] = np.array(fams, dtype=object)[fam]
    suffix = np.char.mod("%d", jobs["sub"] % 50).astype(object)
    jobs["job_name"] = names + "_" + suffix
    qos = np.full(n, "normal", dtype=object)
    qos[jobs["kind"] == "debug"] = "debug"
    qos[jobs["preemptible"]] = "preempt"
    qos[(jobs["kind"] == "bigmem")] = "long"
    jobs["qos"] = qos
