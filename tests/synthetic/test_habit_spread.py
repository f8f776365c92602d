"""The spread of use around habits (``[habit_spread]``, docs/synthetic.md): the generated month's within-habit
spread is the setting (the planted truth is the outside oracle), every spread 0 gives back the month of exact
habits byte for byte, and a job whose drawn use cannot fit its request ends OUT_OF_MEMORY or TIMEOUT."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit.synthetic import generate
from audit.synthetic.profile import load_profile

from ..conftest import trace

ROOT = Path(__file__).resolve().parents[2]
WEEK_CLUSTER = ROOT / "sample_traces" / "week.cluster.toml"
WEEK_PROFILE = ROOT / "sample_traces" / "week.profile.toml"
#: a month of a few thousand jobs on the small cluster: 45-65 groups of >= 10 jobs (seeds 1-10)
MONTH = {"jobs": 4000, "days": 7.0, "cluster_spec": WEEK_CLUSTER, "seed": 2, "write_telemetry": False}
#: the habit as the files show it: who, what and the exact request
KEY = ["user", "job_name", "partition", "req_cpus", "req_mem_bytes", "req_nodes", "req_gpus", "time_limit_s"]
SPREAD = load_profile()["habit_spread"]
STATES = load_profile()["states"]
#: sha256 over the files that ``generate(jobs=600, days=2, week cluster and profile, seed=3)`` wrote before
#: [habit_spread] existed (commit 0b0ce0d; truth.json without its habit_spread key): see _digest
EXACT_HABITS_DIGEST = "450c58d7e55b308a04debefef05514f27bee629f0046c5d7ca2c48226ebf3bf4"
#: the estimate's own noise: the median over 45-65 groups of ten-odd jobs of a sample sd is 0.30-0.35 for a
#: setting of 0.34 over seeds 1-10 (sample sds of small groups run a few per cent low)
TOLERANCE = 0.05


def _profile(path: Path, extra: str = "", **spread: float) -> Path:
    lines = [extra, "[habit_spread]"] + [f"{k} = {float(v)!r}" for k, v in spread.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _zero(path: Path, extra: str = "") -> Path:
    return _profile(path, extra, memory_log_sd=0, run_log_sd=0, cpu_efficiency_logit_sd=0)


def _month(out: Path, profile: Path | None) -> dict:
    read_sacct = pytest.importorskip("audit.readers.sacct.text").read_sacct
    generate(out, profile=profile, **MONTH)
    jobs = read_sacct(out / "sacct.txt").jobs
    truth = pd.read_csv(out / "truth_jobs.csv", dtype={"job_id": str})
    planted = json.loads((out / "truth.json").read_text())
    return {"out": out, "jobs": jobs, "truth": truth, "planted": planted}


@pytest.fixture(scope="module")
def spread(tmp_path_factory) -> dict:
    return _month(tmp_path_factory.mktemp("spread"), None)


@pytest.fixture(scope="module")
def exact(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("exact")
    return _month(d / "month", _zero(d / "zero.toml"))


def _groups(jobs: pd.DataFrame) -> np.ndarray:
    return jobs[KEY].astype("string").fillna("<na>").groupby(KEY, sort=True).ngroup().to_numpy()


def _median_group_sd(values: pd.Series, groups: np.ndarray) -> tuple[float, int]:
    g = values.groupby(groups)
    sd = g.std()[g.size() >= 10]
    return float(sd.median()), len(sd)


def _memory_spread(month: dict) -> tuple[float, int]:
    """Median over (user, job name, request) groups of >= 10 jobs that ran of the sd of ln(peak / request),
    from the files as a site would compute it."""
    j = month["jobs"]
    j = j[(j["elapsed_s"].fillna(0) > 0) & (j["mem_peak_bytes"].fillna(0) > 0) & j["req_mem_bytes"].notna()]
    ratio = np.log(j["mem_peak_bytes"].astype("float64") / j["req_mem_bytes"].astype("float64"))
    return _median_group_sd(ratio.reset_index(drop=True), _groups(j.reset_index(drop=True)))


# ---------------------------------------------------------------- the spread is the setting


def test_within_habit_memory_spread_is_the_setting(spread):
    sd, groups = _memory_spread(spread)
    assert groups >= 30
    assert abs(sd - SPREAD["memory_log_sd"]) <= TOLERANCE, sd
    planted = spread["planted"]["habit_spread"]
    assert planted["settings"] == {k: float(v) for k, v in SPREAD.items()}
    # truth.json measures the same figure on the generator's own records (its peaks add the batch shell)
    assert planted["measured"]["memory_groups"] == groups
    assert planted["measured"]["memory_log_sd_median"] == pytest.approx(sd, abs=0.005)


def test_zero_spread_gives_back_exact_habits(exact):
    sd, groups = _memory_spread(exact)
    assert groups >= 30
    assert sd <= 0.03, sd      # what is left: the extern step's and batch shell's few MB, OOM jobs at the allocation
    m = exact["planted"]["habit_spread"]
    assert m["measured"]["memory_log_sd_median"] <= 0.03
    assert m["measured"]["cpu_efficiency_logit_sd_median"] <= 0.01
    assert m["forced"] == {"OUT_OF_MEMORY": 0, "TIMEOUT": 0}


def test_cpu_efficiency_spread_is_the_setting(spread, exact):
    m = spread["planted"]["habit_spread"]["measured"]
    assert m["cpu_efficiency_groups"] >= 20
    assert abs(m["cpu_efficiency_logit_sd_median"] - SPREAD["cpu_efficiency_logit_sd"]) <= TOLERANCE


def _digest(out: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(out.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.name == "truth.json":
                t = json.loads(data)
                t.pop("habit_spread")
                data = (json.dumps(t, indent=2, sort_keys=True) + "\n").encode()
            h.update(p.relative_to(out).as_posix().encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def test_every_spread_zero_is_the_month_of_exact_habits_byte_for_byte(tmp_path):
    """The old profile stays expressible: with every [habit_spread] setting 0, every file the generator writes
    is the one it wrote before the setting existed."""
    prof = _zero(tmp_path / "zero.toml", "[telemetry]\ninterval_s = 1200")
    out = tmp_path / "month"
    generate(out, jobs=600, days=2.0, cluster_spec=WEEK_CLUSTER, profile=prof, seed=3)
    assert _digest(out) == EXACT_HABITS_DIGEST


def test_the_spread_changes_use_not_requests(spread, exact):
    """A habitual submission keeps its user's request: CPUs, memory and TRES asked are those of exact habits
    (limits may move: the load calibration rescales intended run times from the month's elapsed times)."""
    def asked(month):
        df = pd.read_csv(month["out"] / "sacct.txt", sep="|", dtype=str, keep_default_na=False)
        df = df[~df["JobID"].str.contains(".", regex=False)]
        return df[["JobID", "User", "JobName", "Partition", "Submit", "ReqCPUS", "ReqMem", "ReqTRES"]].reset_index(drop=True)

    pd.testing.assert_frame_equal(asked(spread), asked(exact))
    a, b = spread["truth"], exact["truth"]
    assert not np.array_equal(a["mem_peak_bytes"], b["mem_peak_bytes"])


# ---------------------------------------------------------------- use that cannot fit


def _within_binomial(count: int, n: int, p: float) -> bool:
    return abs(count / n - p) <= 4 * np.sqrt(p * (1 - p) / n) + 1e-9


def test_a_peak_that_passes_its_request_ends_out_of_memory(spread):
    t = spread["truth"]
    forced = spread["planted"]["habit_spread"]["forced"]["OUT_OF_MEMORY"]
    assert forced > 0
    assert (t["mem_peak_bytes"] <= t["alloc_mem_bytes"]).all()     # no job holds more than it was given
    oom = t["state"] == "OUT_OF_MEMORY"
    assert oom.sum() >= forced
    # the forced ones count towards the profile's OUT_OF_MEMORY share instead of adding to it
    assert _within_binomial(int(oom.sum()), len(t), STATES["OUT_OF_MEMORY"])
    assert _within_binomial(int((t["state"] == "COMPLETED").sum()), len(t), STATES["COMPLETED"])


def test_a_run_that_passes_its_limit_ends_in_timeout(tmp_path, exact):
    prof = _profile(tmp_path / "run.toml", memory_log_sd=0, run_log_sd=0.6, cpu_efficiency_logit_sd=0)
    month = _month(tmp_path / "month", prof)
    t, planted = month["truth"], month["planted"]["habit_spread"]
    forced = planted["forced"]["TIMEOUT"]
    assert forced > 0 and planted["forced"]["OUT_OF_MEMORY"] == 0
    timeout = t["state"] == "TIMEOUT"
    # the forced ones take the profile's TIMEOUT share first; here they exceed it (a quarter of runs are drawn
    # at their limit, half of those pass it), so no job draws TIMEOUT besides them
    assert forced / len(t) > STATES["TIMEOUT"]
    assert timeout.sum() == forced
    ran = t["elapsed_s"] > 0
    assert (t.loc[ran & ~timeout, "elapsed_s"] <= t.loc[ran & ~timeout, "limit_s"]).all()
    extra = t.loc[timeout, "elapsed_s"] - t.loc[timeout, "limit_s"]
    assert extra.between(0, 59).all()
    # the same job, completed in both months under the same limit, ran exp(run_log_sd x z) times as long; far
    # from its limit (a quarter of it or less without spread) the draw is not cut by it
    a = t.set_index("job_id")
    b = exact["truth"].set_index("job_id").loc[a.index]
    both = (a["state"] == "COMPLETED") & (b["state"] == "COMPLETED") & (a["limit_s"] == b["limit_s"]) \
        & (b["elapsed_s"] * 4 <= b["limit_s"]) & (b["elapsed_s"] >= 60)
    factor = np.log(a.loc[both, "elapsed_s"] / b.loc[both, "elapsed_s"])
    n = int(both.sum())
    assert n >= 200
    se = 0.6 / np.sqrt(2 * (n - 1))       # standard error of a normal sample's sd
    assert factor.std() == pytest.approx(0.6, abs=3 * se) and abs(factor.median()) <= 3 * 1.25 * 0.6 / np.sqrt(n)


# ---------------------------------------------------------------- the history rules truth.json plants


def test_history_rules_in_truth_are_what_a_plain_loop_over_the_files_finds(spread):
    """Largest past peak of the group x (1 + margin) once ``after`` of its jobs ended before the submission (else
    the request, never more than it): share of jobs covered and GiB-hours cut, one job at a time."""
    j = spread["jobs"].reset_index(drop=True)
    t = spread["truth"].set_index("job_id").loc[j["job_id"].astype(str)]
    on = (t["start"].to_numpy() >= 0)
    j, t = j[on].reset_index(drop=True), t[on].reset_index(drop=True)
    g = _groups(j)
    submit = j["submit_time"].astype("int64").to_numpy() // 10**9
    end = t["end"].to_numpy()
    peak = t["mem_peak_bytes"].to_numpy(dtype=float)
    req = t["alloc_mem_bytes"].to_numpy(dtype=float)
    el = t["elapsed_s"].to_numpy(dtype=float)
    members: dict = {}
    for i, gi in enumerate(g.tolist()):
        members.setdefault(gi, []).append(i)
    rules = spread["planted"]["habit_spread"]["history_rules"]
    for name, rule in rules.items():
        if name == "oracle":
            assert rule["mem_gib_hours_cut"] == pytest.approx(1 - (peak * el).sum() / (req * el).sum(), abs=1e-6)
            continue
        held = req.copy()
        for i in range(len(g)):
            past = [peak[k] for k in members[g[i]] if end[k] < submit[i]]
            if len(past) >= rule["ended_jobs_needed"]:
                held[i] = min((1 + rule["margin"]) * max(past), req[i])
        assert rule["covered_share"] == pytest.approx((held >= peak).mean(), abs=1e-6), name
        assert rule["mem_gib_hours_cut"] == pytest.approx(1 - (held * el).sum() / (req * el).sum(), abs=1e-6), name


# ---------------------------------------------------------------- the profile


def test_spread_settings_are_validated(tmp_path):
    p = _profile(tmp_path / "p.toml", memory_log_sd=-0.1)
    with pytest.raises(ValueError, match=r"habit_spread\.memory_log_sd must be a number of 0 or more"):
        load_profile(p)
    p.write_text("[habit_spread]\nrun_log_sd = \"wide\"\n")
    with pytest.raises(ValueError, match=r"habit_spread\.run_log_sd"):
        load_profile(p)


def test_the_profile_says_where_each_spread_comes_from():
    text = (ROOT / "audit" / "synthetic" / "profile.toml").read_text()
    block = text[text.index("\n[habit_spread]\n"):text.index("\n[states]\n")]
    for key in SPREAD:
        line = block[block.index(f"{key} ="):]
        assert "measured" in line[:400].lower() or "chosen" in line[:400].lower(), key
    assert "Torque" in block and "KTH-SP2" in block


@pytest.mark.shared
def test_run_spread_default_rests_on_the_swf_within_habit_measurement():
    """run_log_sd = 0: the per-job walltime over-request already spreads runs inside a habit as much as the SWF
    traces do within (user, requested time, requested processors) groups (docs/synthetic.md has the command)."""
    fields = ["job", "submit", "wait", "run", "alloc_procs", "cpu_time", "used_mem_kb", "req_procs", "req_time",
              "req_mem_kb", "status", "user", "group", "executable", "queue", "partition", "preceding", "think"]
    got = {}
    for name in ("KTH-SP2-1996-2.1-cln", "HPC2N-2002-2.1-cln", "LLNL-Thunder-2007-1.1-cln", "CEA-Curie-2011-2.1-cln-b2"):
        d = pd.read_csv(trace("swf", f"{name}.swf.gz"), sep=r"\s+", comment=";", header=None, names=fields)
        c = d[(d["status"] == 1) & (d["run"] >= 60) & (d["req_time"] > 0)]
        g = np.log(c["run"]).groupby([c["user"], c["req_time"], c["req_procs"]])
        got[name.split("-")[0]] = round(float(g.std()[g.size() >= 10].median()), 2)
    assert got == {"KTH": 0.68, "HPC2N": 0.83, "LLNL": 0.79, "CEA": 0.65}
    assert SPREAD["run_log_sd"] == 0.0
