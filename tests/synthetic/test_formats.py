"""``reclaim generate --format``: the same month in each scheduler's format, read back to the same totals.

One small month (2,000 jobs, 3 days, no telemetry) is generated as sacct text, PBS daily logs, LSF ``lsb.acct``
and a Grid Engine ``accounting`` file.  Everything but the accounting file is the same byte for byte; each
accounting file, read by ``audit.ingest.read_inputs``, gives truth.json's totals (jobs, core-hours allocated and
used, memory GiB-hours allocated and peak, GPU-hours allocated, jobs per state) except where a format cannot
carry a field, named below with what it changes and why.  A reader that is not written yet (``read_*`` raising
NotImplementedError) skips its format's checks.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from audit.synthetic import FORMATS, generate

ROOT = Path(__file__).resolve().parents[2]
WEEK_CLUSTER = ROOT / "sample_traces" / "week.cluster.toml"
WEEK_PROFILE = ROOT / "sample_traces" / "week.profile.toml"
MONTH = {"jobs": 2000, "days": 3.0, "seed": 11, "write_telemetry": False}
TOTALS = ("core_hours_alloc", "core_hours_used", "mem_gib_hours_alloc", "mem_gib_hours_peak", "gpu_hours_alloc")

#: per format, how far each total may sit from truth.json (relative), and why where it is not exact
TOLERANCE = {
    "sacct": {"mem_gib_hours_peak": 0.005},  # the sacct reader takes the largest step; the truth adds the
                                             # concurrent batch shell and extern step (docs/synthetic.md)
    "pbs": {},
    "lsf": {},
    "sge": {"mem_gib_hours_peak": 1e-6},     # an OUT_OF_MEMORY job's maxvmem is raised to its h_vmem limit when
                                             # the recorded peak fell a few KiB short of it
}
EXACT = 1e-9   # truth.json rounds to six decimals
#: CPU time printed in whole seconds: sacct's TotalCPU from an hour up, PBS's resources_used.cput always; the
#: reader's core-hours used are then at most a second a job short
WHOLE_SECONDS = ("sacct", "pbs")
#: states a format cannot tell apart: the reader must read the first as the second
FORCED_MERGES = {
    "sacct": {}, "pbs": {}, "lsf": {},
    # Grid Engine records a preemption only as a kill by signal ("assumedly after job", 137)
    "sge": {"PREEMPTED": "FAILED"},
}
#: states a format carries only through a detail a reader may leave aside: read either way
OPTIONAL_MERGES = {
    "sacct": {},
    # PBS preempts by deleting (D record, requestor=Scheduler@…, Exit_status 271 as for qdel); a lost host is
    # JOB_EXEC_RERUN_MS_FAIL (-20), one of the negative JOB_EXEC codes a reader may lump with failures
    "pbs": {"PREEMPTED": "CANCELLED", "NODE_FAIL": "FAILED"},
    # TERM_REMOVE_HUNG_JOB (26): a job removed while its host was unavailable
    "lsf": {"NODE_FAIL": "FAILED"},
    # failed 21 ("in recognizing job": the execd of a restarted host no longer knows the job)
    "sge": {"NODE_FAIL": "FAILED"},
}


@pytest.fixture(scope="module")
def months(tmp_path_factory) -> dict:
    out = {}
    for fmt in FORMATS:
        d = tmp_path_factory.mktemp(fmt)
        generate(d, fmt=fmt, **MONTH)
        out[fmt] = d
    return out


def accounting_paths(fmt: str, d: Path) -> list[Path]:
    if fmt == "pbs":
        return sorted((d / "accounting").iterdir())
    return [d / {"sacct": "sacct.txt", "lsf": "lsb.acct", "sge": "accounting"}[fmt]]


def _files(d: Path) -> dict:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- the month is the same


def test_every_format_writes_the_same_month_but_for_its_accounting(months):
    files = {fmt: _files(d) for fmt, d in months.items()}
    accounting = {fmt: {p.relative_to(d).as_posix() for p in accounting_paths(fmt, d)} for fmt, d in months.items()}
    rest = {fmt: {k: v for k, v in f.items() if k not in accounting[fmt]} for fmt, f in files.items()}
    assert set(rest["sacct"]) == {"cluster.toml", "truth.json", "truth_jobs.csv"}
    for fmt in FORMATS:
        assert rest[fmt] == rest["sacct"], fmt
    assert accounting["lsf"] == {"lsb.acct"} and accounting["sge"] == {"accounting"}
    assert len(accounting["pbs"]) >= 3 and all(p.startswith("accounting/2") for p in accounting["pbs"])


def test_the_same_seed_writes_the_same_files(tmp_path):
    args = {"jobs": 300, "days": 1.0, "cluster_spec": WEEK_CLUSTER, "profile": WEEK_PROFILE, "seed": 4,
            "write_telemetry": False}
    for fmt in ("pbs", "lsf", "sge"):
        generate(tmp_path / f"{fmt}-a", fmt=fmt, **args)
        generate(tmp_path / f"{fmt}-b", fmt=fmt, **args)
        assert _files(tmp_path / f"{fmt}-a") == _files(tmp_path / f"{fmt}-b"), fmt


def test_a_run_in_another_format_leaves_no_stale_accounting(tmp_path):
    args = {"jobs": 200, "days": 1.0, "cluster_spec": WEEK_CLUSTER, "profile": WEEK_PROFILE, "seed": 2,
            "write_telemetry": False}
    generate(tmp_path, fmt="pbs", **args)
    assert (tmp_path / "accounting").is_dir()
    generate(tmp_path, fmt="sge", **args)
    assert (tmp_path / "accounting").is_file() and not (tmp_path / "sacct.txt").exists()
    generate(tmp_path, fmt="lsf", **args)
    assert not (tmp_path / "accounting").exists() and (tmp_path / "lsb.acct").is_file()
    generate(tmp_path, fmt="pbs", **args)
    assert not (tmp_path / "lsb.acct").exists()
    generate(tmp_path, fmt="sacct", **args)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster.toml", "sacct.txt", "truth.json", "truth_jobs.csv"]


def test_corrupt_lines_are_sacct_lines(tmp_path):
    with pytest.raises(ValueError, match="needs --format sacct"):
        generate(tmp_path, jobs=100, days=1.0, corrupt=3, fmt="lsf", write_telemetry=False)
    with pytest.raises(ValueError, match="--format must be one of sacct, pbs, lsf, sge"):
        generate(tmp_path, jobs=100, days=1.0, fmt="slurm", write_telemetry=False)


def test_cli_format_option(tmp_path):
    from audit.cli import main

    runner = CliRunner()
    r = runner.invoke(main, ["generate", "--out", str(tmp_path), "--jobs", "200", "--days", "1", "--no-telemetry",
                             "--cluster", str(WEEK_CLUSTER), "--profile", str(WEEK_PROFILE), "--format", "sge"])
    assert r.exit_code == 0, r.output
    assert str(tmp_path / "accounting") in r.output.splitlines()
    assert (tmp_path / "accounting").read_text().startswith("# Version: 8.1.9\n")
    r = runner.invoke(main, ["generate", "--out", str(tmp_path), "--format", "torque"])
    assert r.exit_code == 2 and "torque" in r.output


# ---------------------------------------------------------------- read back: the same totals


@pytest.fixture(scope="module")
def ingested(months) -> dict:
    """Per format: the canonical table, ledger and quarantine read by read_inputs, or why it could not be read."""
    from audit.ingest import read_inputs

    out = {}
    for fmt, d in months.items():
        try:
            out[fmt] = read_inputs(accounting_paths(fmt, d), fmt=fmt)
        except NotImplementedError:
            out[fmt] = f"read_{fmt} is not implemented yet"
    return out


def _result(ingested, fmt):
    r = ingested[fmt]
    if isinstance(r, str):
        pytest.skip(r)
    return r


def totals(jobs: pd.DataFrame) -> dict:
    """What was held (else what was asked, for a reader that fills only the request) times the elapsed time."""
    el = jobs["elapsed_s"].astype("float64").fillna(0)
    held = lambda a, r: jobs[a].astype("float64").fillna(jobs[r].astype("float64")).fillna(0)  # noqa: E731
    return {
        "jobs": len(jobs),
        "core_hours_alloc": float((held("alloc_cpus", "req_cpus") * el).sum() / 3600),
        "core_hours_used": float(jobs["cpu_used_s"].astype("float64").fillna(0).sum() / 3600),
        "mem_gib_hours_alloc": float((held("alloc_mem_bytes", "req_mem_bytes") * el).sum() / 2**30 / 3600),
        "mem_gib_hours_peak": float((jobs["mem_peak_bytes"].astype("float64").fillna(0) * el).sum() / 2**30 / 3600),
        "gpu_hours_alloc": float((held("alloc_gpus", "req_gpus") * el).sum() / 3600),
        "limit_hours": float(jobs["time_limit_s"].astype("float64").fillna(0).sum() / 3600),
    }


def _truth(d: Path) -> tuple[dict, pd.DataFrame]:
    return json.loads((d / "truth.json").read_text()), pd.read_csv(d / "truth_jobs.csv")


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_reads_clean(ingested, fmt):
    r = _result(ingested, fmt)
    assert r.ledger["balanced"] and len(r.quarantine) == 0
    assert r.ledger["totals"]["quarantined"] == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_gives_the_truths_totals(ingested, months, fmt):
    r = _result(ingested, fmt)
    truth, per_job = _truth(months[fmt])
    got = totals(r.jobs)
    pending = int(((per_job["state"] == "CANCELLED") & (per_job["start"] < 0)).sum())
    # Grid Engine writes an accounting record when a job finishes: a job deleted while it waited has none
    assert got["jobs"] == truth["totals"]["jobs"] - (pending if fmt == "sge" else 0)
    # every format carries the time limit of each job that ran (sacct's Timelimit, PBS's walltime, LSF's runLimit,
    # h_rt); a job deleted while queued has none in PBS (its Q and D records name no resources) nor Grid Engine (no
    # record at all)
    waited = (per_job["state"] == "CANCELLED") & (per_job["start"] < 0)
    listed = per_job[~waited] if fmt in ("pbs", "sge") else per_job
    assert got["limit_hours"] == pytest.approx(float(listed["limit_s"].sum()) / 3600, rel=EXACT)
    for key in TOTALS:
        if fmt in WHOLE_SECONDS and key == "core_hours_used":
            ran = int((per_job["start"] >= 0).sum())
            assert 0 <= truth["totals"][key] - got[key] <= ran / 3600 + 1e-6
            continue
        assert got[key] == pytest.approx(truth["totals"][key], rel=TOLERANCE[fmt].get(key, EXACT)), key


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_gives_the_truths_states(ingested, months, fmt):
    r = _result(ingested, fmt)
    truth, per_job = _truth(months[fmt])
    got = r.jobs["state"].astype(str).value_counts().to_dict()
    want = dict(truth["state_counts"])
    ran = per_job["start"] >= 0
    if fmt == "sge":
        want["CANCELLED"] -= int(((per_job["state"] == "CANCELLED") & ~ran).sum())
    # jobs a reader may read in another state from the evidence the format leaves: {state read: jobs per true state}
    late = ran & (per_job["elapsed_s"] >= per_job["limit_s"] - 1)
    killed = per_job["state"].isin(["FAILED", "PREEMPTED", "CANCELLED"])
    near = {}
    if fmt == "sge":
        # Grid Engine records no reason for a kill: a job that failed or was deleted with its memory peak near its
        # h_vmem request may be read as killed at that limit (at most those whose peak reached 95 % of it), one
        # whose run reached its h_rt as killed at that one
        close = ran & (per_job["mem_peak_bytes"] >= 0.95 * per_job["alloc_mem_bytes"])
        near = {"OUT_OF_MEMORY": per_job["state"][close & killed], "TIMEOUT": per_job["state"][late & killed]}
    if fmt == "pbs":
        # Exit_status 271 (SIGTERM) is qdel's, and older PBS's walltime kill: a job deleted or preempted once its
        # run reached its walltime may be read as TIMEOUT
        near = {"TIMEOUT": per_job["state"][late & per_job["state"].isin(["CANCELLED", "PREEMPTED"])]}
    near = {t: v.value_counts().to_dict() for t, v in near.items()}
    optional = list(OPTIONAL_MERGES[fmt].items())
    combos = [FORCED_MERGES[fmt] | dict(c) for k in range(len(optional) + 1) for c in itertools.combinations(optional, k)]
    allowed = [(_merge(want, c), {t: _merge(v, c) for t, v in near.items()}) for c in combos]
    assert any(_matches(got, w, nr) for w, nr in allowed), (got, allowed)


def _merge(counts: dict, merges: dict) -> dict:
    out = dict(counts)
    for src, dst in merges.items():
        if src in out:
            out[dst] = out.get(dst, 0) + out.pop(src)
    return out


def _matches(got: dict, want: dict, near: dict) -> bool:
    """``got`` is ``want`` with some jobs moved to the states ``near`` names, at most ``near[state read][true
    state]`` of each."""
    states = set(got) | set(want)
    moved = {t: got.get(t, 0) - want.get(t, 0) for t in near}
    short = {s: want.get(s, 0) - got.get(s, 0) for s in states - set(near)}
    room = {s: sum(v.get(s, 0) for v in near.values()) for s in short}
    return (sum(moved.values()) == sum(short.values())
            and all(0 <= m <= sum(near[t].values()) for t, m in moved.items())
            and all(0 <= v <= room[s] for s, v in short.items()))


def test_the_formats_agree_with_each_other(ingested, months):
    """Core- and GPU-hours allocated are the same from every format that reads (Grid Engine's missing jobs held
    nothing); so is the peak memory from PBS and LSF, which both record the job's summed peak exactly."""
    readable = {fmt: totals(r.jobs) for fmt, r in ingested.items() if not isinstance(r, str)}
    if len(readable) < 2:
        pytest.skip("fewer than two formats can be read yet: " + ", ".join(
            r for r in ingested.values() if isinstance(r, str)))
    for a, b in itertools.combinations(sorted(readable), 2):
        for key in ("core_hours_alloc", "gpu_hours_alloc", "mem_gib_hours_alloc"):
            assert readable[a][key] == pytest.approx(readable[b][key], rel=1e-9), (a, b, key)
    if {"pbs", "lsf"} <= set(readable):
        assert readable["pbs"]["mem_gib_hours_peak"] == pytest.approx(readable["lsf"]["mem_gib_hours_peak"], rel=1e-12)


def test_gpu_jobs_are_in_the_month(months):
    """The month the comparisons run on has what they compare: GPU jobs, multi-node jobs, every state."""
    truth, per_job = _truth(months["sacct"])
    assert truth["totals"]["gpu_hours_alloc"] > 0
    assert {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY"} <= set(truth["state_counts"])
    assert ((per_job["state"] == "CANCELLED") & (per_job["start"] < 0)).any()
    sge = (months["sge"] / "accounting").read_text()
    assert ":1." in sge and np.any([" -pe mpi " in ln for ln in sge.splitlines()])
