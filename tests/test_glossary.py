"""docs/glossary.md and the code name the same columns, caveat codes and summary keys."""

from __future__ import annotations

import re

import pandas as pd

from audit.accounting.account import account_jobs
from audit.accounting.headline import headline
from audit.accounting.pricebook import load_price_book
from audit.accounting.waste import per_job_waste
from audit.cluster_shape import GROUP_KEYS, PARTITION_KEYS, SHAPE_KEYS
from audit.job_table import CAVEATS, JOB_COLUMNS, conform, empty_jobs

from .conftest import ROOT

GLOSSARY = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    m = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^## |\Z)", GLOSSARY, flags=re.S | re.M)
    assert m, f"no section {title!r} in docs/glossary.md"
    return m.group(1)


def _first_cells(text: str) -> list[str]:
    cells = re.findall(r"^\| `([^`]+)`", text, flags=re.M)
    return [c for c in cells]


def test_job_table_columns_match_schema():
    cols = _first_cells(_section("The canonical job table (`jobs.parquet`)").split("###")[0])
    assert cols == list(JOB_COLUMNS)


def test_caveat_codes_match_schema():
    assert set(_first_cells(_section("Caveat codes"))) == set(CAVEATS)


def _documented(title: str) -> set[str]:
    found = set()
    for cell in re.findall(r"^\| (`[^|]+`) \|", _section(title), flags=re.M):
        found.update(re.findall(r"`([^`]+)`", cell))
    return found


def _one_job() -> pd.DataFrame:
    jobs = empty_jobs()
    row = {c: None for c in jobs.columns}
    row.update(job_id="1", cluster="c", elapsed_s=60, alloc_cpus=1, state="COMPLETED",
               start_time=pd.Timestamp("2024-01-01", tz="UTC"), end_time=pd.Timestamp("2024-01-01 00:01", tz="UTC"))
    return conform(pd.DataFrame([row]))


def test_summary_keys_documented():
    assert set(account_jobs(_one_job()).summary) == _documented("Headline figures (`summary.json`)")
    assert set(headline(_one_job())) <= _documented("Headline figures (`summary.json`)")


def test_waste_columns_documented():
    assert set(per_job_waste(_one_job(), load_price_book())) == _documented("Per-job accounting (`waste.parquet`)")


def test_cluster_shape_keys_documented():
    assert _documented("The cluster shape (`cluster.toml`)") == {*SHAPE_KEYS, *GROUP_KEYS, *PARTITION_KEYS}


def test_whatif_keys_documented():
    from audit.whatif.outputs import SCENARIO_KEYS

    top = {"jobs", "dropped", "cluster", "options", "prediction_coverage", "fidelity", "scenarios", "capacity",
           "capacity_probes",
           "tradeoff", "recommended", "shaken", "headroom", "policies", "price_book", "price_books", "replays",
           "kill_budget", "coverage_by_stratum", "gap"}
    section = _section("What-if (`whatif/summary.json`)")
    found = set()
    for cell in re.findall(r"^\| (`[^|]+`) \|", section, flags=re.M):
        found.update(re.findall(r"`([^`]+)`", cell))
    assert top | set(SCENARIO_KEYS) | {"gpu_types", "wait_passes", "gpu_hours_by_account", "wait_percentiles_s",
                                        "nodes_recovered", "kept_by_group", "pools_missing_service", "dollars",
                                        "kills_per_1000_jobs", "within_tolerance"} <= found
