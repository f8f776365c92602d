"""Plain-text tables of evaluation results (the CLI prints them; nothing here computes a figure)."""

from __future__ import annotations

import pandas as pd

from .metrics import METRICS

_FMT = {"coverage": "{:.3f}", "under_rate": "{:.3f}", "overprov_ratio": "{:.2f}", "recovered_fraction": "{:+.3f}",
        "pinball": "{:.4g}"}


def _cell(metric: str, value) -> str:
    return "—" if value is None else _FMT[metric].format(value)


def models_table(result: dict) -> str:
    """One block per level: a row per model, a column per metric."""
    lines = [f"target {result['target']}: {result['jobs_tested']:,} test jobs"]
    levels = next(iter(result["models"].values())).keys() if result["models"] else []
    width = max((len(m) for m in result["models"]), default=5)
    for lv in levels:
        lines.append("")
        lines.append(f"level {lv}".ljust(width + 2) + "".join(f"{m:>20}" for m in METRICS))
        for m, per in result["models"].items():
            lines.append(m.ljust(width + 2) + "".join(f"{_cell(k, per[lv][k]):>20}" for k in METRICS))
    return "\n".join(lines)


def breakdown_table(table: pd.DataFrame, by: str, level: float, model: str) -> str:
    t = table[(table["level"] == level) & (table["model"] == model)]
    lines = [f"{model} at {level} by {by}:", f"{by:>16}{'jobs':>8}" + "".join(f"{m:>20}" for m in METRICS)]
    for r in t.itertuples():
        lines.append(f"{str(r.group):>16}{r.jobs:>8}" + "".join(f"{_cell(m, getattr(r, m)):>20}" for m in METRICS))
    return "\n".join(lines)


def failure_table(failure: dict, risk: float) -> str:
    lines = [f"failure prediction (request below the calibrated p{round(risk * 100)} of need):"]
    for m, f in failure.items():
        lines.append(f"  {m}: flagged {f['flagged']:,}, killed {f['failed']:,} (base rate {f['base_rate']:.3f}), "
                     f"precision {f['precision']:.3f}, recall {f['recall']:.3f}")
    return "\n".join(lines)
