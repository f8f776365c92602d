"""Months side by side in one DuckDB file (``reclaim.duckdb`` of the monthly folder): each month's headline
figures and its waste per account and per user, replaced whole when a month is run again."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

#: headline figures kept per month (``summary.json`` keys, and the what-if's under ``whatif_``)
FIGURES = ("jobs", "core_hours_alloc", "core_hours_used", "cpu_efficiency", "mem_efficiency", "gpu_hours_alloc",
           "gpu_hours_used", "gpu_efficiency", "cost_usd_alloc", "cost_usd_idle")

_TABLES = {
    "months": "month VARCHAR, key VARCHAR, value DOUBLE",
    "month_groups": "month VARCHAR, level VARCHAR, name VARCHAR, cost_usd_idle DOUBLE, cost_usd_alloc DOUBLE, jobs BIGINT",
}


def month_figures(summary: dict, whatif: dict | None) -> dict:
    """The figures of one month to keep: the headline and, when the what-if ran, its recommendation."""
    out = {k: float(summary[k]) for k in FIGURES if isinstance(summary.get(k), int | float)}
    rec = (whatif or {}).get("recommended") or {}
    if rec.get("nodes_recovered") is not None:
        out["whatif_nodes_recovered"] = float(rec["nodes_recovered"])
        out["whatif_share_recovered"] = float(rec["share_recovered"])
        book = (whatif or {}).get("price_book")
        usd = ((rec.get("dollars") or {}).get(book) or {}).get("usd_per_month")
        if usd is not None:
            out["whatif_usd_per_month"] = float(usd)
    return out


def groups_of(run: Path) -> pd.DataFrame:
    """Waste per account (top level of the account tree) and per user, from the run's aggregates."""
    frames = []
    acc = run / "aggregates" / "by_account.csv"
    if acc.exists():
        a = pd.read_csv(acc)
        a = a[a["level"] == a["level"].min()] if "level" in a else a
        frames.append(pd.DataFrame({"level": "account", "name": a["account_path"].astype(str),
                                    "cost_usd_idle": a["cost_usd_idle"], "cost_usd_alloc": a["cost_usd_alloc"],
                                    "jobs": a["jobs"]}))
    usr = run / "aggregates" / "by_user.csv"
    if usr.exists():
        u = pd.read_csv(usr)
        frames.append(pd.DataFrame({"level": "user", "name": u["user"].astype(str), "cost_usd_idle": u["cost_usd_idle"],
                                    "cost_usd_alloc": u["cost_usd_alloc"], "jobs": u["jobs"]}))
    if not frames:
        return pd.DataFrame(columns=["level", "name", "cost_usd_idle", "cost_usd_alloc", "jobs"])
    return pd.concat(frames, ignore_index=True)


def record_month(db: Path, month: str, figures: dict, groups: pd.DataFrame) -> None:
    """Store ``month`` (replacing what an earlier run of it stored)."""
    con = duckdb.connect(str(db))
    try:
        for name, cols in _TABLES.items():
            con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({cols})")
            con.execute(f"DELETE FROM {name} WHERE month = ?", [month])
        rows = pd.DataFrame({"month": month, "key": list(figures), "value": list(figures.values())})
        con.register("rows", rows)
        con.execute("INSERT INTO months SELECT month, key, value FROM rows")
        g = groups.assign(month=month)[["month", "level", "name", "cost_usd_idle", "cost_usd_alloc", "jobs"]]
        con.register("g", g)
        con.execute("INSERT INTO month_groups SELECT * FROM g")
    finally:
        con.close()


def history(db: Path, *, until: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(figures, groups)`` of every stored month up to ``until`` (inclusive): figures one row per month
    with a column per figure; groups as stored."""
    if not Path(db).exists():
        return pd.DataFrame(), pd.DataFrame()
    con = duckdb.connect(str(db), read_only=True)
    try:
        cond, args = ("WHERE month <= ?", [until]) if until else ("", [])
        figs = con.execute(f"SELECT month, key, value FROM months {cond} ORDER BY month, key", args).df()
        groups = con.execute(f"SELECT * FROM month_groups {cond} ORDER BY month, level, name", args).df()
    finally:
        con.close()
    wide = figs.pivot(index="month", columns="key", values="value").reset_index() if len(figs) else figs
    return wide, groups


def movers(groups: pd.DataFrame, month: str, previous: str | None, n: int = 5) -> dict:
    """Per level (account, user): the ``n`` whose idle cost rose most and fell most since ``previous``."""
    out = {}
    if previous is None:
        return out
    for level in ("account", "user"):
        g = groups[groups["level"] == level]
        now = g[g["month"] == month].set_index("name")["cost_usd_idle"]
        before = g[g["month"] == previous].set_index("name")["cost_usd_idle"]
        change = now.reindex(now.index.union(before.index), fill_value=0.0) - \
            before.reindex(now.index.union(before.index), fill_value=0.0)
        change = change.sort_index()
        rows = [{"name": k, "cost_usd_idle": float(now.get(k, 0.0)), "previous": float(before.get(k, 0.0)),
                 "change": float(v)} for k, v in change.items()]
        rows.sort(key=lambda r: (-r["change"], r["name"]))
        out[level] = {"rose": [r for r in rows if r["change"] > 0][:n],
                      "fell": sorted([r for r in rows if r["change"] < 0], key=lambda r: (r["change"], r["name"]))[:n]}
    return out
