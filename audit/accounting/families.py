"""Job-name families: names that differ only in numbers, hashes or indices belong together."""

from __future__ import annotations

import pandas as pd


def job_family(names: pd.Series) -> pd.Series:
    """``sim_run_0042.sh`` → ``sim_run_#.sh``; 16+ hex characters → ``<hash>``; empty → ``(unnamed)``."""
    s = names.astype("string").str.lower()
    s = s.str.replace(r"[0-9a-f]{16,}", "<hash>", regex=True)
    s = s.str.replace(r"\d+", "#", regex=True)
    return s.fillna("(unnamed)").replace("", "(unnamed)")


def account_prefixes(account: pd.Series) -> pd.DataFrame:
    """One row per (job position, account path prefix): ``org/team/p`` → ``org``, ``org/team``, ``org/team/p``."""
    acc = account.astype("string").fillna("(none)").reset_index(drop=True)
    parts = acc.str.split("/")
    depth = parts.str.len()
    out = []
    for k in range(int(depth.max()) if len(depth) else 0):
        has = (depth > k).to_numpy()
        out.append(pd.DataFrame({"pos": acc.index[has], "account_path": parts[has].str[: k + 1].str.join("/"),
                                 "level": k + 1}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=["pos", "account_path", "level"])
