"""Job-name families: names that differ only in numbers, hashes or indices belong together.

In the core because both the accounting (families in the waste table) and the predictors (a job's family
history) group jobs by it, and they must agree on what a family is."""

from __future__ import annotations

import pandas as pd


def job_family(names: pd.Series) -> pd.Series:
    """``sim_run_0042.sh`` → ``sim_run_#.sh``; 16+ hex characters → ``<hash>``; empty → ``(unnamed)``."""
    s = names.astype("string").str.lower()
    s = s.str.replace(r"[0-9a-f]{16,}", "<hash>", regex=True)
    s = s.str.replace(r"\d+", "#", regex=True)
    return s.fillna("(unnamed)").replace("", "(unnamed)")
