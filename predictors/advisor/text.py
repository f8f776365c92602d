"""The advice as a person reads it: one table, the lines to paste, the risk in words, warnings, and what the
prediction rests on, every figure in the units of the script's scheduler (Slurm, PBS, LSF, Kubernetes).  A pure
function of the dict :func:`predictors.advisor.advise` returns."""

from __future__ import annotations

from .sched_units import odds_words

ORDER = ("walltime", "memory", "cpus", "gpus", "gpu_memory")
LABELS = {"walltime": "time", "memory": "memory", "cpus": "CPUs", "gpus": "GPUs", "gpu_memory": "GPU memory"}


def _header(a: dict) -> str:
    i = a["input"]
    r = i["request"]
    who = f"{i['family']} jobs of {i['user']}" if i["user"] else f"{i['family']} jobs (no user: cold start)"
    src = {"option": " (--user)", "environment": " ($USER)", "manifest": " (from the manifest)"}.get(i["user_from"], "")
    parts = [f"{r['ntasks']} task{'s' if r['ntasks'] != 1 else ''}" + (f" on {r['nodes']} nodes" if r["nodes"] > 1
                                                                       else ""),
             (f"{r['cpus']} CPU" + ("s" if r["cpus"] != 1 else "")) if r["cpus"] else "CPUs unknown"]
    if r["gpus"]:
        parts.append(f"{r['gpus']} GPUs" + (f" ({r['gpu_type']})" if r["gpu_type"] else ""))
    if i["array_tasks"] > 1:
        parts.append(f"× {i['array_tasks']} tasks ({r['array_spec']})")
    word = "queue" if i["scheduler"] in ("pbs", "lsf") else "partition"
    where = f", {word} {i['partition']}" if i["partition"] else ""
    name = f"{i['file']}: " if i["file"] else ""
    return f"{name}{who}{src}{where}; {', '.join(parts)}"


def _table(a: dict) -> list[str]:
    rows = [("", "asked", "p50", "p90", "p99", "suggested", "risk of what was asked")]
    for t in ORDER:
        r = a["resources"].get(t)
        if r is None:
            continue
        risk = "—" if r["asked_risk"] is None else odds_words(r["asked_risk"], r["asked_risk_bound"]).removesuffix(" of")
        rows.append((LABELS[t], r["asked_text"] or "not set", r["p50_text"], r["p90_text"], r["p99_text"],
                     r["suggested_text"] or "—", risk))
    widths = [max(len(row[k]) for row in rows) for k in range(7)]
    out = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [row[k].rjust(widths[k]) for k in range(1, 6)] + [row[6]]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def advice_text(a: dict) -> str:
    """Every part of the advice, in the units of the scheduler."""
    lines = [_header(a), ""]
    lines += _table(a)
    level = a["level"]
    lines.append(f"  (p50/p90/p99: calibrated quantiles of the need; suggested: the p{round(level * 100)} rounded up)")
    for t in ORDER:
        r = a["resources"].get(t)
        if r is not None and r.get("capped_by"):
            lines.append(f"  {LABELS[t]} suggested: capped, as {r['capped_by'].split(', so')[0]}")
        elif r is not None and r.get("censored"):
            lines.append(f"  {LABELS[t]} suggested: 1.5 times what was asked, as similar jobs stopped at their limit")
    for t, why in a["not_predicted"].items():
        lines.append(f"  no prediction for {LABELS[t]}: {why}")
    if a["changes"]:
        script = a["input"]["scheduler"] != "kubernetes"
        lines += ["", "Lines to paste" + (" (each replaces the line named)" if script
                                          else f" (container {a['input']['container']})") + ":"]
        width = max(len(c["paste"]) for c in a["changes"])
        for c in a["changes"]:
            where = f"line {c['line']}" if c["line"] else ("command line" if c["option"] in
                                                           a["input"]["request"]["lines"] else "add")
            also = f"; {c['also']}" if c.get("also") else ""
            lines.append(f"  {c['paste'].ljust(width)}  {where:<12} {c['frees']['text']}{also}")
    else:
        lines += ["", "Nothing to change: the request fits what similar jobs needed."]
    risks = [(t, a["resources"][t]["asked_risk_words"]) for t in ORDER
             if t in a["resources"] and a["resources"][t]["asked_risk_words"]]
    if risks:
        lines += ["", "Risk of what was asked:"] + [f"  {LABELS[t]}: {w}" for t, w in risks]
    if a["warnings"]:
        lines += ["", "Warnings:"]
        for w in a["warnings"]:
            mark = " (stops a submit wrapper: exit 3)" if w["blocking"] else ""
            lines.append(f"  {w['code']}{mark}: {w['message']}")
    ev = a["evidence"]
    m = ev["model"]
    more = []
    if ev["basis"] == "user_family":
        more = [f"{ev['user_jobs']:,} of their jobs", f"{ev['family_jobs']:,} {ev['family']} jobs of all users"]
    lines += ["", f"Rests on: {ev['basis_words']}" + (f" ({', '.join(more)})" if more else "") + "."]
    if ev["too_few"]:
        lines.append("  Too few similar jobs: treat the figures as the cluster's general picture, not this job's.")
    per = "; ".join(f"{LABELS[t]} trained on {r['trained_on']:,}, calibrated on {r['calibrated_on']:,}"
                    for t, r in a["resources"].items())
    lines.append(f"  Model: {m['jobs']:,} jobs from {m['history_from'][:10]} to {m['history_to'][:10]} "
                 f"({per}); the job is taken as submitted when the history ends.")
    for n in a["input"]["notes"]:
        lines.append(f"  Note: {n}")
    return "\n".join(lines)
