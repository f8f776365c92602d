"""Prometheus textfile metrics of a month, for node_exporter's textfile collector
(``--collector.textfile.directory``): one gauge family per figure, written whole."""

from __future__ import annotations

GAUGES = (
    ("reclaim_waste_ratio", "Share of allocated resource-hours not used, by resource (1 - efficiency)."),
    ("reclaim_cost_usd", "Dollars of the month by view (allocated, idle) at the report's price book."),
    ("reclaim_recoverable_nodes", "Nodes the recommended right-sizing level recovers (what-if)."),
    ("reclaim_recoverable_usd_per_month", "Dollars a month of the recoverable nodes (what-if)."),
    ("reclaim_jobs", "Jobs in the month."),
    ("reclaim_month_timestamp_seconds", "End of the month audited, Unix time."),
)


def _labels(d: dict) -> str:
    if not d:
        return ""
    inner = ",".join(f'{k}="{str(v).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
                     for k, v in sorted(d.items()))
    return "{" + inner + "}"


def textfile(month: str, figures: dict, end_epoch: int, cluster: str) -> str:
    """The exposition text of one month's gauges (every sample labelled with ``cluster`` and ``month``)."""
    base = {"cluster": cluster, "month": month}
    samples = {name: [] for name, _ in GAUGES}
    for res in ("cpu", "mem", "gpu"):
        eff = figures.get(f"{res}_efficiency")
        if eff is not None:
            samples["reclaim_waste_ratio"].append(({**base, "resource": res}, 1.0 - eff))
    for view in ("alloc", "idle"):
        if f"cost_usd_{view}" in figures:
            samples["reclaim_cost_usd"].append(({**base, "view": view}, figures[f"cost_usd_{view}"]))
    if "whatif_nodes_recovered" in figures:
        samples["reclaim_recoverable_nodes"].append((base, figures["whatif_nodes_recovered"]))
    if "whatif_usd_per_month" in figures:
        samples["reclaim_recoverable_usd_per_month"].append((base, figures["whatif_usd_per_month"]))
    if "jobs" in figures:
        samples["reclaim_jobs"].append((base, figures["jobs"]))
    samples["reclaim_month_timestamp_seconds"].append((base, float(end_epoch)))
    lines = []
    for name, help_text in GAUGES:
        if not samples[name]:
            continue
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        lines += [f"{name}{_labels(lab)} {value:.10g}" for lab, value in samples[name]]
    return "\n".join(lines) + "\n"
