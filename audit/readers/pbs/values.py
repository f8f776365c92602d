"""PBS value forms, vectorised: epoch seconds, durations, sizes, integers; and what an exit status means.

Every parser takes a pyarrow string array and returns NumPy float64 values (NaN where missing) and ``bad``, the
entries present but unreadable.  Empty strings and nulls are missing, not bad.

Sizes (OpenPBS ``attr_fn_size.c``, ``to_size``; the Torque Administrator Guide's "Requesting resources": *size*)
are an integer, then optionally ``k``, ``m``, ``g``, ``t`` or ``p`` (binary multiples: 2^10 … 2^50), then
optionally ``b`` (bytes) or ``w`` (words), in either case; a bare number is bytes.  A word is taken as 8 bytes
(the word of the 64-bit execution hosts these logs come from).  Durations (``walltime``, ``cput``) are
``[[HH:]MM:]SS`` (hours may exceed 24) with optional fractional seconds, or plain seconds.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

WORD_BYTES = 8
_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40, "p": 50}

_SIZE = r"^(?P<v>\d+)(?P<m>[kmgtpKMGTP]?)(?P<u>[bwBW]?)$"
_DURATION = r"^(?:(?:(?P<h>\d+):)?(?P<m>\d+):)?(?P<s>\d+(?:\.\d+)?)$"
_INT = r"^-?\d+$"


def _np_bool(a) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def _num(a) -> np.ndarray:
    """A string array → float64 (NaN for null or '')."""
    a = pc.if_else(pc.equal(a, ""), pa.scalar(None, a.type), a)
    return np.asarray(pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False), dtype="float64")


def present(a: pa.Array) -> np.ndarray:
    """True where the entry is a non-empty string."""
    return _np_bool(pc.greater(pc.utf8_length(a), 0))


def parse_int(col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Integers (``Exit_status``, ``ncpus``…) → float64 with a bad mask."""
    pres = present(col)
    ok = _np_bool(pc.match_substring_regex(col, _INT))
    val = np.full(len(col), np.nan)
    if ok.any():
        val[ok] = _num(pc.filter(col, pa.array(ok)))
    return val, pres & ~ok


def parse_epoch(col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Epoch seconds (``ctime``, ``qtime``, ``etime``, ``start``, ``end``) → float64 seconds; ``0`` (PBS's
    "never", as ``start=0`` of a job that did not run) is missing, not bad."""
    val, bad = parse_int(col)
    bad |= val < 0
    val[(val <= 0) | bad] = np.nan
    return val, bad


def parse_duration(col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``[[HH:]MM:]SS[.fff]`` or plain seconds → float64 seconds."""
    pres = present(col)
    ex = pc.extract_regex(col, _DURATION)
    h = np.nan_to_num(_num(pc.struct_field(ex, "h")))
    m = np.nan_to_num(_num(pc.struct_field(ex, "m")))
    val = h * 3600 + m * 60 + _num(pc.struct_field(ex, "s"))
    return val, pres & np.isnan(val)


def parse_size(col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """PBS sizes (``32gb``, ``7523072kb``, ``1024``, ``4mw``) → float64 bytes."""
    pres = present(col)
    ex = pc.extract_regex(col, _SIZE)
    v = _num(pc.struct_field(ex, "v"))
    mult = np.asarray(pc.fill_null(pc.utf8_lower(pc.struct_field(ex, "m")), "").to_numpy(zero_copy_only=False),
                      dtype=object)
    unit = np.asarray(pc.fill_null(pc.utf8_lower(pc.struct_field(ex, "u")), "").to_numpy(zero_copy_only=False),
                      dtype=object)
    factor = np.ones(len(col))
    for key, shift in _SHIFT.items():
        if shift:
            factor[mult == key] = float(1 << shift)
    factor[unit == "w"] *= WORD_BYTES
    val = v * factor
    return val, pres & np.isnan(val)


def size_bytes(text: str) -> float:
    """One size string → bytes (``ValueError`` when it is not one): for the chunk and vnode specs parsed whole."""
    v, bad = parse_size(pa.array([text], pa.string()))
    if bad[0] or np.isnan(v[0]):
        raise ValueError(f"not a PBS size: {text!r}")
    return float(v[0])


# --- exit status → state (the table is in the package docstring, audit/readers/pbs/__init__.py) ---

#: Torque's negative codes (Torque Administrator Guide, "Job exit status", TORQUE supplied exit codes; -13 and
#: -14 from Adaptive Computing's knowledge base for Torque 6.1.2)
TORQUE_NEGATIVE = {
    -1: "FAILED", -2: "FAILED", -3: "NODE_FAIL", -4: "NODE_FAIL", -5: "NODE_FAIL", -6: "NODE_FAIL",
    -7: "FAILED", -8: "FAILED", -9: "FAILED", -10: "OUT_OF_MEMORY", -11: "TIMEOUT", -12: "TIMEOUT",
    -13: "NODE_FAIL", -14: "NODE_FAIL",
}
#: PBS Pro / OpenPBS negative codes (``JOB_EXEC_*`` in OpenPBS ``src/include/job.h``)
PBSPRO_NEGATIVE = {
    -1: "FAILED", -2: "FAILED", -3: "NODE_FAIL", -4: "NODE_FAIL", -5: "NODE_FAIL", -6: "NODE_FAIL",
    -7: "FAILED", -10: "FAILED", -11: "REQUEUED", -12: "PREEMPTED", -13: "FAILED", -14: "NODE_FAIL",
    -15: "REQUEUED", -16: "REQUEUED", -17: "FAILED", -18: "REQUEUED", -19: "CANCELLED", -20: "NODE_FAIL",
    -21: "FAILED", -22: "FAILED", -23: "FAILED", -24: "FAILED", -25: "FAILED", -26: "OUT_OF_MEMORY",
    -27: "OUT_OF_MEMORY", -28: "TIMEOUT", -29: "TIMEOUT", -30: "NODE_FAIL", -31: "OUT_OF_MEMORY",
    -32: "REQUEUED",
}
#: exit statuses that say PBS (or the job's shell) killed it with SIGKILL or SIGTERM: 256+N (PBS), 128+N (shell)
KILLED = (256 + 9, 256 + 15, 128 + 9, 128 + 15)


def states(exit_status: np.ndarray, pbspro: np.ndarray, killed_at_limit: np.ndarray, killed_over_mem: np.ndarray,
           deleted: np.ndarray) -> np.ndarray:
    """The canonical state of each end record (see the package docstring's table)."""
    x = exit_status
    out = np.full(len(x), "FAILED", dtype=object)
    neg = x < 0
    if neg.any():
        for code in np.unique(x[neg]).tolist():
            at = neg & (x == code)
            out[at & pbspro] = PBSPRO_NEGATIVE.get(int(code), "FAILED")
            out[at & ~pbspro] = TORQUE_NEGATIVE.get(int(code), "FAILED")
    pos = x > 0
    killed = pos & ((x >= 256) | np.isin(x, KILLED))
    out[pos & deleted] = "CANCELLED"
    out[killed & killed_over_mem] = "OUT_OF_MEMORY"
    out[killed & killed_at_limit] = "TIMEOUT"
    out[x == 0] = "COMPLETED"
    return out
