"""A sweep on a real Dask cluster (a ``dask scheduler`` and two ``dask worker`` processes on loopback)
writes the same bytes as the serial sweep."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.ingest import ingest, read_table
from audit.whatif import Options, whatif

WEEK = Path(__file__).resolve().parents[2] / "sample_traces" / "week"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dask_cluster():
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", str(port), "--no-dashboard"], **quiet)]
    try:
        from dask.distributed import Client

        deadline = time.time() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                           "--nthreads", "1", "--no-nanny", "--no-dashboard"], **quiet))
        with Client(address) as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        stop(procs[1:])  # the workers first, while the scheduler they report to is still up
        stop(procs[:1])


def stop(procs: list, grace_s: float = 10.0) -> None:
    """Terminate ``procs`` and wait for them; one still running after ``grace_s`` is killed."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=30)


def test_serial_and_dask_write_the_same_summary(dask_cluster, tmp_path):
    store = tmp_path / "store"
    ingest([WEEK], store)
    table, shape = read_table([store])
    opts = Options(risk=(0.9,), replicates=2)  # every stage (oracle, budget, capacity, shaken) at one level
    a = tmp_path / "serial"
    b = tmp_path / "dask"
    serial = whatif(table, cluster_shape=shape, out=a, options=opts, serial=True, quiet=True)
    distributed = whatif(table, cluster_shape=shape, out=b, options=opts, scheduler=dask_cluster, quiet=True)
    assert distributed.runner.startswith("dask tcp://") and serial.runner == "serial"
    assert (a / "whatif" / "summary.json").read_bytes() == (b / "whatif" / "summary.json").read_bytes()
    for name in ("capacity.csv", "tradeoff.csv"):
        assert (a / "whatif" / name).read_bytes() == (b / "whatif" / name).read_bytes()
