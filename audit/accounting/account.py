"""``reclaim account``: from an ingested store to waste.parquet, aggregates, occupancy, failed work and summary.json."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..cluster_shape import load_cluster_shape
from ..store import read_jobs
from .aggregate import account_users, all_aggregates, efficiency_distribution, top_n
from .daily import daily, gpu_types
from .efficiency import efficiency, flag_exceeding
from .failed import diagnose
from .findings import Findings, Thresholds, find
from .headline import summarise
from .occupancy import occupancy, occupancy_totals
from .periods import waste_figures
from .pricebook import load_price_book
from .quality import caveat_counts, usage_coverage
from .recommend import calibration, recommend
from .shape import partition_capacity, shape_frame
from .waste import per_job_waste


@dataclass
class AccountResult:
    summary: dict
    waste: pd.DataFrame
    efficiency: pd.DataFrame
    aggregates: dict
    top: dict
    failed: pd.DataFrame
    occupancy: pd.DataFrame
    quality: list = field(default_factory=list)
    findings: Findings | None = None
    tables: dict = field(default_factory=dict)


def account_jobs(jobs: pd.DataFrame, *, price_book=None, cluster_shape=None,
                 thresholds: Thresholds | None = None) -> AccountResult:
    """Every accounting figure for a canonical job table (no files written); ``thresholds`` of the findings."""
    book = load_price_book(price_book)
    loaded = load_cluster_shape(cluster_shape) if cluster_shape is not None else None
    # a pool of processors (an SWF header's) has no nodes or partitions for the per-partition figures
    shape = shape_frame(loaded) if loaded is not None and loaded.groups else None
    waste = per_job_waste(jobs, book, shape)
    eff = efficiency(jobs)
    capacity = partition_capacity(shape) if shape is not None else None
    occ = occupancy(waste, capacity)
    summary = summarise(waste, jobs, book)
    summary["price_book_detail"] = book.to_dict()
    summary["occupancy"] = occupancy_totals(occ, capacity)
    summary["efficiency_distribution"] = efficiency_distribution(eff)
    summary["usage_coverage"] = usage_coverage(waste)
    quality = caveat_counts(flag_exceeding(jobs, eff), waste)
    summary["caveats"] = quality
    summary.update(waste_figures(waste, summary, book))
    found = find(waste, jobs, book, shape, thresholds)
    summary["findings"] = found.summary()
    summary["findings_thresholds"] = vars(thresholds or Thresholds())
    top = top_n(waste, jobs)
    tables = {"occupancy_daily": daily(occ, capacity, shape), "gpu_types": gpu_types(waste, shape)}
    aggregates = all_aggregates(waste)
    aggregates["account_user"] = account_users(waste)
    return AccountResult(summary=summary, waste=waste, efficiency=eff, aggregates=aggregates,
                         top=top, failed=diagnose(waste, jobs), occupancy=occ, quality=quality, findings=found,
                         tables=tables)


def write_account(result: AccountResult, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    result.waste.to_parquet(out / "waste.parquet", index=False)
    result.efficiency.to_parquet(out / "efficiency.parquet", index=False)
    if not result.occupancy.empty:
        result.occupancy.to_parquet(out / "occupancy.parquet", index=False)
    result.failed.to_csv(out / "failed_jobs.csv", index=False)
    agg = out / "aggregates"
    agg.mkdir(exist_ok=True)
    for name, frame in result.aggregates.items():
        frame.to_csv(agg / f"by_{name}.csv", index=False)
    for name, frame in result.top.items():
        frame.to_csv(agg / f"top_{name}.csv", index=False)
    for name, frame in result.tables.items():
        frame.to_csv(out / f"{name}.csv", index=False)
    if result.findings is not None:
        result.findings.table.to_csv(out / "findings.csv", index=False)
        result.findings.jobs.to_csv(out / "findings_jobs.csv", index=False)
        result.findings.by_cause.to_csv(out / "findings_by_cause.csv", index=False)
        result.findings.by_account.to_csv(out / "findings_by_account.csv", index=False)
    (out / "summary.json").write_text(json.dumps(result.summary, indent=2, sort_keys=True, default=str) + "\n",
                                      encoding="utf-8")


def write_recommendations(result: AccountResult, jobs: pd.DataFrame, predictions: pd.DataFrame | None,
                          level: float, out: Path) -> pd.DataFrame:
    """``recommendations.csv`` from the what-if's predictions at the recommended ``level``, and their measured
    coverage (``prediction_calibration.csv``)."""
    recs = recommend(result.waste, jobs, predictions, level)
    recs.to_csv(Path(out) / "recommendations.csv", index=False)
    calibration(result.waste, predictions).to_csv(Path(out) / "prediction_calibration.csv", index=False)
    return recs


def account(store, *, price_book=None, cluster_shape=None) -> AccountResult:
    """Read an ingested store, account for it and write the accounting files beside it."""
    store = Path(store)
    result = account_jobs(read_jobs(store), price_book=price_book, cluster_shape=cluster_shape)
    write_account(result, store)
    return result
