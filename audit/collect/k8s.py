"""``reclaim collect k8s``: a week of a Kubernetes cluster's pods and nodes (``kubectl get``, read-only) and
the Prometheus series Reclaim's readers know (cAdvisor, kube-state-metrics, DCGM), exported with
``query_range`` in chunks under the server's limit of points per series, into a folder and a tarball.

Prometheus is only read: an HTTP GET of ``/api/v1/query_range`` (and ``/api/v1/status/buildinfo``) with
one of the frozen series names of :data:`SERIES` as the query.  A bearer token (``--token-file``) and a
CA bundle (``--ca-file``) are used when given; a refused request is recorded and the collection goes on.
"""

from __future__ import annotations

import hashlib
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType

from .commands import CommandRunner, output_of
from .manifest import Manifest, fresh_folder, write_output, write_tarball
from .times import parse_when, stamp

#: series exported, by the reader that takes them (names only: no expression is ever sent)
SERIES = MappingProxyType({
    "DCGM_FI_DEV_GPU_UTIL": "dcgm", "DCGM_FI_PROF_SM_ACTIVE": "dcgm", "DCGM_FI_DEV_FB_USED": "dcgm",
    "container_cpu_usage_seconds_total": "cadvisor", "container_memory_working_set_bytes": "cadvisor",
    "kube_pod_info": "kube-state", "kube_pod_created": "kube-state", "kube_pod_start_time": "kube-state",
    "kube_pod_completion_time": "kube-state", "kube_pod_status_phase": "kube-state",
    "kube_pod_container_resource_requests": "kube-state",
    "kube_pod_container_status_last_terminated_reason": "kube-state",
    "kube_pod_container_status_restarts_total": "kube-state",
})
PATHS = ("/api/v1/query_range", "/api/v1/status/buildinfo")
MAX_POINTS = 10_000  # Prometheus refuses more than 11,000 points per series per query


class PrometheusClient:
    """GETs of the read-only API paths of :data:`PATHS` only."""

    def __init__(self, url: str, *, token_file=None, ca_file=None, timeout_s: float = 120.0):
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"not a Prometheus URL: {url!r}")
        self.base = url.rstrip("/")
        self.token = Path(token_file).read_text(encoding="utf-8").strip() if token_file else None
        self.context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None
        self.timeout_s = timeout_s

    def get(self, path: str, params: dict | None = None) -> tuple[int, bytes, str]:
        if path not in PATHS:
            raise ValueError(f"{path}: not a read-only API path")
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        request = urllib.request.Request(url, method="GET")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=self.context) as r:
                return r.status, r.read(), url
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), url
        except (urllib.error.URLError, OSError) as exc:
            return 0, str(exc).encode(), url


def chunks(start: float, end: float, step_s: float, max_points: int = MAX_POINTS) -> list[tuple[float, float]]:
    """``[start, end]`` cut so that no chunk asks for more than ``max_points`` points per series."""
    span = step_s * (max_points - 1)
    out = []
    t = start
    while t < end:
        out.append((t, min(end, t + span)))
        t = min(end, t + span) + step_s
    return out


class _Got:
    """A Prometheus answer in the shape the manifest records (as a command's run)."""

    def __init__(self, name, url, status, body, seconds, attempts):
        self.name, self.argv, self.output, self.seconds, self.attempts = name, ("GET", url), body, seconds, attempts
        ok = status == 200 and _status_ok(body)
        self.exit_code = 0 if ok else (status or 1)
        self.stderr = "" if ok else body[:2000].decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.output).hexdigest()


def _status_ok(body: bytes) -> bool:
    try:
        return json.loads(body).get("status") == "success"
    except (ValueError, AttributeError):
        return False


def collect_k8s(out, *, prometheus: str, since: str = "7d", until: str | None = None, step_s: float = 30.0,
                token_file=None, ca_file=None, runner: CommandRunner | None = None, retries: int = 1,
                pause_s: float = 5.0, now: datetime | None = None, series=None, max_points: int = MAX_POINTS,
                log=None) -> tuple[Path, Manifest]:
    """Collect into ``out/reclaim-pilot-k8s-<end day>/`` and its tarball; return ``(tarball, manifest)``.
    Times are UTC (Prometheus keeps UTC)."""
    runner = runner or CommandRunner(retries=retries, pause_s=pause_s)
    now = now or datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    t0, t1 = parse_when(since, now), parse_when(until, now) if until else now
    name = f"reclaim-pilot-k8s-{t1:%Y-%m-%d}"
    folder = fresh_folder(out, name)
    manifest = Manifest(kind="k8s", since=stamp(t0), until=stamp(t1))
    for cmd in ("kubectl_version", "kubectl_pods", "kubectl_nodes"):
        ran = runner.run(cmd)
        path = output_of(cmd)
        if ran.ok:
            write_output(folder, path, ran.output)
        manifest.record(ran, path, _role(cmd))
    client = PrometheusClient(prometheus, token_file=token_file, ca_file=ca_file)
    got = _get(client, "prometheus_buildinfo", "/api/v1/status/buildinfo", None, retries, pause_s)
    manifest.record(got, None, "version")
    if got.ok:
        manifest.versions["prometheus"] = json.loads(got.output).get("data", {}).get("version", "")
    start = t0.replace(tzinfo=UTC).timestamp()
    end = t1.replace(tzinfo=UTC).timestamp()
    for metric in series or SERIES:
        if metric not in SERIES:
            raise ValueError(f"{metric}: not a series the readers know")
        for k, (a, b) in enumerate(chunks(start, end, step_s, max_points)):
            params = {"query": metric, "start": f"{a:.0f}", "end": f"{b:.0f}", "step": f"{step_s:g}"}
            got = _get(client, "prometheus_query_range", "/api/v1/query_range", params, retries, pause_s)
            path = f"prometheus/{metric}_{k:03d}.json"
            if got.ok:
                write_output(folder, path, got.output)
            manifest.record(got, path, "telemetry", metric=metric, window=[a, b])
            if log is not None:
                log(f"{metric} chunk {k}: status {got.exit_code}, {len(got.output):,} bytes")
    return write_tarball(folder, manifest, name), manifest


def _get(client, name, path, params, retries, pause_s) -> _Got:
    attempts = 0
    while True:
        attempts += 1
        t = time.perf_counter()
        status, body, url = client.get(path, params)
        got = _Got(name, url, status, body, time.perf_counter() - t, attempts)
        if got.ok or attempts > retries or status in (401, 403):  # a refusal is not retried
            return got
        time.sleep(pause_s)


def _role(cmd: str) -> str:
    from .commands import READ_ONLY

    return READ_ONLY[cmd].role
