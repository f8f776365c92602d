"""The month's dollars as rates (per month, per year) and under every price book.

``period_hours`` is the span of the period (first submission to last end).  A figure per month is the
period's figure × (8,766 / 12) / ``period_hours``; per year × 8,766 / ``period_hours``.  The other price books
reprice the same idle resource-hours (cores, GiB, GPUs by type) with their own unit prices.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .pricebook import HOURS_PER_YEAR, PriceBookError, load_price_book, shipped_books
from .waste import GiB

H = 3600.0


def period_hours(summary: dict) -> float | None:
    if not summary.get("period_start") or not summary.get("period_end"):
        return None
    span = pd.Timestamp(summary["period_end"]) - pd.Timestamp(summary["period_start"])
    hours = span.total_seconds() / H
    return hours if hours > 0 else None


def rates(total, hours) -> dict:
    """``{"period", "per_month", "per_year"}`` of a period's figure."""
    if total is None or not hours:
        return {"period": total, "per_month": None, "per_year": None}
    return {"period": float(total), "per_month": float(total) * HOURS_PER_YEAR / 12.0 / hours,
            "per_year": float(total) * HOURS_PER_YEAR / hours}


def _idle_hours(waste: pd.DataFrame) -> dict:
    ck, mk, gk = (waste[c].to_numpy(dtype=bool) for c in ("cpu_usage_known", "mem_usage_known", "gpu_usage_known"))
    gpu = pd.Series(np.where(gk, waste["gpu_s_idle"].to_numpy(dtype=float), 0.0) / H).groupby(
        waste["gpu_type"].astype(str).to_numpy()).sum()
    gpu_alloc = pd.Series(waste["gpu_s_alloc"].to_numpy(dtype=float) / H).groupby(
        waste["gpu_type"].astype(str).to_numpy()).sum()
    return {"known": bool((ck | mk | gk).any()),
            "core_idle": float(np.where(ck, waste["core_s_idle"].to_numpy(dtype=float), 0.0).sum() / H),
            "mem_idle": float(np.where(mk, waste["mem_byte_s_idle"].to_numpy(dtype=float), 0.0).sum() / GiB / H),
            "core_alloc": float(waste["core_s_alloc"].sum() / H),
            "mem_alloc": float(waste["mem_byte_s_alloc"].sum() / GiB / H),
            "gpu_idle": {k: float(v) for k, v in gpu.items() if k != "(none)"},
            "gpu_alloc": {k: float(v) for k, v in gpu_alloc.items() if k != "(none)"}}


def _price(book, gpu_type: str) -> float:
    try:
        return book.gpu_price(gpu_type).usd_per_hour
    except PriceBookError:
        return book.gpu_price("").usd_per_hour


def by_book(waste: pd.DataFrame, summary: dict, chosen) -> dict:
    """Per price book (the chosen one first): allocated and idle USD of the period, and the idle as rates (None
    where no job's use is known, as ``cost_usd_idle``)."""
    hours = period_hours(summary)
    idle = _idle_hours(waste)
    books = [chosen] + [load_price_book(n) for n in shipped_books() if n != chosen.name]
    out = {}
    for b in books:
        alloc = (idle["core_alloc"] * b.cpu.usd_per_hour + idle["mem_alloc"] * b.memory.usd_per_hour
                 + sum(h * _price(b, t) for t, h in idle["gpu_alloc"].items()))
        # as the chosen book's headline: no idle cost where no job's use of any resource is known
        wasted = (idle["core_idle"] * b.cpu.usd_per_hour + idle["mem_idle"] * b.memory.usd_per_hour
                  + sum(h * _price(b, t) for t, h in idle["gpu_idle"].items())) if idle["known"] else None
        r = rates(wasted, hours)
        out[b.name] = {"date": b.date, "cost_usd_alloc": alloc, "cost_usd_idle": wasted,
                       "cost_usd_idle_per_month": r["per_month"], "cost_usd_idle_per_year": r["per_year"]}
    return out


def waste_figures(waste: pd.DataFrame, summary: dict, book) -> dict:
    """``period_hours``, ``waste_share`` (idle over allocated cost of the resources whose use is known) and the
    idle cost per month and per year at the chosen book, with every book's figures (``cost_by_book``)."""
    hours = period_hours(summary)
    out = {"period_hours": hours}
    idle, alloc, unknown = (summary.get(k) for k in ("cost_usd_idle", "cost_usd_alloc", "cost_usd_alloc_usage_unknown"))
    known = None if alloc is None or unknown is None else alloc - unknown
    out["waste_share"] = float(idle / known) if idle is not None and known and known > 0 else None
    r = rates(idle, hours)
    out["cost_usd_idle_per_month"], out["cost_usd_idle_per_year"] = r["per_month"], r["per_year"]
    out["cost_by_book"] = by_book(waste, summary, book) if book is not None and "cost_usd_alloc" in waste else {}
    return out
