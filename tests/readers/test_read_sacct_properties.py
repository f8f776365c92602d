"""Corrupted and truncated sacct lines never crash the reader and every line is accounted for."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from audit.readers.sacct.text import read_sacct
from tests.profiles import examples

HEADER = "JobID|State|Submit|Start|End|Elapsed|Timelimit|NCPUS|ReqMem|AllocTRES|TotalCPU|MaxRSS|NTasks|JobName"
GOOD = [
    "10|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T01:01:00|01:00:00|02:00:00|4|4000Mc|"
    "cpu=4,mem=16000M,node=1|03:00:00||1|a",
    "10.batch|COMPLETED|2024-01-01T00:01:00|2024-01-01T00:01:00|2024-01-01T01:01:00|01:00:00||4|4000Mc||"
    "00:10.5|1024K|1|batch",
    "11_3|TIMEOUT|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T01:01:00|1-00:00:00|1-00:00:00|8|16G|"
    "cpu=8,gres/gpu:a100=2,node=1|||1|b",
    "12+1|CANCELLED by 5|2024-01-01T00:00:00|Unknown|Unknown|00:00:00|UNLIMITED|1|0n||||1|c",
]


def _mutate(line: str, data) -> str:
    kind = data.draw(st.sampled_from(["truncate", "replace", "insert", "drop_field", "swap"]))
    if kind == "truncate":
        return line[: data.draw(st.integers(0, len(line)))]
    if kind == "replace":
        i = data.draw(st.integers(0, max(len(line) - 1, 0)))
        ch = data.draw(st.sampled_from(list(string.printable.replace("\n", "").replace("\r", "")) + ["é", "\x00"]))
        return line[:i] + ch + line[i + 1 :]
    if kind == "insert":
        i = data.draw(st.integers(0, len(line)))
        return line[:i] + data.draw(st.text(max_size=8).map(lambda s: s.replace("\n", "").replace("\r", ""))) + line[i:]
    fields = line.split("|")
    if kind == "drop_field" and len(fields) > 1:
        fields.pop(data.draw(st.integers(0, len(fields) - 1)))
        return "|".join(fields)
    i, j = data.draw(st.integers(0, len(fields) - 1)), data.draw(st.integers(0, len(fields) - 1))
    fields[i], fields[j] = fields[j], fields[i]
    return "|".join(fields)


@settings(max_examples=examples(60))
@given(data=st.data())
def test_every_line_accounted_for(tmp_path, data):
    lines = [HEADER]
    for _ in range(data.draw(st.integers(1, 12))):
        line = data.draw(st.sampled_from(GOOD))
        if data.draw(st.booleans()):
            line = _mutate(line, data)
        lines.append(line)
    f = tmp_path / "s.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = read_sacct(f)
    led = r.ledger
    assert led.balanced
    nonblank = sum(1 for ln in lines[1:] if ln.strip() and not ln.startswith("JobID|"))
    assert led.read == nonblank
    assert led.read + led.structural == len(lines)
    assert len(r.quarantine) == led.quarantined + led.fields_quarantined
    assert len(r.jobs) >= led.used
    for _, line_no, field, reason, _raw in r.quarantine.rows:
        assert 2 <= line_no <= len(lines) and field and reason
