"""Assemble the sacct dump: allocation lines and step lines in the order sacct prints them."""

from __future__ import annotations

import numpy as np

from .sacct_text import (
    fmt_duration,
    fmt_reqmem,
    fmt_time,
    fmt_totalcpu,
    int_str,
    join_lines,
    tres,
    usage_tres,
)

#: job state → (job ExitCode, batch/last-step state, batch/last-step ExitCode)
STATE_CODES = {
    "COMPLETED": ("0:0", "COMPLETED", "0:0"),
    "FAILED": (None, "FAILED", None),
    "TIMEOUT": ("0:0", "CANCELLED", "0:15"),
    "OUT_OF_MEMORY": ("0:125", "OUT_OF_MEMORY", "0:125"),
    "CANCELLED": ("0:0", "CANCELLED", "0:15"),
    "NODE_FAIL": ("0:0", "NODE_FAIL", "-2:0"),
    "PREEMPTED": ("0:0", "CANCELLED", "0:15"),
}
STEP_NAMES = np.array(["python", "mpirun_app", "pw.x", "gmx_mpi", "lmp", "Rscript", "julia", "a.out"], dtype=object)


def node_lists(n_rows: int, alloc_row: np.ndarray, alloc_node: np.ndarray, names: np.ndarray, compress) -> dict:
    """Per row: the compressed node list and the first node's name ('None assigned' when never started)."""
    out = np.full(n_rows, "None assigned", dtype=object)
    first = np.full(n_rows, "None assigned", dtype=object)
    if not len(alloc_row):
        return {"all": out, "first": first}
    order = np.lexsort((alloc_node, alloc_row))
    r, nd = alloc_row[order], alloc_node[order]
    heads = np.concatenate([[True], r[1:] != r[:-1]])
    counts = np.diff(np.concatenate([np.flatnonzero(heads), [len(r)]]))
    head_rows = r[heads]
    first[head_rows] = names[nd[heads]]
    out[head_rows] = names[nd[heads]]
    multi = np.flatnonzero(counts > 1)
    starts = np.flatnonzero(heads)
    for i in multi.tolist():
        s = starts[i]
        out[head_rows[i]] = compress(names[nd[s:s + counts[i]]].tolist())
    return {"all": out, "first": first}


def build_sacct_lines(ctx: dict) -> tuple[list, np.ndarray]:
    """All data lines in print order, and per line the kind ('job', 'batch', 'extern', 'step')."""
    j, st, ids = ctx["jobs"], ctx["steps"], ctx["ids"]
    n = j["n"]
    start = ctx["start"]
    started = start >= 0
    el = j["elapsed_s"]
    end = np.where(started, start + el, j["submit"] + j["cancel_wait_s"])
    cluster = ctx["cluster_name"]
    state = j["state"]
    cancel_by = np.where(state == "CANCELLED", "CANCELLED by " + j["cancel_uid"].astype(str).astype(object), state)
    job_exit = np.array([STATE_CODES[s][0] or "" for s in state.tolist()], dtype=object)
    job_exit = np.where(state == "FAILED", j["fail_code"], job_exit)
    step_state = np.array([STATE_CODES[s][1] for s in state.tolist()], dtype=object)
    step_exit = np.array([STATE_CODES[s][2] or "" for s in state.tolist()], dtype=object)
    step_exit = np.where(state == "FAILED", j["fail_code"], step_exit)
    cpus, nodes, gpus = j["alloc_cpus"], j["nodes"], j["gpus_pn"] * j["nodes"]
    mem_tot_mib = j["mem_pn_mib"] * nodes
    gtype = j["gpu_type"]
    reqmem = fmt_reqmem(j["mem_form"], j["mem_pn_mib"], j["cpus_pn"])
    req_tres = tres(cpus, mem_tot_mib, nodes, gpus, gtype, ~j["untyped"])
    alloc_tres = np.where(started, tres(cpus, mem_tot_mib, nodes, gpus, gtype, np.ones(n, bool)), "")
    nl = ctx["node_lists"]
    account = ctx["account_name"][j["account"]]
    user = ctx["user_name"][j["user"]]
    t_submit = fmt_time(j["submit"])
    t_start = np.where(started, fmt_time(np.maximum(start, 0)), "None")
    t_end = fmt_time(end)
    part = ctx["partition_name"][j["partition"]]

    blocks = []   # (sort key row, sort key order, lines)
    job_cols = {
        "JobID": ids["job_id"], "JobIDRaw": ids["job_id_raw"], "Cluster": cluster, "Partition": part,
        "QOS": j["qos"], "Account": account, "Group": account, "User": user, "Submit": t_submit,
        "Eligible": t_submit, "Start": t_start, "End": t_end, "Elapsed": fmt_duration(el),
        "Timelimit": fmt_duration(j["limit_s"]), "State": cancel_by, "ExitCode": job_exit,
        "NNodes": int_str(nodes), "NCPUS": int_str(cpus), "ReqCPUS": int_str(cpus), "ReqMem": reqmem, "ReqTRES": req_tres,
        "AllocTRES": alloc_tres, "TotalCPU": np.where(started, fmt_totalcpu(st["cpu_used_ms"]), "00:00:00"),
        "NodeList": nl["all"],
        "JobName": j["job_name"], "AdminComment": ctx["admin_comment"],
    }
    blocks.append((np.arange(n), np.zeros(n, np.int64), join_lines(job_cols, n), np.full(n, "job", dtype=object)))

    # .batch: first node, whole job span
    b = np.flatnonzero(st["has_batch"])
    bt = tres(j["cpus_pn"][b], j["mem_pn_mib"][b], np.ones(len(b), np.int64), j["gpus_pn"][b], gtype[b],
              np.ones(len(b), bool), billing=False)
    rss = st["batch_rss_kib"][b]
    bcols = {
        "JobID": ids["job_id"][b] + ".batch", "JobIDRaw": ids["job_id_raw"][b] + ".batch", "Cluster": cluster,
        "Account": account[b], "Submit": t_start[b], "Eligible": t_start[b], "Start": t_start[b], "End": t_end[b],
        "Elapsed": fmt_duration(el[b]), "State": step_state[b], "ExitCode": step_exit[b], "NNodes": "1",
        "NCPUS": int_str(j["cpus_pn"][b]), "ReqCPUS": int_str(j["cpus_pn"][b]), "ReqMem": reqmem[b], "AllocTRES": bt,
        "TotalCPU": fmt_totalcpu(st["batch_ms"][b]), "MaxRSS": int_str(rss) + "K", "AveRSS": int_str(rss) + "K",
        "NTasks": "1", "TRESUsageInTot": usage_tres(st["batch_ms"][b], rss, rss * 3, rss * 512),
        "NodeList": nl["first"][b], "JobName": "batch",
    }
    blocks.append((b, np.ones(len(b), np.int64), join_lines(bcols, len(b)), np.full(len(b), "batch", dtype=object)))

    # .extern: every node, whole job span
    x = np.flatnonzero(st["has_ext"])
    xr = st["ext_rss_kib"][x]
    xt = tres(cpus[x], mem_tot_mib[x], nodes[x], gpus[x], gtype[x], np.ones(len(x), bool))
    ext_state = np.where(state[x] == "NODE_FAIL", "NODE_FAIL", np.where(state[x] == "OUT_OF_MEMORY", "OUT_OF_MEMORY",
                                                                          "COMPLETED"))
    ext_exit = np.where(state[x] == "NODE_FAIL", "-2:0", "0:0")
    xcols = {
        "JobID": ids["job_id"][x] + ".extern", "JobIDRaw": ids["job_id_raw"][x] + ".extern", "Cluster": cluster,
        "Account": account[x], "Submit": t_start[x], "Eligible": t_start[x], "Start": t_start[x], "End": t_end[x],
        "Elapsed": fmt_duration(el[x]), "State": ext_state, "ExitCode": ext_exit, "NNodes": int_str(nodes[x]),
        "NCPUS": int_str(cpus[x]), "ReqCPUS": int_str(cpus[x]), "ReqMem": reqmem[x], "AllocTRES": xt,
        "TotalCPU": fmt_totalcpu(st["ext_ms"][x]), "MaxRSS": int_str(xr) + "K", "AveRSS": int_str(xr) + "K",
        "NTasks": int_str(nodes[x]), "TRESUsageInTot": usage_tres(st["ext_ms"][x], xr * nodes[x], xr * 4 * nodes[x],
                                                              np.zeros(len(x), np.int64)),
        "NodeList": nl["all"][x], "JobName": "extern",
    }
    blocks.append((x, np.full(len(x), 2, np.int64), join_lines(xcols, len(x)), np.full(len(x), "extern", dtype=object)))

    # srun steps .0 .1 …, one after another
    s = st["srun"]
    sj, sk = s["job"], s["k"]
    if len(sj):
        sname = "." + sk.astype(str).astype(object)
        last = s["last"]
        s_state = np.where(last, step_state[sj], "COMPLETED")
        s_exit = np.where(last, step_exit[sj], "0:0")
        s_state = np.where(last & (state[sj] == "TIMEOUT"), "CANCELLED", s_state)
        tstart, tend = fmt_time(s["start"]), fmt_time(s["end"])
        stt = tres(s["cpus"], mem_tot_mib[sj], s["nodes"], gpus[sj], gtype[sj], np.ones(len(sj), bool), billing=False)
        scols = {
            "JobID": ids["job_id"][sj] + sname, "JobIDRaw": ids["job_id_raw"][sj] + sname, "Cluster": cluster,
            "Account": account[sj], "Submit": tstart, "Eligible": tstart, "Start": tstart, "End": tend,
            "Elapsed": fmt_duration(s["end"] - s["start"]), "State": s_state, "ExitCode": s_exit,
            "NNodes": int_str(s["nodes"]), "NCPUS": int_str(s["cpus"]), "ReqCPUS": int_str(s["cpus"]), "ReqMem": reqmem[sj],
            "AllocTRES": stt, "TotalCPU": fmt_totalcpu(s["ms"]), "MaxRSS": int_str(s["max_kib"]) + "K",
            "AveRSS": int_str(s["ave_kib"]) + "K", "NTasks": int_str(s["tasks"]),
            "TRESUsageInTot": usage_tres(s["ms"], s["total_kib"], s["total_kib"] * 2, s["total_kib"] * 300),
            "NodeList": nl["all"][sj], "JobName": STEP_NAMES[j["sub"][sj] % len(STEP_NAMES)],
        }
        blocks.append((sj, 3 + sk, join_lines(scols, len(sj)), np.full(len(sj), "step", dtype=object)))

    rows = np.concatenate([b_[0] for b_ in blocks])
    order_k = np.concatenate([b_[1] for b_ in blocks])
    lines = np.concatenate([b_[2] for b_ in blocks])
    kinds = np.concatenate([b_[3] for b_ in blocks])
    order = np.lexsort((order_k, rows))
    return lines[order].tolist(), kinds[order]


