"""FIFO and EASY replays of real Parallel Workloads Archive traces against the reference mean waits in
../shared/traces/PROVENANCE.md (one pool of P processors; procs = field 8 else field 5; wider jobs
dropped; never killed at the requested time; the scheduler sees field 9; order by submit, job number).

FIFO must match within 0.1 %, EASY within 1 %.  Our EASY computes the extra processors from the
jobs released up to the one at which the head fits; releasing every job that ends at the shadow time
(``release_ties=True``) is a legitimate reading of the textbook too and moves KTH-SP2 by about 2 %,
which is the size of tie-breaking differences between implementations.
"""

from pathlib import Path

import pytest

from simulator import EASY, FIFO, Pool, Simulator, metrics, replay_as_logged, wait_gap

TRACES = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "swf"

REFERENCE = {
    # file, P: FIFO mean wait, EASY mean wait, logged mean wait (seconds)
    "kth": ("KTH-SP2-1996-2.1-cln.swf.gz", 100, 218_832.1, 6_427.5, 15_347.8),
    "hpc2n": ("HPC2N-2002-2.1-cln.swf.gz", 240, 16_188.7, 11_042.2, 54_111.6),
}

pytestmark = pytest.mark.shared


def load(name):
    from audit.readers.swf import read_swf
    from audit.whatif.to_simulator import to_jobs

    fname, procs = REFERENCE[name][:2]
    path = TRACES / fname
    if not path.exists():
        pytest.skip(f"{path} not present")
    read = read_swf(path)
    return to_jobs(read.jobs, procs=procs), procs


@pytest.fixture(scope="module")
def kth():
    return load("kth")


@pytest.fixture(scope="module")
def hpc2n():
    return load("hpc2n")


def check(converted, procs, name):
    fifo_ref, easy_ref, logged_ref = REFERENCE[name][2:]
    jobs = converted.jobs
    fifo = Simulator(Pool(procs), FIFO(), kill_at_limit=False).run(jobs)
    easy = Simulator(Pool(procs), EASY(), kill_at_limit=False).run(jobs)
    assert metrics(fifo)["mean_wait_s"] == pytest.approx(fifo_ref, rel=1e-3)
    assert metrics(easy)["mean_wait_s"] == pytest.approx(easy_ref, rel=1e-2)
    assert (fifo.state == "COMPLETED").all() and (easy.state == "COMPLETED").all()
    logged = replay_as_logged(jobs, Pool(procs))
    gap = wait_gap(easy, logged)
    assert gap["logged_mean_wait_s"] == pytest.approx(logged_ref, rel=1e-3)
    return fifo, easy


def test_kth_sp2(kth):
    converted, procs = kth
    assert len(converted.jobs) == 27_992 and converted.dropped["wider_than_pool"] == 0
    check(converted, procs, "kth")


def test_hpc2n(hpc2n):
    converted, procs = hpc2n
    assert len(converted.jobs) == 202_876
    check(converted, procs, "hpc2n")


def test_real_sacct_through_the_converter():
    """A real Slurm accounting dump (multi-node jobs, memory requests, logged failures) converts and
    replays: the logged replay reproduces the table's own waits, and a simulation on a cluster of
    the largest node shape runs every job to completion once (no usage recorded: nothing is killed)."""
    path = TRACES.parent / "sacct" / "phillips.log"
    if not path.exists():
        pytest.skip(f"{path} not present")
    import numpy as np

    from audit.readers.sacct.text import read_sacct
    from audit.whatif.to_simulator import to_cluster, to_jobs

    table = read_sacct(path).jobs
    converted = to_jobs(table)
    jobs = converted.jobs
    assert len(jobs) + sum(converted.dropped.values()) == len(table)
    table_wait = (table["start_time"] - table["submit_time"]).dt.total_seconds().mean()
    cluster = to_cluster({"node_groups": [{"name": "n", "count": 16, "cpus": int(jobs["cpus"].max()),
                                           "mem_bytes": int(jobs["mem"].max())}]})
    logged = replay_as_logged(jobs, cluster)
    assert logged.wait.mean() == pytest.approx(table_wait, rel=1e-9)
    result = Simulator(cluster, EASY()).run(jobs)
    assert (result.state == "COMPLETED").all() and (result.attempts == 1).all()
    assert np.array_equal(np.sort(result.end - result.start), np.sort(jobs["run"]))
