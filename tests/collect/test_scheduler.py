"""Which collector a monthly run uses (audit.collect.scheduler)."""

from __future__ import annotations

import pytest

from audit.collect.scheduler import detect_scheduler
from audit.textio import InputError


def _which(*present):
    return lambda name: f"/usr/bin/{name}" if name in present else None


def test_the_scheduler_whose_command_is_on_path():
    assert detect_scheduler(_which("sacct", "sinfo")) == "slurm"
    assert detect_scheduler(_which("qstat", "pbsnodes")) == "pbs"  # qstat alone says neither PBS nor Grid Engine
    assert detect_scheduler(_which("qstat", "qconf", "qhost")) == "sge"
    assert detect_scheduler(_which("bjobs", "lsid")) == "lsf"


def test_none_or_several_is_an_error_naming_what_was_found():
    with pytest.raises(InputError, match="none of sacct, pbsnodes, lsid, qconf"):
        detect_scheduler(_which("qstat"))
    with pytest.raises(InputError, match=r"slurm \(sacct\), sge \(qconf\)"):
        detect_scheduler(_which("sacct", "qconf"))
