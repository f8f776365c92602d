"""Prometheus API JSON and exposition text: the real samples in ../shared/traces/k8s/prometheus and hand-built
files with known damage."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.readers.detect import detect_format
from audit.readers.prometheus import parse_labels, read_prometheus
from audit.textio import InputError
from tests.profiles import examples

PROM = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "k8s" / "prometheus"


def _real(name):
    p = PROM / name
    if not p.exists():
        pytest.skip("shared Prometheus samples absent")
    return p


@pytest.mark.parametrize("name", ["cache-hour.json", "cores-hour.json", "gpus-hour.json", "jobs-hour.json",
                                  "nodes-hour.json", "unknown-metric.json"])
def test_real_matrix_files(name):
    p = _real(name)
    assert detect_format(p) == "prometheus-json"
    doc = json.loads(p.read_text())
    pairs = sum(len(s["values"]) for s in doc["data"]["result"])
    r = read_prometheus(p)
    assert r.ledger.balanced and r.ledger.read == pairs == r.ledger.used == len(r.telemetry)
    if pairs:
        first = doc["data"]["result"][0]
        row = r.telemetry.iloc[0]
        assert row.time == pd.Timestamp(first["values"][0][0], unit="s", tz="UTC")
        assert row.value == float(first["values"][0][1])
        assert row.metric == name.split(".")[0]  # an expression's result has no __name__


def test_real_error_response_is_one_quarantined_record():
    r = read_prometheus(_real("unknown-path.json"))
    assert (r.ledger.read, r.ledger.quarantined) == (1, 1) and r.ledger.balanced and r.telemetry.empty
    assert "bad_data" in r.quarantine.rows[0][3]


def test_real_kubelet_scrape():
    p = _real("kubelet-metrics-resource-eks.prom")
    assert detect_format(p) == "prometheus-text"
    text = p.read_text()
    samples = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    r = read_prometheus(p)
    assert r.ledger.balanced and r.ledger.used == len(samples) and r.ledger.quarantined == 0
    assert r.ledger.structural == sum(1 for ln in text.splitlines() if ln.startswith("#") or not ln.strip())
    t = r.telemetry
    row = t[(t.metric == "container_cpu_usage_seconds_total") & (t.container == "aws-node")].iloc[0]
    assert row.value == pytest.approx(293.769327238) and row.pod == "aws-node-7k649" and row.namespace == "kube-system"
    assert row.time == pd.Timestamp(1750705767923, unit="ms", tz="UTC")
    ws = t[(t.metric == "container_memory_working_set_bytes") & (t.container == "server")].iloc[0]
    assert ws.value == 1.97271552e08
    m = re.search(r"^resource_scrape_error (\S+)$", text, flags=re.M)
    err = t[t.metric == "resource_scrape_error"].iloc[0]
    assert err.value == float(m.group(1)) and pd.isna(err.time)  # no timestamp: a snapshot


DCGM = """# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gn01",container="trainer",namespace="ml",pod="train-0",hpc_job="4242"} 87 1700000000000
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-2",Hostname="gn01",label_with_escape="a \\"quoted\\" value, with comma"} 12 1700000000000
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",Hostname="gn01"} NaN 1700000000000
this is not a sample line
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1" Hostname="gn01"} 5 1700000000000

DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-1",Hostname="gn01"} 0.412 1700000000000
"""


def test_exposition_text_labels_and_damage(tmp_path):
    p = tmp_path / "dcgm.prom"
    p.write_text(DCGM)
    assert detect_format(p) == "prometheus-text"
    r = read_prometheus(p, cluster="gpu-pool")
    led = r.ledger
    assert (led.read, led.used, led.quarantined, led.structural) == (6, 3, 3, 3) and led.balanced
    assert sorted(q[2] for q in r.quarantine.rows) == ["labels", "line", "value"]
    assert sorted(q[1] for q in r.quarantine.rows) == [5, 6, 7]
    t = r.telemetry.set_index(["metric", "gpu_index"])
    a = t.loc[("DCGM_FI_DEV_GPU_UTIL", 0)]
    assert (a.node, a.uuid, a.job_label, a.pod, a.namespace, a.container, a.value, a.cluster) == (
        "gn01", "GPU-1", "4242", "train-0", "ml", "trainer", 87.0, "gpu-pool")
    assert t.loc[("DCGM_FI_PROF_SM_ACTIVE", 0)].value == 0.412


def test_label_parser_escapes():
    assert parse_labels('a="x",b="say \\"hi\\"",c="p\\\\q"') == {"a": "x", "b": 'say "hi"', "c": "p\\q"}
    assert parse_labels('a="x" b="y"') is None


def test_matrix_json_bad_values(tmp_path):
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "n1", "gpu": "3"},
         "values": [[1700000000, "10"], [1700000030, "NaN"], [1700000060, "x"], [1700000090.5, "30"]]},
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "n1", "gpu": "4"}, "values": [[1, "+Inf"]]}]}}
    p = tmp_path / "q.json"
    p.write_text(json.dumps(doc))
    r = read_prometheus(p)
    assert (r.ledger.read, r.ledger.used, r.ledger.quarantined) == (5, 2, 3) and r.ledger.balanced
    assert list(r.telemetry["value"]) == [10.0, 30.0] and set(r.telemetry["gpu_index"]) == {3}
    assert r.telemetry["time"].iloc[1] == pd.Timestamp(1700000090.5, unit="s", tz="UTC")
    assert all(q[2].startswith("values[") for q in r.quarantine.rows)
    assert math.isclose(r.telemetry["value"].sum(), 40.0)


def test_vector_and_invalid_json(tmp_path):
    p = tmp_path / "v.json"
    p.write_text(json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "kube_pod_container_resource_requests", "pod": "p", "namespace": "n",
                    "resource": "nvidia_com_gpu", "unit": "integer"}, "value": [1700000000, "2"]}]}}))
    r = read_prometheus(p)
    assert r.ledger.used == 1 and r.telemetry.iloc[0].resource == "nvidia_com_gpu"
    bad = tmp_path / "bad.json"
    bad.write_text('{"status": "success", "data": {"resultType": "matrix", "result": [')
    from audit.textio import InputError

    with pytest.raises(InputError, match="bad.json: line 1"):
        read_prometheus(bad)


def test_fast_matrix_path_equals_the_checked_path(tmp_path):
    """The C-parser path for matrix values gives the same table, ledger and quarantine as json.loads."""
    from audit.readers.prometheus import read_prometheus_json
    from tests.conftest import ROOT

    files = sorted((ROOT / "sample_traces" / "week" / "telemetry").glob("DCGM_FI_DEV_GPU_UTIL_*.json"))[:1]
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "Hostname": "n1", "gpu": "0"},
         "values": [[1700000000, "10"], [1700000030, "NaN"], [1700000060.25, "1e3"]]},
        {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "Hostname": "n1", "gpu": "1"}, "values": []},
        {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "Hostname": "n2", "gpu": "0"}, "values": [[1700000000, "+Inf"]]}]}}
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(doc, indent=2))
    clean = json.loads(json.dumps(doc))
    clean["data"]["result"][0]["values"][1][1] = "7"
    clean["data"]["result"][2]["values"][0][1] = "8"
    tidy = tmp_path / "tidy.json"
    tidy.write_text(json.dumps(clean, indent=1))
    from audit.readers.prometheus import _fast_matrix

    assert _fast_matrix(tidy.read_text()) is not None and _fast_matrix(pretty.read_text()) is None
    for p in files + [pretty, tidy]:
        a, b = read_prometheus_json(p), read_prometheus_json(p, fast=False)
        pd.testing.assert_frame_equal(a.telemetry, b.telemetry)
        assert a.ledger.to_dict() == b.ledger.to_dict() and a.quarantine.rows == b.quarantine.rows
    r = read_prometheus_json(pretty)
    assert (r.ledger.read, r.ledger.used, r.ledger.quarantined) == (4, 2, 2)
    assert [q[1:3] for q in r.quarantine.rows] == [(1, "values[1]"), (3, "values[0]")]

_valid = st.builds(lambda n, g, v, t: f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",Hostname="n{n}"}} {v} {t}',
                   st.integers(0, 9), st.integers(0, 7), st.integers(0, 100), st.integers(1_600_000_000_000, 1_700_000_000_000))
_junk = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                max_size=40)


@settings(max_examples=examples(60))
@given(st.lists(st.one_of(_valid, _junk, st.just("# HELP x y"), st.just("")), max_size=30))
def test_exposition_text_never_loses_a_line(tmp_path, lines):
    p = tmp_path / "x.prom"
    p.write_text("\n".join(lines) + "\n")
    r = read_prometheus(p)
    data = [ln for ln in lines if ln.strip() and not ln.strip().startswith("#")]
    assert r.ledger.balanced and r.ledger.read == len(data)
    assert r.ledger.used == len(r.telemetry) and r.ledger.quarantined == len(r.quarantine.rows)
    assert r.ledger.used >= sum(1 for ln in lines if ln.startswith("DCGM_FI_DEV_GPU_UTIL{"))


_value = st.one_of(st.integers(0, 100).map(str), st.sampled_from(["NaN", "+Inf", "x", "", "1e3", "-0.5"]))


@settings(max_examples=examples(60))
@given(st.lists(st.lists(st.tuples(st.integers(1_600_000_000, 1_700_000_000), _value), max_size=8), max_size=5),
       st.booleans())
def test_matrix_json_never_loses_a_sample(tmp_path, series, pretty):
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "Hostname": "n1", "gpu": str(i)},
         "values": [[t, v] for t, v in pairs]} for i, pairs in enumerate(series)]}}
    p = tmp_path / "m.json"
    p.write_text(json.dumps(doc, indent=2 if pretty else None))
    r = read_prometheus(p)
    good = sum(1 for pairs in series for _, v in pairs if v not in ("NaN", "+Inf", "x", ""))
    assert r.ledger.balanced and r.ledger.read == sum(len(x) for x in series)
    assert r.ledger.used == good == len(r.telemetry)


def test_a_text_file_whose_first_line_starts_with_a_brace_is_read_as_text(tmp_path):
    # found by the deep profile: a junk line "{" first made the file API JSON and the whole read failed
    p = tmp_path / "x.prom"
    p.write_text('{\nDCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1"} 50 1600000000000\n')
    r = read_prometheus(p)
    assert (r.ledger.read, r.ledger.used, r.ledger.quarantined) == (2, 1, 1)
    # an API response is still JSON, even cut short (a clear error naming the file, not a line-by-line read)
    q = tmp_path / "cut.json"
    q.write_text('{"status": "success", "data": {"resultType": "matrix", "resu')
    with pytest.raises(InputError, match="cut.json"):
        read_prometheus(q)
