"""Each warning on a hand-built history: raised for the user whose history (or script) plants it, and for no one
else.  One history holds every plant, each on its own user and job family, beside background users."""

from __future__ import annotations

import re

import numpy as np
import pytest

from predictors.advisor.advise import advise, read_job
from predictors.advisor.model import AdvisorModel

from .histories import group, history, script


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(17)
    failed = ["COMPLETED"] * 110 + ["FAILED", "COMPLETED", "FAILED", "COMPLETED", "COMPLETED", "FAILED",
                                     "COMPLETED", "FAILED", "COMPLETED", "COMPLETED"]
    jobs = history(
        group(rng, "bg1", "sim", 400, limit_s=8 * 3600, cpus=8, mem_gib=32),
        group(rng, "bg2", "assembly", 400, limit_s=2 * 3600, cpus=2, mem_gib=8),
        group(rng, "bg3", "train", 250, limit_s=12 * 3600, cpus=8, mem_gib=64, gpus=2, partition="gpu"),
        # OOM_RISK: alice's jobs use 95-100 % of the 64G they ask (all completed)
        group(rng, "alice", "bigmem", 150, mem_gib=64, mem_use=(0.95, 1.0)),
        # TIMEOUT_RISK: bob's jobs run to 95-100 % of their 1 h limit (all completed)
        group(rng, "bob", "relax", 150, limit_s=3600, time_use=(0.95, 1.0)),
        # RECENT_FAILURES: 4 of carol's last 10 jobs failed (exit 127), in the last days of the history
        group(rng, "carol", "align", 120, states=failed, exit_codes=[127 if s == "FAILED" else 0 for s in failed]),
        # GPU_IDLE_HISTORY: dave's GPU jobs keep their GPU at 0-2 %
        group(rng, "dave", "infer", 120, gpus=1, gpu_util=(0.0, 0.02), partition="gpu"),
        # (GPU_SINGLE_PROCESS is planted in the script) erin's 4-GPU jobs keep them busy
        group(rng, "erin", "bert", 120, gpus=4, cpus=8, gpu_util=(0.7, 0.9), partition="gpu"),
        # EXCLUSIVE_SERIAL: frank's exclusive jobs hold 64 CPUs and keep one busy
        group(rng, "frank", "postproc", 120, cpus=1, alloc_cpus=64, cores_busy=(0.9, 1.0)),
        # MANY_CORES_SERIAL: gina asks 16 CPUs and keeps one busy
        group(rng, "gina", "stats", 120, cpus=16, alloc_cpus=16, cores_busy=(0.9, 1.0)),
        # (MEM_ALL is planted in the script) hank's jobs are ordinary
        group(rng, "hank", "mesh", 120),
        group(rng, "ivan", "fold", 120),
    )
    return AdvisorModel(n_estimators=30).fit(jobs)


#: user, script, the one warning it must raise (None: none)
CASES = {
    "OOM_RISK": ("alice", script("-J bigmem_1", "--mem=64G", "-c 4", "-t 4:00:00")),
    "TIMEOUT_RISK": ("bob", script("-J relax_1", "-t 60", "-c 4", "--mem=16G")),
    "RECENT_FAILURES": ("carol", script("-J align_1", "-t 4:00:00", "-c 4", "--mem=16G")),
    "GPU_IDLE_HISTORY": ("dave", script("-J infer_1", "-p gpu", "--gpus=1", "-c 4", "--mem=16G", "-t 4:00:00")),
    "GPU_SINGLE_PROCESS": ("erin", script("-J bert_1", "-p gpu", "--gpus=4", "-c 8", "--mem=16G", "-t 4:00:00",
                                          body="python train.py")),
    "EXCLUSIVE_SERIAL": ("frank", script("-J postproc_1", "--exclusive", "--mem=16G", "-t 4:00:00")),
    "MANY_CORES_SERIAL": ("gina", script("-J stats_1", "-c 16", "--mem=16G", "-t 4:00:00")),
    "MEM_ALL": ("hank", script("-J mesh_1", "-c 4", "--mem=0", "-t 4:00:00")),
    None: ("ivan", script("-J fold_1", "-c 4", "--mem=16G", "-t 4:00:00")),
}


def _codes(model, user, text):
    a = advise(read_job(text), model, user=user, level=0.9)
    return [w["code"] for w in a["warnings"]], a


@pytest.mark.parametrize("code", list(CASES), ids=[str(c) for c in CASES])
def test_each_warning_is_raised_where_planted_and_nowhere_else(model, code):
    user, text = CASES[code]
    codes, a = _codes(model, user, text)
    assert codes == ([code] if code else []), a["warnings"]
    if code:
        w = a["warnings"][0]
        assert w["message"] and w["evidence"]
        assert a["exit_code"] == (3 if w["risk"] is not None and w["risk"] >= 0.1 else 0)
    else:
        assert a["exit_code"] == 0


def test_history_plants_need_the_history(model):
    """The same scripts from a user with an ordinary history raise none of the warnings read off the user's
    past jobs (the model's own risks are the cases above: the ordinary user's own script raises nothing)."""
    for code in ("RECENT_FAILURES", "GPU_IDLE_HISTORY", "MANY_CORES_SERIAL", "EXCLUSIVE_SERIAL"):
        text = re.sub(r"-J \S+", "-J fold_1", CASES[code][1])
        codes, _ = _codes(model, "ivan", text)
        assert code not in codes


def test_a_launcher_clears_the_single_process_warning(model):
    user, text = CASES["GPU_SINGLE_PROCESS"]
    codes, _ = _codes(model, user, text.replace("python train.py", "torchrun --nproc_per_node=4 train.py"))
    assert codes == []


def test_warnings_without_a_risk_block_only_when_strict(model):
    user, text = CASES["MEM_ALL"]
    a = advise(read_job(text), model, user=user)
    assert a["warnings"][0]["risk"] is None and a["exit_code"] == 0
    assert advise(read_job(text), model, user=user, strict=True)["exit_code"] == 3


def test_evidence_counts_and_cold_start(model):
    _, a = _codes(model, "alice", CASES["OOM_RISK"][1])
    ev = a["evidence"]
    assert (ev["user_jobs"], ev["user_family_jobs"], ev["family_jobs"], ev["basis"]) == (150, 150, 150, "user_family")
    _, cold = _codes(model, None, script("-J never_seen", "-c 1", "--mem=1G", "-t 10"))
    assert cold["evidence"]["basis"] == "cold_start" and cold["evidence"]["too_few"]


SHAPE = """
[[partitions]]
name = "cpu"
max_time = "01:00:00"
default = true
node_groups = ["cn"]

[[partitions]]
name = "bigmem"
max_time = "7-00:00:00"
node_groups = ["bm"]

[[node_groups]]
name = "cn"
partition = "cpu"
count = 4
cpus = 64
mem_gib = 64

[[node_groups]]
name = "bm"
partition = "bigmem"
count = 1
cpus = 64
mem_gib = 1024
"""


def test_suggestions_stop_at_what_the_nodes_and_partition_allow(model, tmp_path):
    """Alice's jobs fill the 64G they ask and the cpu nodes hold 64G; bob's jobs run to the 1 h limit that is the
    partition's: no suggestion asks more than the cluster gives, and the warning says where else to go."""
    from audit.cluster_shape import load_cluster_shape

    (tmp_path / "cluster.toml").write_text(SHAPE, encoding="utf-8")
    shape = load_cluster_shape(tmp_path / "cluster.toml")
    a = advise(read_job(CASES["OOM_RISK"][1]), model, user="alice", shape=shape)
    m = a["resources"]["memory"]
    assert m["suggested"] == 64 * 2**30 and "bigmem" in m["capped_by"] and "bigmem" in m["asked_risk_words"]
    oom = next(w for w in a["warnings"] if w["code"] == "OOM_RISK")
    assert "bigmem" in oom["message"] and "raise --mem" not in oom["message"] and oom["evidence"]["capped_by"]
    assert "memory" not in [c["resource"] for c in a["changes"]]
    b = advise(read_job(CASES["TIMEOUT_RISK"][1]), model, user="bob", shape=shape)
    w = b["resources"]["walltime"]
    assert w["suggested"] == 3600 and "at most 01:00:00" in w["capped_by"]
    timeout = next(x for x in b["warnings"] if x["code"] == "TIMEOUT_RISK")
    assert "checkpoint and resubmit" in timeout["message"] and "raise --time" not in timeout["message"]
    assert "walltime" not in [c["resource"] for c in b["changes"]]
    # without the shape the suggestions go past the request, as before
    assert advise(read_job(CASES["OOM_RISK"][1]), model, user="alice")["resources"]["memory"]["suggested"] > 64 * 2**30
