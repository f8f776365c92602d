"""Parsing a column once per distinct value.

Most sacct fields repeat a few values over a million lines (states, exit codes, ``ReqMem``, TRES strings, CPU
and node counts).  The parsers are element-wise, so parsing each distinct string once and spreading the
results back by position gives the same values as parsing every line, for a fraction of the work.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: above this share of distinct values the column is parsed line by line (encoding it would not pay)
MAX_DISTINCT_SHARE = 0.25
#: lines looked at first: a column mostly distinct there (timestamps, job ids) is not encoded at all
SAMPLE = 4096


def distinct(col) -> tuple[pa.Array, np.ndarray] | None:
    """The distinct strings of ``col`` and each line's position among them; None when ``col`` has nulls or
    mostly distinct values (then parse it as it is)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.null_count or len(col) < 64:
        return None
    head = col.slice(0, SAMPLE)
    if len(pc.unique(head)) > 2 * MAX_DISTINCT_SHARE * len(head):
        return None
    enc = pc.dictionary_encode(col)
    if len(enc.dictionary) > MAX_DISTINCT_SHARE * len(col):
        return None
    return enc.dictionary, np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.intp)


def spread(result, pos: np.ndarray):
    """A parser's result on the distinct values, spread back to the lines (``pos`` from :func:`distinct`):
    NumPy arrays are indexed, pyarrow arrays taken, tuples, lists and dicts spread member by member."""
    if isinstance(result, np.ndarray):
        return result[pos]
    if isinstance(result, (pa.Array, pa.ChunkedArray)):
        return result.take(pa.array(pos, type=pa.int64()))
    if isinstance(result, tuple):
        return tuple(spread(r, pos) for r in result)
    if isinstance(result, list):
        return [spread(r, pos) for r in result]
    if isinstance(result, dict):
        return {k: spread(v, pos) for k, v in result.items()}
    return result


def per_distinct(parse, col):
    """``parse(col)``, computed on the distinct values of ``col`` when they are few (same result)."""
    enc = distinct(col)
    if enc is None:
        return parse(col)
    values, pos = enc
    return spread(parse(values), pos)
