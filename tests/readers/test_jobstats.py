"""Jobstats AdminComment summaries: decoding, encoding, corrupt payloads, plain comments."""

from __future__ import annotations

import base64
import gzip

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.readers.jobstats import COLUMNS, decode_jobstats, encode_jobstats, parse_jobstats
from tests.profiles import examples

GIB = 1024**3

# A real AdminComment published in the jdh4/jobstats README (sacct -j 39861033 -o admincomment),
# with its decoded JSON printed beside it there: one node, 8 cores, 27127336960 B used, 28338.0 CPU s.
PUBLISHED = (
    "JS1:H4sIACj7KWIC/1XNQQrCMBCF4bvMOkonIzNpLyOhGUVIGmnSRSm5u1FEcPt/PN4BSw5aYDogaIz+tNoZF+R3qLn6eE2a8rrDxE5wvAgLsYGtaPiJ"
    "FbRCxCMP5juqj6QdHJE79zg/t37hWvt34gEN3D9487FoewEKn+eojwAAAA=="
)

# Hand-built: 2 nodes x 2 GPUs.  Expected figures worked out by hand below.
TWO_NODES = {
    "gpus": 4,
    "total_time": 3600,
    "nodes": {
        "gpu-a01": {
            "cpus": 8, "total_memory": 64 * GIB, "used_memory": 10 * GIB, "total_time": 1000.5,
            "gpu_total_memory": {"0": 40 * GIB, "1": 40 * GIB},
            "gpu_used_memory": {"0": 20 * GIB, "1": 30 * GIB},
            "gpu_utilization": {"0": 50.0, "1": 70.0},
        },
        "gpu-a02": {
            "cpus": 8, "total_memory": 64 * GIB, "used_memory": 6 * GIB, "total_time": 2000.25,
            "gpu_total_memory": {"0": 40 * GIB, "1": 40 * GIB},
            "gpu_used_memory": {"0": 5 * GIB, "1": 1 * GIB},
            "gpu_utilization": {"0": 10.0, "1": 90.0},
        },
    },
}


def _decode_one(value):
    return decode_jobstats(pd.Series([value])).iloc[0]


def test_published_admincomment_decodes_to_published_json():
    summary = parse_jobstats(PUBLISHED)
    assert summary["nodes"] == {
        "della-r2c1n16": {"total_memory": 68719476736, "used_memory": 27127336960, "total_time": 28338.0, "cpus": 8}
    }
    row = _decode_one(PUBLISHED)
    assert row["is_jobstats"] and row["has_data"] and pd.isna(row["error"])
    assert row["cpu_used_s"] == 28338.0
    assert row["mem_peak_bytes"] == 27127336960
    assert pd.isna(row["gpu_util_mean"]) and pd.isna(row["gpu_mem_peak_bytes"])
    assert row["gpus_seen"] == 0


def test_hand_built_two_nodes_four_gpus():
    row = _decode_one(encode_jobstats(TWO_NODES))
    assert row["cpu_used_s"] == pytest.approx(1000.5 + 2000.25)
    assert row["mem_peak_bytes"] == 16 * GIB
    assert row["gpu_util_mean"] == pytest.approx((50 + 70 + 10 + 90) / 4 / 100)  # 0.55
    assert row["gpu_mem_peak_bytes"] == 56 * GIB  # 20 + 30 + 5 + 1, job total over held GPUs
    assert row["gpu_mem_max_per_gpu_bytes"] == 30 * GIB
    assert row["gpus_seen"] == 4


def test_documented_gpu_example():
    # the example summary printed in jobstats' docs/setup/summaries.md (one A100 node)
    doc = {
        "gpus": 1,
        "nodes": {"della-k1g1": {
            "cpus": 12, "gpu_total_memory": {"1": 85899345920}, "gpu_used_memory": {"1": 83314868224},
            "gpu_utilization": {"1": 98.6}, "total_memory": 137438953472, "total_time": 57620.8,
            "used_memory": 84683702272,
        }},
        "total_time": 50944,
    }
    row = _decode_one(encode_jobstats(doc))
    assert row["cpu_used_s"] == pytest.approx(57620.8)
    assert row["mem_peak_bytes"] == 84683702272
    assert row["gpu_util_mean"] == pytest.approx(0.986)
    assert row["gpu_mem_peak_bytes"] == 83314868224
    assert row["gpus_seen"] == 1


def test_gpu_memory_without_utilisation():
    # second documented example: GPU memory maps but no gpu_utilization (e.g. MIG)
    doc = {"nodes": {"della-l01g2": {"total_memory": 33554432000, "used_memory": 27482066944, "total_time": 8591.7,
                                      "cpus": 1, "gpu_total_memory": {"1": 10200547328},
                                      "gpu_used_memory": {"1": 124780544}}},
           "total_time": 432301, "gpus": 1}
    row = _decode_one(encode_jobstats(doc))
    assert pd.isna(row["gpu_util_mean"])
    assert row["gpu_mem_peak_bytes"] == 124780544
    assert row["gpus_seen"] == 1


def test_missing_node_field_gives_null_not_partial_sum():
    doc = {"nodes": {"a": {"used_memory": 5, "total_time": 1.0}, "b": {"used_memory": 7}}}
    row = _decode_one(encode_jobstats(doc))
    assert pd.isna(row["cpu_used_s"])  # node b has no CPU time: a partial sum would understate use
    assert row["mem_peak_bytes"] == 12


def test_encode_is_deterministic_and_inverse():
    a = encode_jobstats(TWO_NODES)
    b = encode_jobstats(dict(reversed(list(TWO_NODES.items()))))
    assert a == b
    assert a.startswith("JS1:")
    assert parse_jobstats(a) == TWO_NODES


def test_plain_comments_and_markers():
    s = pd.Series([None, "", "requeued by admin", "js1:lowercase is not jobstats", "JS1:Short", " JS1:None "],
                  index=[10, 11, 12, 13, 14, 15])
    out = decode_jobstats(s)
    assert list(out.index) == [10, 11, 12, 13, 14, 15]
    assert list(out["is_jobstats"]) == [False, False, False, False, True, True]
    assert not out["has_data"].any()
    assert out["error"].isna().all()
    assert out["cpu_used_s"].isna().all()
    assert {c: str(t) for c, t in out.dtypes.items()} == COLUMNS


def _b64(data: bytes) -> str:
    return "JS1:" + base64.b64encode(data).decode()


@pytest.mark.parametrize(
    "value, stage",
    [
        ("JS1:not*base64!", "base64"),
        (PUBLISHED[:-30], "base64"),  # truncated: padding broken
        (PUBLISHED[:40] + "AAAA", "gzip"),  # truncated on a 4-char boundary: gzip stream ends early
        (_b64(b"plain text, not gzip"), "gzip"),
        (_b64(gzip.compress(b"{not json", mtime=0)), "json"),
        (_b64(gzip.compress(b"\xff\xfe", mtime=0)), "json"),
        (_b64(gzip.compress(b"[1, 2]", mtime=0)), "layout"),
        (_b64(gzip.compress(b'{"nodes": {"a": {"used_memory": "12G"}}}', mtime=0)), "layout"),
        (_b64(gzip.compress(b'{"nodes": {"a": {"gpu_utilization": {"0": NaN}}}}', mtime=0)), "layout"),
    ],
)
def test_corrupt_payloads_report_stage(value, stage):
    row = _decode_one(value)
    assert row["is_jobstats"] and not row["has_data"]
    assert row["error"].startswith(stage)
    assert pd.isna(row["cpu_used_s"]) and pd.isna(row["mem_peak_bytes"])


def test_mixed_series_keeps_order_and_duplicate_index():
    good = encode_jobstats(TWO_NODES)
    s = pd.Series(["", good, "JS1:%%%", good], index=[7, 7, 8, 9])
    out = decode_jobstats(s)
    assert list(out.index) == [7, 7, 8, 9]
    assert list(out["has_data"]) == [False, True, False, True]
    assert out["error"].notna().tolist() == [False, False, True, False]
    assert out["mem_peak_bytes"].tolist()[1] == 16 * GIB


_num = st.floats(min_value=0, max_value=1e12, allow_nan=False).map(lambda x: round(x, 1))
_gpus = st.dictionaries(st.sampled_from(["0", "1", "2", "3"]), _num, max_size=4)
_node = st.fixed_dictionaries(
    {"cpus": st.integers(1, 128), "used_memory": st.integers(0, 2**40), "total_time": _num},
    optional={"gpu_used_memory": _gpus, "gpu_utilization": _gpus},
)


@settings(max_examples=examples(60))
@given(st.dictionaries(st.text("abcdefgh0123456789-", min_size=1, max_size=8), _node, min_size=1, max_size=4))
def test_round_trip_property(nodes):
    summary = {"nodes": nodes, "total_time": 10, "gpus": 0}
    value = encode_jobstats(summary)
    assert parse_jobstats(value) == summary
    row = _decode_one(value)
    assert row["mem_peak_bytes"] == sum(n["used_memory"] for n in nodes.values())
    assert row["cpu_used_s"] == pytest.approx(sum(n["total_time"] for n in nodes.values()))
