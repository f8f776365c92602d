"""The run folder as the report reads it: the JSON and CSV files the stages wrote, nothing recomputed."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

QUARANTINE_SAMPLE = 20
CSV_FILES = {
    "findings": "findings.csv", "by_cause": "findings_by_cause.csv", "findings_by_account": "findings_by_account.csv",
    "daily": "occupancy_daily.csv", "gpu_types": "gpu_types.csv", "by_account": "aggregates/by_account.csv",
    "by_user": "aggregates/by_user.csv", "account_user": "aggregates/by_account_user.csv",
    "recommendations": "recommendations.csv", "calibration": "prediction_calibration.csv", "trend": "trend.csv",
}


@dataclass
class Run:
    folder: Path
    summary: dict
    ledger: dict
    whatif: dict | None
    frames: dict = field(default_factory=dict)
    efficiency: pd.DataFrame | None = None
    quarantine: list = field(default_factory=list)

    def frame(self, name: str) -> pd.DataFrame | None:
        return self.frames.get(name)


def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def read_run(folder) -> Run:
    folder = Path(folder)
    summary = _json(folder / "summary.json")
    if summary is None:
        raise FileNotFoundError(f"{folder}: no summary.json (run the accounting first)")
    frames = {}
    for key, name in CSV_FILES.items():
        p = folder / name
        if p.exists() and p.stat().st_size > 0:
            frames[key] = pd.read_csv(p, keep_default_na=True, dtype={"user": str, "account": str,
                                                                      "account_path": str, "job_family": str, "month": str})
    eff = folder / "efficiency.parquet"
    sample = []
    q = folder / "quarantine.csv"
    if q.exists():
        with open(q, newline="", encoding="utf-8") as fh:
            for i, row in enumerate(csv.DictReader(fh)):
                if i >= QUARANTINE_SAMPLE:
                    break
                sample.append(row)
    return Run(folder=folder, summary=summary, ledger=_json(folder / "ledger.json") or {},
               whatif=_json(folder / "whatif" / "summary.json"), frames=frames,
               efficiency=pd.read_parquet(eff) if eff.exists() else None, quarantine=sample)
