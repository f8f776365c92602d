"""A what-if on one pool of processors (``--procs``, an SWF header's ``MaxProcs``) counts processors, and page 1
says so: its node counts are never called nodes."""

from __future__ import annotations

from reports.formats import Formatter
from reports.sections import decision, gap_sentence, recoverable_headline


def _whatif(unit: str | None, recovered: int) -> dict:
    rec = {"scenario": "rightsized@0.99/advise", "level": 0.99, "mode": "advise", "predictor": "lightgbm",
           "kills_per_1000_jobs": 0.0, "gpu_hours_lost": 0.0, "nodes_recovered": recovered,
           "share_recovered": recovered / 4008, "nodes_recovered_p5": 0.0, "nodes_recovered_p95": 25.0,
           "dollars": {"cloud-on-demand": {"usd_per_month": 277.1, "usd_per_year": 3325.2}}}
    cluster = {"nodes": 4008, "groups": {}, "pools": [], **({"unit": unit} if unit else {})}
    return {"recommended": rec, "cluster": cluster, "options": {"tolerance": 0.01}, "price_book": "cloud-on-demand",
            "capacity": {"oracle": {"nodes_kept": 3972}}, "shaken": {"replicates": 10},
            "scenarios": {"rightsized@0.99/advise": {"kind": "rightsized", "level": 0.99, "mode": "advise"}},
            "gap": {"scenario": "rightsized@0.99/advise", "nodes_total": 4008, "oracle_nodes_recovered": 36,
                    "nodes_recovered": recovered, "nodes_gap": 36 - recovered,
                    "by_cause": [{"cause": c, "nodes": 0.0} for c in
                                 ("no_history", "prediction_spread", "kills_reruns")]
                    + [{"cause": "service_rule", "nodes": 36.0 - recovered}]}}


def test_a_pool_counts_processors_on_page_one():
    f = Formatter()
    w = _whatif("processor", 12)
    r = recoverable_headline(w, f)
    assert r["unit"] == "processors" and r["nodes_word"] == "processors"
    text = " ".join(decision(r, {"waste_share": "n/a"}, []))
    assert "12 processors of 4,008" in text and "5th percentile is 0 processors" in text and "node" not in text
    assert "on 3,972 of 4,008 processors" in gap_sentence(w, f)
    one = recoverable_headline(_whatif("processor", 1), f)
    assert one["nodes_word"] == "processor"
    zero = " ".join(decision(recoverable_headline(_whatif("processor", 0), f), {"waste_share": "n/a"}, []))
    assert "frees no processor" in zero and "not fewer processors" in zero


def test_a_cluster_of_nodes_and_an_earlier_summary_count_nodes():
    f = Formatter()
    for unit in ("node", None):  # a summary written before the unit was recorded counts nodes
        r = recoverable_headline(_whatif(unit, 12), f)
        assert r["unit"] == "nodes" and "12 nodes of 4,008" in " ".join(decision(r, {"waste_share": "n/a"}, []))


def test_a_pool_counts_processors_in_the_recoverable_tables():
    from reports.sections import oracle_gap, recoverable

    f = Formatter()
    w = _whatif("processor", 12)
    w["tradeoff"] = [{"scenario": "rightsized@0.99/advise", "nodes_recovered": 12, "share_recovered": 12 / 4008,
                      "kills_per_1000_jobs": 0.0, "gpu_hours_lost": 0.0, "core_hours_lost": 0.0,
                      "within_tolerance": True}]
    w["scenarios"]["rightsized@0.99/advise"].update(p95_wait_s=60.0, mean_wait_s=30.0, mean_bounded_slowdown=1.5,
                                                    occupancy_cpus=0.7, occupancy_gpus=0.0)
    titles = [c for t in recoverable(w, f)["tables"] for c in [t["caption"], *(h for h, _ in t["columns"])]]
    gap = oracle_gap(w, f)
    titles += [c for t in gap["tables"] for c in [t["caption"], *(h for h, _ in t["columns"])]]
    text = " ".join(str(x) for x in titles) + gap["intro"] + gap["units"]
    assert "processors recovered" in text and "4,008 processors" in gap["intro"]
    assert "nodes recovered" not in text and "nodes between" not in text

