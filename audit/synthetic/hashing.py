"""Counter-based random numbers (splitmix64): a sample's value depends only on (seed, index), not on chunking."""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        x += _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def uniform(seed: np.ndarray, counter: np.ndarray, stream: int = 0) -> np.ndarray:
    """Uniform [0, 1) per element from a 64-bit seed, a counter and a stream number."""
    with np.errstate(over="ignore"):
        x = seed.astype(np.uint64) ^ (counter.astype(np.uint64) * np.uint64(0xD1B54A32D192ED03)) \
            ^ np.uint64((stream * 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)
    return (mix64(mix64(x)) >> np.uint64(11)).astype(np.float64) / float(2**53)
