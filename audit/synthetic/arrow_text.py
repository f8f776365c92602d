"""Columns of text built with Arrow, for the writers of the accounting formats (PBS, LSF, Grid Engine): columns and
constants printed and joined element-wise without a loop over jobs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def txt(x):
    """A column (or constant) as Arrow strings: integers printed in decimal, objects as they are."""
    if isinstance(x, str):
        return pa.scalar(x, pa.string())
    if isinstance(x, (pa.Array, pa.Scalar)):
        return x
    x = np.asarray(x)
    if x.dtype.kind in "iub":
        return pc.cast(pa.array(x.astype(np.int64)), pa.string())
    return pa.array(x.astype(object), type=pa.string())


def cat(*parts) -> pa.Array:
    """Concatenate columns and constants element-wise (at least one part is a column)."""
    return pc.binary_join_element_wise(*[txt(p) for p in parts], "")


def where(mask, a, b) -> pa.Array:
    """``a`` where ``mask``, else ``b`` (columns or constants)."""
    return pc.if_else(pa.array(np.asarray(mask, dtype=bool)), txt(a), txt(b))


def exit_parts(codes) -> tuple[np.ndarray, np.ndarray]:
    """Slurm ``code:signal`` strings → (exit code, signal) integers (parsed once per distinct code)."""
    uniq, inverse = np.unique(np.asarray(codes, dtype=str), return_inverse=True)
    pairs = np.array([u.split(":", 1) for u in uniq.tolist()], dtype=np.int64).reshape(-1, 2)
    return pairs[inverse.ravel(), 0], pairs[inverse.ravel(), 1]


#: lines joined and written at a time
CHUNK = 50_000


def write_lines(fh, lines: pa.Array, chunk: int = CHUNK) -> None:
    """Write ``lines`` (Arrow strings, no newlines) to the text file ``fh``, each ended by a newline: ``chunk`` lines
    joined at a time, so that no one string holds the whole file."""
    for a in range(0, len(lines), chunk):
        part = lines.slice(a, chunk)
        fh.write(pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(part)], type=pa.int32()), part),
                                "\n")[0].as_py() + "\n")
