"""The synthetic trace generator: determinism, real-format details, calibrated distributions, planted truth."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit.synthetic import generate
from audit.synthetic.cluster import compress_hostlist, load_cluster
from audit.synthetic.profile import load_profile
from audit.units import expand_hostlist, parse_reqmem
from audit.units import parse_duration as _parse_duration

from ..conftest import trace

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_traces" / "week"
WEEK_CLUSTER = ROOT / "sample_traces" / "week.cluster.toml"
WEEK_PROFILE = ROOT / "sample_traces" / "week.profile.toml"
#: the command recorded in sample_traces/README.md
WEEK_ARGS = {"jobs": 2500, "days": 7.0, "cluster_spec": WEEK_CLUSTER, "profile": WEEK_PROFILE, "seed": 7}
CHECKS = load_profile()["checks"]


def parse_duration(s: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Durations as float seconds and a bad mask, both indexed like ``s``."""
    val, bad = _parse_duration(s)
    return (pd.Series(np.asarray(val, dtype="float64"), index=s.index),
            pd.Series(np.asarray(bad, dtype=bool), index=s.index))


def _files(d: Path) -> dict:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _sacct(d: Path) -> pd.DataFrame:
    return pd.read_csv(d / "sacct.txt", sep="|", dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def week(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("week")
    generate(out, **WEEK_ARGS)
    return out


# ---------------------------------------------------------------- determinism


def test_same_seed_byte_identical_different_seed_differs(tmp_path):
    args = {"jobs": 400, "days": 2.0, "cluster_spec": WEEK_CLUSTER, "profile": WEEK_PROFILE}
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate(a, seed=3, **args)
    generate(b, seed=3, **args)
    generate(c, seed=4, **args)
    fa, fb, fc = _files(a), _files(b), _files(c)
    assert fa.keys() == fb.keys() and all(fa[k] == fb[k] for k in fa)
    assert fa["sacct.txt"] != fc["sacct.txt"]
    assert fa["truth.json"] != fc["truth.json"]


def test_rerun_into_the_same_directory_leaves_no_stale_files(tmp_path):
    args = {"jobs": 200, "days": 1.0, "cluster_spec": WEEK_CLUSTER, "profile": WEEK_PROFILE, "seed": 2}
    generate(tmp_path, corrupt=3, telemetry_interval_s=600, **args)
    generate(tmp_path / "fresh", **args)
    written = generate(tmp_path, **args)
    assert not (tmp_path / "corrupted_lines.csv").exists()
    assert sorted(p.name for p in written) == sorted(p.name for p in generate(tmp_path / "fresh", **args))
    assert _files(tmp_path / "fresh") == {k: v for k, v in _files(tmp_path).items() if not k.startswith("fresh/")}


def test_committed_sample_is_what_the_readme_command_makes(week):
    if not SAMPLE.exists():
        pytest.skip("sample_traces/week not present")
    assert _files(SAMPLE) == _files(week)
    readme = (ROOT / "sample_traces" / "README.md").read_text()
    assert "--jobs 2500 --days 7" in readme and "--seed 7" in readme


def test_week_sample_is_small():
    if not SAMPLE.exists():
        pytest.skip("sample_traces/week not present")
    total = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert total < 6 * 2**20


# ---------------------------------------------------------------- real formats


def test_sacct_text_has_the_real_shapes(week):
    df = _sacct(week)
    header = (week / "sacct.txt").read_text().splitlines()[0]
    assert header.startswith("JobID|JobIDRaw|Cluster|Partition|QOS|Account|") and header.endswith("JobName|AdminComment")
    is_step = df["JobID"].str.contains(r"\.", regex=True)
    jobs, steps = df[~is_step], df[is_step]
    # every terminal state, CANCELLED with the uid that cancelled
    states = set(jobs["State"].str.replace(r" by \d+$", "", regex=True))
    assert {"COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL", "PREEMPTED"} <= states
    assert jobs["State"].str.fullmatch(r"CANCELLED by \d+").any()
    # step kinds and usage only on steps; MaxRSS empty on allocation lines
    suffix = steps["JobID"].str.extract(r"\.(\w+)$")[0]
    assert {"batch", "extern", "0", "1"} <= set(suffix)
    assert (jobs["MaxRSS"] == "").all() and (steps["MaxRSS"].str.fullmatch(r"\d+K")).all()
    # arrays (JobIDRaw differs from JobID) and het jobs
    arr = jobs[jobs["JobID"].str.contains("_")]
    assert len(arr) and (arr["JobID"] != arr["JobIDRaw"]).all()
    assert jobs["JobID"].str.fullmatch(r"\d+\+0").any() and jobs["JobID"].str.fullmatch(r"\d+\+1").any()
    # ReqMem in its three forms, all parseable
    rm = parse_reqmem(jobs["ReqMem"])
    assert not np.asarray(rm["bad"]).any() and {"c", "n", ""} <= set(pd.Series(rm["per"]).dropna())
    # typed GPU TRES beside the plain count
    assert jobs["AllocTRES"].str.contains(r"gres/gpu:a100=\d+,gres/gpu=\d+", regex=True).any()
    # durations: TotalCPU both as MM:SS.mmm and as [D-]HH:MM:SS; none unparseable
    assert jobs["TotalCPU"].str.fullmatch(r"\d\d:\d\d\.\d{3}").any()
    assert jobs["TotalCPU"].str.fullmatch(r"(\d+-)?\d\d:\d\d:\d\d").any()
    for col in ("Elapsed", "Timelimit", "TotalCPU"):
        assert not parse_duration(df[col])[1].any(), col
    # UTC ISO times
    ran = jobs[jobs["Start"] != "None"]
    assert ran["Start"].str.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d").all()
    # jobstats summaries for a share of jobs
    share = jobs["AdminComment"].str.startswith("JS1:").mean()
    assert 0.2 < share < 0.4


def test_allocation_totalcpu_is_the_sum_of_its_steps(week):
    df = _sacct(week)
    secs = parse_duration(df["TotalCPU"])[0].astype(float)
    key = df["JobID"].str.replace(r"\.\w+$", "", regex=True)
    is_step = df["JobID"].str.contains(r"\.", regex=True)
    by_steps = secs[is_step].groupby(key[is_step]).sum()
    on_job = pd.Series(secs[~is_step].to_numpy(), index=key[~is_step])
    joined = on_job.loc[by_steps.index]
    # sacct prints whole seconds above an hour: allow one second per job
    assert np.all(np.abs(joined.to_numpy() - by_steps.to_numpy()) <= 1.0 + 1e-6)


def test_no_line_uses_more_cpu_than_its_cores_over_its_elapsed(week):
    df = _sacct(week)
    cpu = parse_duration(df["TotalCPU"])[0]
    el = parse_duration(df["Elapsed"])[0]
    held = df["NCPUS"].astype(float) * el
    assert (cpu <= held + 1e-9).all()


def test_times_are_consistent(week):
    df = _sacct(week)
    ran = df[df["Start"] != "None"]
    start, end = pd.to_datetime(ran["Start"]), pd.to_datetime(ran["End"])
    el = parse_duration(ran["Elapsed"])[0]
    assert ((end - start).dt.total_seconds() == el).all()
    assert (pd.to_datetime(ran["Submit"]) <= start).all()
    key = ran["JobID"].str.replace(r"\.\w+$", "", regex=True)
    is_step = ran["JobID"].str.contains(r"\.", regex=True)
    job_start = start[~is_step].groupby(key[~is_step]).first()
    job_end = end[~is_step].groupby(key[~is_step]).first()
    assert (start[is_step] >= job_start.loc[key[is_step]].to_numpy()).all()
    assert (end[is_step] <= job_end.loc[key[is_step]].to_numpy()).all()


def test_node_lists_match_the_written_cluster_shape(week):
    df = _sacct(week)
    cluster = load_cluster(week / "cluster.toml")
    known = set(cluster.node_name.tolist())
    lists = df.loc[df["NodeList"] != "None assigned", "NodeList"].drop_duplicates()
    names = {n for nl in lists for n in expand_hostlist(nl)}
    assert names <= known
    jobs = df[~df["JobID"].str.contains(r"\.", regex=True) & (df["NodeList"] != "None assigned")]
    counts = jobs["NodeList"].map(lambda s: len(expand_hostlist(s)))
    assert (counts == jobs["NNodes"].astype(int)).all()


def test_hostlist_compression_hand_case():
    assert compress_hostlist(["cn003", "cn001", "cn002", "cn007", "gh001"]) == "cn[001-003,007],gh001"
    assert expand_hostlist(compress_hostlist(["a01", "a02", "a05"])) == ["a01", "a02", "a05"]


def test_gpu_index_record_and_idle_gpus_report(week):
    idx = pd.read_csv(week / "telemetry" / "gpu_index.csv", dtype={"gpu_index": int})
    truth = pd.read_csv(week / "truth_jobs.csv")
    gpu_jobs = truth[truth["alloc_gpus"] > 0]
    held = idx.groupby("job_id").size()
    assert (held.reindex(gpu_jobs["job_id"]).to_numpy() == gpu_jobs["alloc_gpus"].to_numpy()).all()
    files = sorted((week / "telemetry").glob("DCGM_FI_DEV_GPU_UTIL_*.json"))
    doc = json.loads(files[0].read_text())
    assert doc["status"] == "success" and doc["data"]["resultType"] == "matrix"
    cluster = load_cluster(week / "cluster.toml")
    result = doc["data"]["result"]
    assert len(result) == int(cluster.node_gpus.sum())  # every GPU reports, held or not
    m = result[0]["metric"]
    assert {"Hostname", "gpu", "UUID", "modelName"} <= set(m) and m["UUID"].startswith("GPU-")


def _util_samples(week: Path) -> pd.DataFrame:
    rows = []
    for f in sorted((week / "telemetry").glob("DCGM_FI_DEV_GPU_UTIL_*.json")):
        for series in json.loads(f.read_text())["data"]["result"]:
            v = np.array(series["values"], dtype=object)
            rows.append(pd.DataFrame({"node": series["metric"]["Hostname"], "gpu_index": int(series["metric"]["gpu"]),
                                      "t": v[:, 0].astype(np.int64), "util": v[:, 1].astype(float)}))
    return pd.concat(rows, ignore_index=True)


def test_telemetry_joined_by_node_gpu_time_reproduces_per_job_truth(week):
    """The written DCGM series, joined to jobs by node + GPU index + [start, end), give truth_jobs' means."""
    s = _util_samples(week)
    idx = pd.read_csv(week / "telemetry" / "gpu_index.csv")
    truth = pd.read_csv(week / "truth_jobs.csv")
    holds = idx.merge(truth[["job_id", "start", "end", "gpu_util_mean", "gpu_samples"]], on="job_id")
    j = s.merge(holds, on=["node", "gpu_index"])
    j = j[(j["t"] >= j["start"]) & (j["t"] < j["end"])]
    got = j.groupby("job_id").agg(util=("util", "mean"), n=("util", "size"))
    ref = truth.set_index("job_id").loc[got.index]
    assert (got["n"] == ref["gpu_samples"]).all()
    assert np.allclose(got["util"] / 100.0, ref["gpu_util_mean"], atol=1e-6)
    # samples outside every job are idle
    held_keys = set(zip(j["node"], j["gpu_index"], j["t"], strict=True))
    free = s[[k not in held_keys for k in zip(s["node"], s["gpu_index"], s["t"], strict=True)]]
    assert (free["util"] == 0).all()


def test_fb_used_series_give_the_per_job_gpu_memory_peaks(week):
    rows = []
    for f in sorted((week / "telemetry").glob("DCGM_FI_DEV_FB_USED_*.json")):
        for series in json.loads(f.read_text())["data"]["result"]:
            v = np.array(series["values"], dtype=object)
            rows.append(pd.DataFrame({"node": series["metric"]["Hostname"], "gpu_index": int(series["metric"]["gpu"]),
                                      "t": v[:, 0].astype(np.int64), "mib": v[:, 1].astype(np.int64)}))
    s = pd.concat(rows, ignore_index=True)
    idx = pd.read_csv(week / "telemetry" / "gpu_index.csv")
    truth = pd.read_csv(week / "truth_jobs.csv")
    j = s.merge(idx.merge(truth[["job_id", "start", "end"]], on="job_id"), on=["node", "gpu_index"])
    j = j[(j["t"] >= j["start"]) & (j["t"] < j["end"])]
    per_gpu = j.groupby(["job_id", "node", "gpu_index"])["mib"].max()
    got = per_gpu.groupby("job_id").sum() * 2**20
    ref = truth.set_index("job_id").loc[got.index, "gpu_mem_peak_bytes"]
    assert (got == ref).all()
    spec = tomllib.loads((week / "cluster.toml").read_text())
    card = max(g.get("gpu_mem_gib", 0) for g in spec["node_groups"]) * 1024
    assert s["mib"].max() <= card


def test_placement_never_oversubscribes_cores_or_gpus(week):
    df = _sacct(week)
    jobs = df[~df["JobID"].str.contains(r"\.", regex=True) & (df["NodeList"] != "None assigned")]
    truth = pd.read_csv(week / "truth_jobs.csv").set_index("job_id").loc[jobs["JobID"]]
    per_node = truth["alloc_cpus"].to_numpy() // jobs["NNodes"].astype(int).to_numpy()
    ev = []
    for nl, c, s, e in zip(jobs["NodeList"], per_node, truth["start"], truth["end"], strict=True):
        for node in expand_hostlist(nl):
            ev.append((node, s, c))
            ev.append((node, e, -c))
    ev = pd.DataFrame(ev, columns=["node", "t", "d"]).sort_values(["node", "t", "d"])
    ev["load"] = ev.groupby("node")["d"].cumsum()
    cap = load_cluster(week / "cluster.toml")
    cpus = dict(zip(cap.node_name.tolist(), cap.node_cpus.tolist(), strict=True))
    assert (ev["load"] <= ev["node"].map(cpus)).all()
    idx = pd.read_csv(week / "telemetry" / "gpu_index.csv").merge(
        pd.read_csv(week / "truth_jobs.csv")[["job_id", "start", "end"]], on="job_id")
    idx = idx.sort_values(["node", "gpu_index", "start"])
    prev_end = idx.groupby(["node", "gpu_index"])["end"].shift()
    assert (prev_end.isna() | (prev_end <= idx["start"])).all()


def test_arrival_intensity_hand_values():
    from audit.synthetic.arrivals import intensity

    kw = {"peak_hour": 13.0, "peak_to_trough": 6.0, "weekend_factor": 0.5, "weekday0": 0}
    monday_peak, monday_trough = intensity(np.array([13 * 3600.0, 1 * 3600.0]), **kw)
    assert monday_peak / monday_trough == pytest.approx(6.0)
    saturday_peak = intensity(np.array([5 * 86400 + 13 * 3600.0]), **kw)[0]
    assert saturday_peak / monday_peak == pytest.approx(0.5)


def test_submissions_follow_the_day_and_week_cycle(week):
    df = _sacct(week)
    jobs = df[~df["JobID"].str.contains(r"[._+]", regex=True)]  # single submissions only
    t = pd.to_datetime(jobs["Submit"])
    hour = t.dt.hour
    day_peak = hour.between(11, 15).sum()
    night = ((hour >= 23) | (hour <= 3)).sum()
    assert day_peak / max(night, 1) > 2.5
    weekend = t.dt.day_of_week >= 5
    ratio = (weekend.sum() / 2) / ((~weekend).sum() / 5)
    assert 0.3 < ratio < 0.75


# ---------------------------------------------------------------- calibrated distributions


def _in(value: float, rng_: list) -> bool:
    return rng_[0] <= value <= rng_[1]


def test_request_use_ratios_and_state_shares_land_in_profile_ranges(week):
    df = _sacct(week)
    jobs = df[~df["JobID"].str.contains(r"\.", regex=True)]
    el = parse_duration(jobs["Elapsed"])[0].astype(float)
    lim = parse_duration(jobs["Timelimit"])[0].astype(float)
    done = (jobs["State"] == "COMPLETED") & (el >= 60)
    ratio = float((lim[done] / el[done]).median())
    assert _in(ratio, CHECKS["walltime_overrequest_median"]), ratio
    completed = float((jobs["State"] == "COMPLETED").mean())
    assert _in(completed, CHECKS["completed_share"]), completed
    truth = pd.read_csv(week / "truth_jobs.csv")
    c = truth[(truth["state"] == "COMPLETED") & (truth["mem_peak_bytes"] > 0)]
    mem_ratio = float((c["alloc_mem_bytes"] / c["mem_peak_bytes"]).median())
    assert _in(mem_ratio, CHECKS["memory_overrequest_median"]), mem_ratio
    ran = truth[truth["elapsed_s"] > 0]
    used = float(ran["cpu_true_s"].sum() / (ran["alloc_cpus"] * ran["elapsed_s"]).sum())
    assert _in(used, CHECKS["cpu_used_share"]), used
    # requests cluster on round values: the top 6 limits hold most jobs
    top = jobs["Timelimit"].value_counts(normalize=True).head(6).sum()
    assert top > 0.5


def test_users_repeat_their_habitual_request(week):
    """Per user and partition, the commonest exact request covers about ``habit_repeat`` of the jobs."""
    df = _sacct(week)
    jobs = df[~df["JobID"].str.contains(r"[._]", regex=True)]   # one line per submission
    req = jobs["NCPUS"] + "|" + jobs["ReqMem"] + "|" + jobs["Timelimit"] + "|" + jobs["ReqTRES"]
    groups = req.groupby([jobs["User"], jobs["Partition"]])
    modal = groups.agg(lambda s: s.value_counts().iloc[0] / len(s))[groups.size() >= 10]
    habit = load_profile(WEEK_PROFILE)["population"]["habit_repeat"]
    assert len(modal) >= 10
    assert habit - 0.15 <= modal.median() <= habit + 0.15


def test_state_shares_match_the_profile(week):
    """Each terminal state's share is within 4 binomial standard deviations of the profile's share."""
    shares = load_profile(WEEK_PROFILE)["states"]
    truth = pd.read_csv(week / "truth_jobs.csv")
    n = len(truth)
    for state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED"):
        p = shares[state]
        got = float((truth["state"] == state).mean())
        assert abs(got - p) <= 4 * np.sqrt(p * (1 - p) / n) + 1e-9, (state, got, p)


def test_gpu_utilisation_is_low_and_bimodal(week):
    truth = pd.read_csv(week / "truth_jobs.csv")
    g = truth[truth["alloc_gpus"] > 0]
    low, high = (g["gpu_util_mean"] < 0.10).mean(), (g["gpu_util_mean"] > 0.50).mean()
    assert low > 0.3 and high > 0.15          # two modes
    mid = ((g["gpu_util_mean"] > 0.3) & (g["gpu_util_mean"] < 0.5)).mean()
    assert mid < min(low, high)
    used = float((g["alloc_gpus"] * g["elapsed_s"] * g["gpu_util_mean"]).sum() / (g["alloc_gpus"] * g["elapsed_s"]).sum())
    assert _in(used, CHECKS["gpu_used_share"]), used
    # sample level, from the written series: the share of held-GPU samples at 0 %
    s = _util_samples(week)
    idx = pd.read_csv(week / "telemetry" / "gpu_index.csv").merge(truth[["job_id", "start", "end"]], on="job_id")
    held = s.merge(idx, on=["node", "gpu_index"])
    held = held[(held["t"] >= held["start"]) & (held["t"] < held["end"])]
    zero = float((held["util"] < 1).mean())
    assert _in(zero, CHECKS["gpu_util_zero_share"]), zero
    busy = held.loc[held["util"] >= 1, "util"]
    assert 10 < busy.quantile(0.25) < busy.median() < busy.quantile(0.75) <= 100


def test_occupancy_of_cpu_and_gpu_partitions_in_range(week):
    """Occupancy in the binding resource (cores, memory or GPUs), from truth_jobs and cluster.toml."""
    truth = pd.read_csv(week / "truth_jobs.csv")
    spec = tomllib.loads((week / "cluster.toml").read_text())
    meta = json.loads((week / "truth.json").read_text())["generator"]
    t0, t1 = meta["window_start_epoch"], meta["window_end_epoch"]
    kind = {p["name"]: p["kind"] for p in spec["partitions"]}
    cap: dict = {}
    for g in spec["node_groups"]:
        c = cap.setdefault(kind[g["partition"]], {"cores": 0, "memory": 0, "gpus": 0})
        c["cores"] += g["count"] * g["cpus"]
        c["memory"] += g["count"] * g["mem_bytes"]
        c["gpus"] += g["count"] * g["gpus"]
    ran = truth[truth["start"] >= 0]
    inside = (np.minimum(ran["end"], t1) - np.maximum(ran["start"], t0)).clip(lower=0)
    k = ran["partition"].map(kind)
    for name in ("cpu", "gpu"):
        on = k == name
        used = {"cores": (ran["alloc_cpus"] * inside)[on].sum(), "memory": (ran["alloc_mem_bytes"] * inside)[on].sum(),
                "gpus": (ran["alloc_gpus"] * inside)[on].sum()}
        dominant = max(used[d] / (cap[name][d] * (t1 - t0)) for d in used if cap[name][d])
        assert _in(dominant, CHECKS["occupancy"]), (name, dominant)
    # queues form: some jobs wait
    df = _sacct(week)
    jobs = df[~df["JobID"].str.contains(r"\.", regex=True) & (df["Start"] != "None")]
    wait = pd.to_datetime(jobs["Start"]) - pd.to_datetime(jobs["Submit"])
    assert (wait > pd.Timedelta(minutes=30)).mean() > 0.05


# ---------------------------------------------------------------- planted truth


def test_jobstats_summaries_carry_the_planted_use(week):
    from audit.readers.jobstats import parse_jobstats, summarise

    df = _sacct(week)
    jobs = df[df["AdminComment"].str.startswith("JS1:") & (df["AdminComment"] != "JS1:Short")]
    truth = pd.read_csv(week / "truth_jobs.csv").set_index("job_id")
    for _, row in jobs.head(200).iterrows():
        s = summarise(parse_jobstats(row["AdminComment"]))
        t = truth.loc[row["JobID"]]
        assert s["mem_peak_bytes"] == t["mem_peak_bytes"]
        assert abs(s["cpu_used_s"] - t["cpu_used_s"]) < 0.01 * len(expand_hostlist(row["NodeList"]))


def test_truth_totals_are_the_sum_of_truth_jobs(week):
    t = json.loads((week / "truth.json").read_text())
    jobs = pd.read_csv(week / "truth_jobs.csv")
    assert t["totals"]["jobs"] == len(jobs) == WEEK_ARGS["jobs"]
    core = (jobs["alloc_cpus"] * jobs["elapsed_s"]).sum() / 3600
    assert t["totals"]["core_hours_alloc"] == pytest.approx(core, rel=1e-9)
    acc = sum(a["core_hours_alloc"] for a in t["per_account"].values())
    assert acc == pytest.approx(core, rel=1e-9)
    split = t["gpu_by_usage_source"]
    for key in ("gpu_hours_alloc", "gpu_hours_used"):
        assert split["jobstats"][key] + split["telemetry_only"][key] == pytest.approx(t["totals"][key], rel=1e-9)
    failed = jobs[jobs["state"] == "TIMEOUT"]
    assert t["failed_hours_by_state"]["TIMEOUT"] == pytest.approx(
        (failed["alloc_cpus"] * failed["elapsed_s"]).sum() / 3600, rel=1e-9)


def test_ingests_balanced_and_matches_truth(week):
    read_sacct = pytest.importorskip("audit.readers.sacct.text").read_sacct
    r = read_sacct(week / "sacct.txt")
    assert r.ledger.balanced and r.ledger.quarantined == 0 and len(r.quarantine) == 0
    j = r.jobs
    truth = json.loads((week / "truth.json").read_text())["totals"]
    el = j["elapsed_s"].astype("float64").fillna(0)
    ours = {
        "core_hours_alloc": (j["alloc_cpus"].astype("float64") * el).sum() / 3600,
        "core_hours_used": j["cpu_used_s"].astype("float64").fillna(0).sum() / 3600,
        "mem_gib_hours_alloc": (j["alloc_mem_bytes"].astype("float64") * el).sum() / 2**30 / 3600,
        "mem_gib_hours_peak": (j["mem_peak_bytes"].astype("float64").fillna(0) * el).sum() / 2**30 / 3600,
        "gpu_hours_alloc": (j["alloc_gpus"].astype("float64").fillna(0) * el).sum() / 3600,
    }
    for key, value in ours.items():
        assert value == pytest.approx(truth[key], rel=0.005), key
    # the planted artefacts are the ones the reader flags
    jobs = pd.read_csv(week / "truth_jobs.csv")
    cav = j["caveats"].fillna("")
    assert cav.str.contains("totalcpu_zero").sum() == (jobs["totalcpu_zero"] & (jobs["elapsed_s"] > 60)).sum() > 0
    assert cav.str.contains("jobstats").sum() == (jobs["jobstats"] & (jobs["elapsed_s"] >= 60)).sum() > 0


def test_corrupted_lines_all_land_in_quarantine(tmp_path):
    read_sacct = pytest.importorskip("audit.readers.sacct.text").read_sacct
    out = tmp_path / "c"
    generate(out, jobs=500, days=2.0, cluster_spec=WEEK_CLUSTER, profile=WEEK_PROFILE, seed=5, corrupt=17)
    listed = pd.read_csv(out / "corrupted_lines.csv")
    assert len(listed) == 17 and listed["line"].is_unique
    assert set(listed["kind"]) == {"truncated", "bad_duration", "bad_memory_unit", "wrong_field_count"}
    r = read_sacct(out / "sacct.txt")
    assert r.ledger.balanced and r.ledger.quarantined == 17
    assert sorted(row[1] for row in r.quarantine.rows) == sorted(listed["line"])


# ---------------------------------------------------------------- inputs


def test_profile_override_and_validation(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text("[telemetry]\ninterval_s = 60\n")
    assert load_profile(p)["telemetry"]["interval_s"] == 60
    p.write_text("[telemetry]\nintervall_s = 60\n")
    with pytest.raises(ValueError, match=r"p\.toml: unknown profile key 'telemetry\.intervall_s'"):
        load_profile(p)
    p.write_text("[states]\nCOMPLETED = 0.9\n")
    with pytest.raises(ValueError, match="states shares must sum to 1"):
        load_profile(p)
    p.write_text("[cpu]\ncores_weights = [1.0]\n")
    with pytest.raises(ValueError, match="cpu.cores and cpu.cores_weights"):
        load_profile(p)


def test_cluster_validation(tmp_path):
    c = tmp_path / "c.toml"
    c.write_text('[[partitions]]\nname = "a"\nkind = "cpu"\nmax_time = "1-00:00:00"\n'
                 '[[node_groups]]\nname = "x"\npartition = "b"\ncount = 2\ncpus = 4\nmem_gib = 8\n')
    with pytest.raises(ValueError, match=r"node_groups\[0\]: partition 'b' is not declared"):
        load_cluster(c)


def test_default_profile_cites_its_sources():
    text = (ROOT / "audit" / "synthetic" / "profile.toml").read_text()
    for needle in ("KTH-SP2", "HPC2N", "GenTD26", "measured", "chosen"):
        assert needle in text


# ---------------------------------------------------------------- the profile's measured defaults


@pytest.mark.shared
def test_walltime_default_is_the_kth_sp2_measurement():
    from audit.readers.swf import read_swf

    jobs = read_swf(trace("swf", "KTH-SP2-1996-2.1-cln.swf.gz")).jobs
    tl, el = jobs["time_limit_s"].astype("float64"), jobs["elapsed_s"].astype("float64")
    ok = (tl > 0) & (el >= 60) & (jobs["state"].astype(object) == "COMPLETED")
    ratio = (tl[ok] / el[ok]).to_numpy()
    wt = load_profile()["walltime"]
    assert np.median(ratio) == pytest.approx(wt["overrequest_median"], rel=0.01)
    assert np.log(ratio).std() == pytest.approx(wt["overrequest_log_sd"], abs=0.01)


@pytest.mark.shared
def test_gpu_defaults_are_the_gentd26_measurements():
    import tarfile

    def load(name):
        with tarfile.open(trace("k8s", "alibaba-genai-2026", f"{name}.tar.gz")) as tar:
            return pd.read_csv(tar.extractfile(tar.getmembers()[0]))

    duty = load("pod_gpu_duty_cycle_anon")
    v = duty["value"]
    gu = load_profile()["gpu_util"]
    per_pod_zero = (v < 1).groupby(duty["container_ip"]).mean()
    assert per_pod_zero.median() == pytest.approx(gu["bursty_zero_share"], abs=0.005)
    logs = np.log(v[v >= 1])
    assert logs.mean() == pytest.approx(gu["bursty_log_mean"], abs=0.005)
    assert logs.std() == pytest.approx(gu["bursty_log_sd"], abs=0.005)
    assert (per_pod_zero > 0.99).mean() == pytest.approx(gu["class_weights"]["idle"], abs=0.001)
    mem = load("pod_gpu_memory_used_bytes_anon")
    peak = mem.groupby("container_ip")["value"].max()
    share = peak / mem["value"].max()
    gm = load_profile()["gpu_memory"]
    assert np.log(share[share > 0]).mean() == pytest.approx(gm["peak_share_log_mean"], abs=0.01)
    assert np.log(share[share > 0]).std() == pytest.approx(gm["peak_share_log_sd"], abs=0.01)
    ratio = mem.groupby("container_ip")["value"].mean() / peak
    assert ratio.median() == pytest.approx(gm["mean_to_peak"], abs=0.005)
