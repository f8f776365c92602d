"""Where the oracle's capacity went (``gap`` of ``whatif/summary.json``), from a hand-built run folder: the table by
resource and the causes in nodes in the Recoverable capacity section, the sentence on page 1, all formatted as
specified; a null gap leaves them out; a hostile scenario name renders as text."""

from __future__ import annotations

import copy
import csv
import json
import re
import subprocess

import pytest

from audit.config import ReportConfig
from reports.document import build_context, write_report
from reports.figures import gap_chart
from reports.formats import Formatter
from reports.render import render_html
from reports.run import read_run

from .test_report_week import needs_poppler, numbers_not_found, pdf_pages

SCENARIO = "rightsized@0.99/advise"
HOSTILE = "<script>alert(1)</script>"

GAP = {
    "scenario": SCENARIO,
    "nodes_total": 142, "oracle_nodes_recovered": 37, "nodes_recovered": 5, "nodes_gap": 32,
    "span_hours": 439.3,
    "by_resource": [
        {"resource": "memory", "unit": "GiB-h", "asked": 11401795.3, "oracle": 6067545.2, "held": 10985445.3,
         "gap": 4917900.1, "no_history": 3396735.3, "prediction_spread": 1521164.7,
         "oracle_cut_share": 0.468, "scenario_cut_share": 0.037, "share_of_oracle_cut_reached": 0.078},
        {"resource": "cores", "unit": "core-h", "asked": 2950123.0, "oracle": 1210456.5, "held": 2735012.8,
         "gap": 1524556.3, "no_history": 1499010.2, "prediction_spread": 25546.1,
         "oracle_cut_share": 0.5897, "scenario_cut_share": 0.0729, "share_of_oracle_cut_reached": 0.1236},
        {"resource": "gpus", "unit": "GPU-h", "asked": 48210.4, "oracle": 48210.4, "held": 48210.4,
         "gap": 0.0, "no_history": 0.0, "prediction_spread": 0.0,
         "oracle_cut_share": 0.0, "scenario_cut_share": 0.0, "share_of_oracle_cut_reached": None},
        {"resource": "time", "unit": "core-h planned", "asked": 9120400.0, "oracle": 2950123.0, "held": 5012345.6,
         "gap": 2062222.6, "no_history": 812.4, "prediction_spread": 2061410.2,
         "oracle_cut_share": 0.6765, "scenario_cut_share": 0.4504, "share_of_oracle_cut_reached": 0.6658},
    ],
    "by_pool": [
        {"pool": "cpu", "nodes_total": 120, "oracle_nodes_recovered": 30, "nodes_recovered": 3, "nodes_gap": 27,
         "binding_resource": "cores", "oracle_nodes_worth": 25.0, "nodes_per_node_worth": 1.2, "no_history": 17.0,
         "prediction_spread": 0.3, "kills_reruns": 0.1, "service_rule": 9.6},
        {"pool": "gpu", "nodes_total": 22, "oracle_nodes_recovered": 7, "nodes_recovered": 2, "nodes_gap": 5,
         "binding_resource": "gpus", "oracle_nodes_worth": 5.6, "nodes_per_node_worth": 1.25, "no_history": 1.45,
         "prediction_spread": 0.05, "kills_reruns": 0.0, "service_rule": 3.5},
    ],
    "by_cause": [
        {"cause": "no_history", "nodes": 18.45, "share": 0.577},
        {"cause": "prediction_spread", "nodes": 0.35, "share": 0.011},
        {"cause": "kills_reruns", "nodes": 0.10, "share": 0.003},
        {"cause": "service_rule", "nodes": 13.10, "share": 0.409},
    ],
}

SENTENCE = ("The oracle (every job given just what it used) keeps today's service on 105 of 142 nodes (37 recovered); "
            "right-sizing at the p99 level (advise mode), as recommended, recovers 5: of the 32 between, 18 are held "
            "by jobs with no history to right-size from, 0.3 by the spread of predictions, 0.1 lost to kills and "
            "re-runs, and 13 to the service rule (queueing and packing).")

ROWS = [  # resource, unit, asked, oracle holds, scenario holds, gap, no history, spread, three shares
    ["memory", "GiB-h", "11.4M", "6.1M", "11.0M", "4.9M", "3.4M", "1.5M", "46.8%", "3.7%", "7.8%"],
    ["cores", "core-h", "3.0M", "1.2M", "2.7M", "1.5M", "1.5M", "25.5k", "59.0%", "7.3%", "12.4%"],
    ["GPUs", "GPU-h", "48.2k", "48.2k", "48.2k", "0.00", "0.00", "0.00", "0.0%", "0.0%", "n/a"],
    ["time (as planned)", "core-h planned", "9.1M", "3.0M", "5.0M", "2.1M", "812", "2.1M", "67.7%", "45.0%", "66.6%"],
]
POOLS = [["cpu", "120", "cores", "30", "3", "17.0", "0.30", "0.10", "9.60"],
         ["gpu", "22", "GPUs", "7", "2", "1.45", "0.05", "0.00", "3.50"]]
CAUSES = [["no history to right-size from", "18.4", "57.7%"], ["spread of predictions", "0.35", "1.1%"],
          ["kills and re-runs", "0.10", "0.3%"], ["service rule (queueing and packing)", "13.1", "40.9%"]]


def scenario(level, mode, p95, nodes):
    return {"kind": "rightsized" if level is not None else ("oracle" if nodes == 37 else "actual"), "level": level,
            "mode": mode, "predictor": "lightgbm" if level is not None else None, "p95_wait_s": p95,
            "mean_wait_s": p95 / 4, "mean_bounded_slowdown": 1.8, "occupancy_cpus": 0.61, "occupancy_gpus": 0.55,
            "wait_percentiles_s": [0.0, 60.0, 600.0, 3600.0, p95]}


def capacity(name, kept):
    return {"scenario": name, "nodes_total": 142, "nodes_kept": kept, "nodes_recovered": 142 - kept,
            "share_recovered": (142 - kept) / 142, "dollars": {"cloud-on-demand": {"usd_per_month": 3100.0 * (142 - kept),
                                                                                     "usd_per_year": 37200.0 * (142 - kept)}}}


def whatif_summary(gap=GAP, name=SCENARIO) -> dict:
    """A what-if summary written by hand, with the keys the report reads."""
    row = {"scenario": name, "level": 0.99, "mode": "advise", "nodes_recovered": 5, "share_recovered": 5 / 142,
           "kills_per_1000_jobs": 0.4, "gpu_hours_lost": 1.5, "core_hours_lost": 20.0, "within_tolerance": True}
    scen = {"actual": scenario(None, None, 7200.0, 0), "oracle": scenario(None, None, 7000.0, 37)}
    scen[name] = scenario(0.99, "advise", 7100.0, 5)
    return {
        "jobs": 12000, "cluster": {"nodes": 142, "groups": {"cpu": 120, "gpu": 22}, "pools": []},
        "options": {"risk": [0.99], "modes": ["advise"], "predictor": "lightgbm", "backfill_order": "fcfs",
                    "policy": "easy", "replicates": 10, "tolerance": 0.01},
        "fidelity": {"simulated_mean_wait_s": 1800.0, "logged_mean_wait_s": 2000.0, "simulated_occupancy_cpus": 0.6,
                     "logged_occupancy_cpus": 0.62, "simulated_occupancy_gpus": 0.5, "logged_occupancy_gpus": 0.52},
        "scenarios": scen,
        "capacity": {"actual": capacity("actual", 142), "oracle": capacity("oracle", 105), name: capacity(name, 137)},
        "tradeoff": [row],
        "recommended": {**row, "dollars": capacity(name, 137)["dollars"], "nodes_total": 142,
                        "nodes_recovered_p5": 4, "nodes_recovered_p95": 7},
        "shaken": {"replicates": 10, "nodes_recovered_p5": 4, "nodes_recovered_p95": 7},
        "policies": {}, "price_book": "cloud-on-demand", "replays": 40,
        "gap": gap,
    }


SUMMARY = {"cluster": "example", "period_start": "2024-03-01T00:00:00Z", "period_end": "2024-03-19T00:00:00Z",
           "jobs": 12000, "price_book": "cloud-on-demand", "waste_share": 0.41, "cost_usd_idle_per_month": 52000.0,
           "cost_usd_idle_per_year": 624000.0, "period_hours": 439.3}


def run_folder(tmp_path, whatif: dict):
    folder = tmp_path / "run"
    (folder / "whatif").mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(SUMMARY), encoding="utf-8")
    (folder / "whatif" / "summary.json").write_text(json.dumps(whatif), encoding="utf-8")
    return folder


def html_of(tmp_path, whatif: dict, cfg=None) -> tuple[str, dict]:
    ctx, _ = build_context(read_run(run_folder(tmp_path, whatif)), cfg or ReportConfig(), {"version": "test"})
    return render_html(ctx), ctx


def cells(html: str, caption: str) -> list[list[str]]:
    """The body rows of the table whose caption starts with ``caption``, cell texts unescaped of tags."""
    at = html.index(f"<caption>{caption}")
    body = html[at:html.index("</tbody>", at)]
    return [[re.sub(r"<[^>]+>", "", c).replace("\u00a0", " ") for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>")[1], re.S)]


def test_gap_table_causes_and_page_one_sentence_in_the_html(tmp_path):
    html, ctx = html_of(tmp_path, whatif_summary())
    assert cells(html, "Where the oracle&#39;s capacity went") == ROWS
    assert cells(html, "By cause: the 32 nodes between the oracle and the recommended level (right-sized at p99, advise)") == CAUSES
    assert "<h3>Where the oracle's capacity went</h3>" in html
    assert SENTENCE in ctx["summary"]["decision"] and ctx["summary"]["decision"].index(SENTENCE) == 1
    page_one = html[html.index('<section class="summary"'):html.index('<nav class="toc">')]
    assert SENTENCE.replace("'", "&#39;") in page_one
    recoverable = html[html.index('<section id="recoverable"'):html.index('<section id="recommendations"')]
    assert '<svg' in recoverable and 'id="gap-' in recoverable
    for label in ("no history to right-size from", "spread of predictions", "kills and re-runs"):
        assert label in ctx["charts"]["gap"]
    assert "the month&#39;s 439 hours" in recoverable
    assert cells(html, "By pool: the oracle&#39;s nodes") == POOLS


def test_the_figures_of_page_one_name_their_source(tmp_path):
    _, ctx = html_of(tmp_path, whatif_summary())
    sources = {row[2].replace("\u200b", ""): row[1] for row in ctx["summary"]["table"]["rows"]}
    assert sources["whatif/summary.json: capacity.oracle.nodes_kept"] == "105"
    assert sources["whatif/summary.json: gap.nodes_gap"] == "32.0"
    assert sources["whatif/summary.json: gap.by_cause[1].nodes"] == "0.35"


def test_negative_service_rule_and_a_missing_nodes_kept_are_shown_as_they_are(tmp_path):
    gap = copy.deepcopy(GAP)
    gap["by_cause"][0]["nodes"], gap["by_cause"][3]["nodes"] = 33.4, -1.75
    w = whatif_summary(gap)
    del w["capacity"]["oracle"]["nodes_kept"]
    w["scenarios"][SCENARIO].update(level=None, predictor="budget")  # a level-less right-sized scenario
    html, ctx = html_of(tmp_path, w)
    line = ctx["summary"]["gap"]
    assert line.startswith("The oracle (every job given just what it used) keeps today's service with 37 of 142 "
                           "nodes recovered; right-sizing by budget (advise mode), as recommended, recovers 5: ")
    assert "of the 32 between, 33 are held" in line and "and -2 to the service rule" in line
    assert ["service rule (queueing and packing)", "-1.75", "40.9%"] in cells(html, "By cause: the 32 nodes between")
    assert gap_chart([{"label": "x", "nodes": -1.75, "text": "-2"}]).count("<svg") == 1


@pytest.mark.parametrize("gap", [None, "absent"])
def test_a_null_gap_omits_the_table_the_chart_and_the_sentence(tmp_path, gap):
    w = whatif_summary(None)
    if gap == "absent":
        del w["gap"]
    html, ctx = html_of(tmp_path, w)
    assert ctx["summary"]["gap"] is None and ctx["recoverable"]["gap"] is None and "gap" not in ctx["charts"]
    assert "Where the oracle" not in html.replace("&#39;", "'") and "The oracle (every job" not in html
    assert "Capacity recovered against failure cost" in html  # the rest of the section is still there
    assert not any("gap." in row[2].replace("\u200b", "") for row in ctx["summary"]["table"]["rows"])


def test_a_hostile_scenario_name_is_escaped(tmp_path):
    gap = {**copy.deepcopy(GAP), "scenario": HOSTILE}
    gap["by_pool"][0]["binding_resource"] = "<b>cores</b>"
    gap["by_resource"][0]["unit"] = "<i>GiB-h</i>"
    w = whatif_summary(gap, name="rightsized@0.99/advise")
    w["scenarios"][HOSTILE] = {**w["scenarios"]["actual"], "kind": HOSTILE}
    html, ctx = html_of(tmp_path, w)
    assert "<script>" not in html and "<b>cores</b>" not in html and "<i>GiB-h</i>" not in html
    assert "the recommended &lt;script&gt;alert(1)&lt;/script&gt; recovers 5" in html
    assert "&lt;b&gt;cores&lt;/b&gt;" in html and "&lt;i&gt;GiB-h&lt;/i&gt;" in html


def test_compact_quantities_and_node_counts():
    f, de = Formatter(), Formatter("de")
    assert [f.compact(x) for x in (950, 12345, 123456, 999700, 11401795.3, -1521164.7, 2.5e9, None)] == \
        ["950", "12.3k", "123k", "1.0M", "11.4M", "-1.5M", "2.5B", "n/a"]
    assert de.compact(11401795.3) == "11,4M" and de.nodes(0.35) == "0,3"
    assert [f.nodes(x) for x in (18.45, 0.35, 0.10, 13.10, -13.1, -0.4, 0, 1234.0, None)] == \
        ["18", "0.3", "0.1", "13", "-13", "-0.4", "0", "1,234", "n/a"]


def test_the_cause_chart_is_deterministic(tmp_path):
    _, first = html_of(tmp_path / "a", whatif_summary())
    _, second = html_of(tmp_path / "b", whatif_summary())
    svg = first["charts"]["gap"]
    assert svg == second["charts"]["gap"] and svg.startswith("<svg") and "dc:date" not in svg


@needs_poppler
def test_the_pdf_says_it_and_the_tables_hold_the_raw_figures(tmp_path):
    folder = run_folder(tmp_path, whatif_summary())
    write_report(folder, ReportConfig(), {"version": "test"})
    first = " ".join(pdf_pages(folder / "report.pdf")[0].split())
    assert " ".join(SENTENCE.split()) in first
    assert numbers_not_found(folder) == []  # every number of page 1 is one of the run's files, as printed
    text = " ".join(" ".join(pdf_pages(folder / "report.pdf")).split())
    assert "Where the oracle's capacity went, by resource" in text and "11.4M" in text and "46.8%" in text
    assert "By cause: the 32 nodes between the oracle" in text and "40.9%" in text
    with open(folder / "tables" / "oracle_gap.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[1][:3] == ["memory", "GiB-h", "11401795.3"]
    with open(folder / "tables" / "oracle_gap_causes.csv", newline="", encoding="utf-8") as fh:
        assert [r[1] for r in csv.reader(fh)][1:] == ["18.45", "0.35", "0.1", "13.1"]
    bbox = subprocess.run(["pdftotext", "-bbox", str(folder / "report.pdf"), "-"], check=True, capture_output=True,
                          text=True).stdout
    for w, body in re.findall(r'<page width="([\d.]+)" height="[\d.]+">(.*?)</page>', bbox, flags=re.S):
        assert all(float(x) <= float(w) + 0.5 for x in re.findall(r'xMax="([\d.-]+)"', body))
