"""The Kubernetes pilot collector against a real Prometheus (Debian's ``prometheus``, started here on
loopback, scraping ``prometheus-node-exporter`` and a small exporter of synthetic DCGM series served by the
test), behind a proxy that asks for a bearer token: chunks are exported under the point limit and ingest with
balanced ledgers; a refused request is recorded and the collection goes on.  Skips when Prometheus is absent."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from audit.collect import CommandRunner, collect_k8s
from audit.collect.k8s import chunks
from audit.ingest import ingest
from tests.readers.test_k8s import build_nodes, build_pods, pods_list

from ..conftest import LACKS

TOKEN = "s3cret-token"
DCGM = ('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="gpu-node-1",pod="train-a",namespace="ml-team",'
        'container="trainer"} 35\n'
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",Hostname="gpu-node-1",pod="train-a",namespace="ml-team",'
        'container="trainer"} 20480\n')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(handler) -> tuple[ThreadingHTTPServer, int]:
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, port


class Exporter(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = DCGM.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def proxy_to(upstream: str):
    class Proxy(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self.send_response(401)
                self.end_headers()
                self.wfile.write(b'{"status":"error","error":"unauthorized"}')
                return
            with urllib.request.urlopen(upstream + self.path, timeout=30) as r:
                body = r.read()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Proxy


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    prom, node = shutil.which("prometheus"), shutil.which("prometheus-node-exporter")
    if not prom or not node:
        pytest.skip(f"{LACKS}prometheus prometheus-node-exporter")
    d = tmp_path_factory.mktemp("prom")
    exporter, ex_port = serve(Exporter)
    node_port, prom_port = free_port(), free_port()
    procs = [subprocess.Popen([node, f"--web.listen-address=127.0.0.1:{node_port}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    (d / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n"
        f"  - job_name: dcgm\n    static_configs:\n      - targets: ['127.0.0.1:{ex_port}']\n"
        f"  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{node_port}']\n")
    procs.append(subprocess.Popen([prom, f"--config.file={d / 'prometheus.yml'}", f"--storage.tsdb.path={d / 'tsdb'}",
                                   f"--web.listen-address=127.0.0.1:{prom_port}"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    base = f"http://127.0.0.1:{prom_port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                q = urllib.request.urlopen(f"{base}/api/v1/query?query=count_over_time(DCGM_FI_DEV_GPU_UTIL[1m])",
                                           timeout=5).read()
                got = json.loads(q)["data"]["result"]
                if got and float(got[0]["value"][1]) >= 8:
                    up = json.loads(urllib.request.urlopen(f"{base}/api/v1/query?query=up", timeout=5).read())
                    if len(up["data"]["result"]) == 2:
                        break
            except (OSError, ValueError, KeyError):
                pass
            if time.monotonic() > deadline:
                pytest.fail("Prometheus did not scrape its targets")
            time.sleep(1)
        proxy, proxy_port = serve(proxy_to(base))
        yield {"direct": base, "proxy": f"http://127.0.0.1:{proxy_port}", "dir": d}
        proxy.shutdown()
    finally:
        exporter.shutdown()
        for p in procs:
            p.terminate()
            p.wait(timeout=30)


def kubectl_env(tmp_path: Path) -> dict:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (tmp_path / "pods.json").write_text(json.dumps(pods_list(build_pods())))
    (tmp_path / "nodes.json").write_text(json.dumps(pods_list(build_nodes())))
    body = (f'#!/bin/sh\ncase "$*" in\n  "version --client --output json") echo \'{{"clientVersion": {{"gitVersion": "v1.30.0"}}}}\';;\n'
            f'  "get pods --all-namespaces --output json") cat {tmp_path / "pods.json"};;\n'
            f'  "get nodes --output json") cat {tmp_path / "nodes.json"};;\n  *) echo "refused: $*" >&2; exit 3;;\nesac\n')
    k = bin_ / "kubectl"
    k.write_text(body)
    k.chmod(k.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"}


def test_chunks_stay_under_the_point_limit():
    cut = chunks(0.0, 100_000.0, 30.0, max_points=1_000)
    assert cut[0] == (0.0, 29_970.0) and cut[-1][1] == 100_000.0
    assert all((b - a) / 30.0 + 1 <= 1_000 for a, b in cut)
    assert all(cut[k + 1][0] == cut[k][1] + 30.0 for k in range(len(cut) - 1))  # no sample twice


def test_collect_with_a_token_then_ingest(prometheus, tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    runner = CommandRunner(env=kubectl_env(tmp_path), pause_s=0.0)
    tarball, manifest = collect_k8s(tmp_path / "out", prometheus=prometheus["proxy"], token_file=token,
                                    since=(now - timedelta(seconds=60)).isoformat(), until=now.isoformat(), step_s=1,
                                    max_points=25, runner=runner, series=["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"])
    assert manifest.failed == [], manifest.failed
    assert manifest.versions["prometheus"].startswith("2.")
    q = [c for c in manifest.commands if c["name"] == "prometheus_query_range"]
    assert len(q) == 2 * 3  # 61 points a series, in chunks of at most 25
    assert all("s3cret" not in " ".join(c["argv"]) for c in manifest.commands)  # the token never lands in the manifest
    import gzip

    assert b"s3cret" not in gzip.decompress(Path(tarball).read_bytes())  # nor anywhere in the tarball
    store = tmp_path / "store"
    result = ingest([tarball], store)
    assert result.ledger["balanced"]
    assert sorted(result.jobs["job_id"])[:2] == ["data/etl-b", "data/etl-c"]
    import pandas as pd

    samples = pd.read_parquet(store / "telemetry.parquet")
    assert set(samples["metric"]) == {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"}
    exported = 0
    for f in (store / "pilot").rglob("prometheus/*.json"):
        exported += sum(len(r["values"]) for r in json.loads(f.read_text())["data"]["result"])
    assert exported >= 2 * 5 and len(samples) == exported  # every exported point read once
    util = samples[samples["metric"] == "DCGM_FI_DEV_GPU_UTIL"]
    assert (util["value"] == 35).all() and (util["pod"] == "train-a").all()


def test_a_refused_request_is_recorded_and_the_collection_goes_on(prometheus, tmp_path):
    token = tmp_path / "token"
    token.write_text("wrong")
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    tarball, manifest = collect_k8s(tmp_path / "out", prometheus=prometheus["proxy"], token_file=token,
                                    since=(now - timedelta(seconds=30)).isoformat(), until=now.isoformat(), step_s=1,
                                    runner=CommandRunner(env=kubectl_env(tmp_path), pause_s=0.0), pause_s=0.0,
                                    series=["DCGM_FI_DEV_GPU_UTIL"])
    refused = [c for c in manifest.commands if c["exit_code"] == 401]
    assert len(refused) == 2 and all(c["attempts"] == 1 for c in refused)  # buildinfo and the one chunk; no retry
    assert {c["name"] for c in manifest.commands if c["exit_code"] == 0} == {"kubectl_version", "kubectl_pods",
                                                                             "kubectl_nodes"}
    assert tarball.exists()
