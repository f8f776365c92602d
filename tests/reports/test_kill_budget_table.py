"""The kill budget's table in the recoverable-capacity section: what it allowed and what it cost, as
``whatif/summary.json`` gives them."""

from __future__ import annotations

from reports.formats import Formatter
from reports.sections import recoverable

from .test_pool_units import _whatif


def test_the_kill_budget_table_shows_what_it_allowed_and_cost():
    f = Formatter()
    w = _whatif("node", 12)
    w["scenarios"]["rightsized@0.99/advise"].update(p95_wait_s=60.0, mean_wait_s=30.0, mean_bounded_slowdown=1.5,
                                                    occupancy_cpus=0.7, occupancy_gpus=0.0)
    w["kill_budget"] = {"advise": {"budget": 0.01, "budget_jobs": 400.0, "counted_kills": 271,
                                   "expected_kills": 226.4, "gpu_hours_budget": 0.005, "gpu_hours_allowed": 303.7,
                                   "counted_gpu_hours_lost": 196.9}}
    t = next(t for t in recoverable(w, f)["tables"] if t["name"] == "kill_budget")
    assert t["rows"] == [["advise", 0.01, 400.0, 271, 226.4, 0.005, 303.7, 196.9]]
    del w["kill_budget"]
    assert all(t["name"] != "kill_budget" for t in recoverable(w, f)["tables"])


def test_page_one_names_the_budget_and_its_gpu_hours_cap():
    from reports.sections import recoverable_headline

    f = Formatter()
    w = _whatif("node", 12)
    w["recommended"].update(scenario="budget/advise", level=None, predictor="budget")
    w["options"]["kill_budget"] = 0.01
    assert recoverable_headline(w, f)["level"] == f"{f.pct(0.01)} kill-budget"
    w["options"]["gpu_hours_budget"] = 0.005
    assert recoverable_headline(w, f)["level"] == f"{f.pct(0.01)} kill-budget and {f.pct(0.005)} of GPU-hours lost"
