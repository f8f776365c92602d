"""The ``JOB_FINISH`` record's fields, in order, and how far each LSF version writes them.

Source: IBM Spectrum LSF 10.1 reference, "lsb.acct" (the fields in order of occurrence; LSF 7, 8 and 9.1 write a
leading part of the same list, later versions append).  A field written as a count is followed by that many
entries, each of the width given here: ``askedHosts`` and ``execHosts`` one host name each, ``submitEXT`` a key
and a value, ``networkAlloc`` an id and a window count, ``allocSlots`` a host name, index ranges a start, an end
and a step, ``storageInfoV`` one value, ``finishKVP`` a key and a value; a ``gRusage`` entry is a host name and
its own count of key-value pairs.

Two places where records written by LSF 9.1 and 10.1 (public samples, XDMoD's LSF shredder test record among
them) differ from the reference's list, read as the records have them:

* the run limit comes before ``options3``: a job submitted with ``bsub -W 12:00`` logs ``43200`` there, and a
  job without one ``-1`` (the reference lists ``options3, runLimit``);
* a ``hostRusage`` entry is five fields (host name, memory, swap, user and system time) in the reference and
  six in LSF 9.1 records; the width is the one after which ``effectiveResReq`` (a quoted string three fields
  on) lands on a quoted field.

``VERSIONS`` gives, per version (the record's second field: ``"10.108"`` is 10.1 fix pack 8, ``"9.13"`` 9.1.3),
the last field every record of that version holds and the last it may hold; a record that stops earlier or goes
on further does not fit its version and is set aside.  LSF 10.1 fix packs append fields after ``finishKVP``:
what follows it is not read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .tokens import Tokens

ONE, LIST, HOST_RUSAGE, GPU_RUSAGE = range(4)


def _one(names: str) -> list[tuple[str, int, int]]:
    return [(n, ONE, 0) for n in names.split()]


RUSAGE = ("ru_utime ru_stime ru_maxrss ru_ixrss ru_ismrss ru_idrss ru_isrss ru_minflt ru_majflt ru_nswap "
          "ru_inblock ru_oublock ru_ioch ru_msgsnd ru_msgrcv ru_nsignals ru_nvcsw ru_nivcsw ru_exutime")

#: (name, kind, width of each entry of a list); the record's type and version come first and are not listed
FIELDS: tuple[tuple[str, int, int], ...] = (
    *_one("eventTime jobId userId options numProcessors submitTime beginTime termTime startTime userName queue "
          "resReq dependCond preExecCmd fromHost cwd inFile outFile errFile jobFile"),
    ("numAskedHosts", LIST, 1),
    ("numExHosts", LIST, 1),
    *_one("jStatus hostFactor jobName command " + RUSAGE),
    *_one("mailUser projectName exitStatus maxNumProcessors loginShell timeEvent idx maxRMem maxRSwap inFileSpool "
          "commandSpool rsvId sla exceptMask additionalInfo exitInfo warningAction warningTimePeriod chargedSAAP "
          "licenseProject app postExecCmd runtimeEstimation jobGroupName requeueEvalues options2 resizeNotifyCmd "
          "lastResizeTime rsvId2 jobDescription"),
    ("submitEXT", LIST, 2),
    ("numHostRusage", HOST_RUSAGE, 0),
    *_one("runLimit options3 avgMem effectiveResReq srcCluster srcJobId dstCluster dstJobId forwardTime flow_id "
          "acJobWaitTime totalProvisionTime outdir runTime subcwd"),
    ("num_network", LIST, 2),
    *_one("affinity serial_job_energy cpi gips gbs gflops"),
    ("numAllocSlots", LIST, 1),
    *_one("ineligiblePendTime"),
    ("indexRangeCnt", LIST, 3),
    *_one("requeueTime"),
    ("numGPURusages", GPU_RUSAGE, 0),
    ("storageInfoC", LIST, 1),
    ("numKVP", LIST, 2),
)
INDEX = {name: i for i, (name, _, _) in enumerate(FIELDS)}

#: version → (the last field every record holds, the last it may hold; None: later fields are not read)
VERSIONS: dict[str, tuple[str, str | None]] = {
    "7": ("exitInfo", "lastResizeTime"),
    "8": ("lastResizeTime", "subcwd"),
    "9.1": ("subcwd", "numAllocSlots"),
    "10.1": ("numAllocSlots", None),
}


def version_family(version: str) -> str | None:
    """``"10.108"`` → ``"10.1"``, ``"9.13"`` → ``"9.1"``, ``"8.0"`` → ``"8"``, ``"7.06"`` → ``"7"``; None for
    others."""
    major = version.split(".", 1)[0].strip()
    return {"7": "7", "8": "8", "9": "9.1", "10": "10.1"}.get(major)


@dataclass
class Walk:
    """Where each field of each record is (index of the field in :class:`Tokens`, -1 where the record has none),
    each count's value, and what went wrong where."""

    at: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    last: np.ndarray | None = None  # index in FIELDS of the last field each record holds whole (-1: none)
    beyond: np.ndarray | None = None  # the record holds values after the last field its version writes
    bad_field: np.ndarray | None = None  # object: the field that went wrong ('' where none)
    reason: np.ndarray | None = None  # object


def walk(tok: Tokens, lines: np.ndarray, last_allowed: np.ndarray) -> Walk:
    """Locate every field of the ``JOB_FINISH`` records on ``lines``; ``last_allowed`` per record is the index in
    FIELDS of the last field its version may hold (the walk stops there)."""
    n = len(lines)
    pos = tok.first[lines] + 2
    end = tok.first[lines] + tok.count[lines]
    w = Walk(last=np.full(n, -1), beyond=np.zeros(n, dtype=bool), bad_field=np.full(n, "", dtype=object),
             reason=np.full(n, "", dtype=object))
    alive = pos < end
    for fi, (name, kind, width) in enumerate(FIELDS):
        stop = alive & (fi > last_allowed)
        w.beyond |= stop & (pos < end)
        alive &= ~stop & (pos < end)
        if not alive.any():
            break
        w.at[name] = np.where(alive, pos, -1)
        if kind == ONE:
            pos = pos + alive
        else:
            count, bad = _counts(tok, pos, alive)
            _fail(w, alive & bad, name, "a count that is not a whole number")
            ok = alive & ~bad
            if kind == LIST:
                pos = np.where(ok, pos + 1 + width * count, pos)
            elif kind == HOST_RUSAGE:
                pos, wrong = _host_rusage(tok, pos, end, count, ok)
                _fail(w, wrong, name, "hostRusage entries are neither 5 nor 6 fields wide")
                ok &= ~wrong
            else:
                pos, wrong = _gpu_rusage(tok, pos, end, count, ok)
                _fail(w, wrong, name, "a gRusage entry's count is not a whole number")
                ok &= ~wrong
            over = ok & (pos > end)
            _fail(w, over, name, "the list runs past the end of the line")
            w.counts[name] = np.where(ok & ~over, count, -1)
            alive = ok & ~over
        w.last[alive] = fi
    w.beyond |= alive & (pos < end) & (last_allowed < len(FIELDS) - 1)
    return w


def _fail(w: Walk, mask: np.ndarray, name: str, reason: str) -> None:
    new = mask & (w.bad_field == "")
    w.bad_field[new] = name
    w.reason[new] = reason


def _counts(tok: Tokens, pos: np.ndarray, alive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The whole number at ``pos`` (0 where not alive) and where it is not one."""
    text = tok.text(pos, alive)
    try:  # the usual column: every count a plain number
        value = np.asarray(pc.fill_null(pc.cast(text, pa.int64()), 0).to_numpy(zero_copy_only=False))
        bad = alive & ((value < 0) | (value > 10**9))
        return np.where(bad, 0, value), bad
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    ok = np.asarray(pc.fill_null(pc.match_substring_regex(text, r"^\d{1,9}$"), False), dtype=bool)
    value = np.zeros(len(pos), dtype=np.int64)
    if ok.any():
        value[ok] = np.asarray(pc.cast(pc.filter(text, pa.array(ok)), pa.int64()), dtype=np.int64)
    return value, alive & ~ok


def _host_rusage(tok, pos, end, count, ok):
    """Past ``numHostRusage`` and its entries, five or six fields each (see the module text)."""
    listed = ok & (count > 0)
    nxt = np.where(ok, pos + 1, pos)
    if not listed.any():
        return nxt, np.zeros(len(pos), dtype=bool)
    fits = {}
    for width in (5, 6):
        after = pos + 1 + width * count
        lands = listed & (after + 3 < end)
        fits[width] = tok.quoted(after + 3, lands)
    width = np.where(fits[5], 5, 6)
    wrong = listed & ~fits[5] & ~fits[6]
    return np.where(listed & ~wrong, pos + 1 + width * count, nxt), wrong


def _gpu_rusage(tok, pos, end, count, ok):
    """Past ``numGPURusages`` and its entries: each a host name, a count and that many key-value pairs."""
    pos = np.where(ok, pos + 1, pos)
    wrong = np.zeros(len(pos), dtype=bool)
    for k in range(int(count[ok].max()) if ok.any() else 0):
        sub = ok & ~wrong & (count > k) & (pos + 1 < end)
        pairs, bad = _counts(tok, pos + 1, sub)
        wrong |= bad
        step = sub & ~bad
        pos = np.where(step, pos + 2 + 2 * pairs, pos)
        short = ok & ~wrong & (count > k) & ~sub
        pos = np.where(short, end + 1, pos)  # runs past the line: reported as such
    return pos, wrong
