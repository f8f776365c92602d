"""Submission times: a non-homogeneous Poisson process with diurnal and weekly cycles, by inverse CDF."""

from __future__ import annotations

import numpy as np


def intensity(t_s: np.ndarray, *, peak_hour: float, peak_to_trough: float, weekend_factor: float,
              weekday0: int) -> np.ndarray:
    """Relative submission rate at ``t_s`` seconds after a midnight falling on ``weekday0`` (0 = Monday).

    A cosine day cycle with the given peak hour and busiest/quietest ratio, times ``weekend_factor``
    on Saturdays and Sundays.
    """
    amp = (peak_to_trough - 1.0) / (peak_to_trough + 1.0)
    hour = (t_s / 3600.0) % 24.0
    day = (np.floor(t_s / 86400.0).astype(np.int64) + weekday0) % 7
    daily = 1.0 + amp * np.cos(2 * np.pi * (hour - peak_hour) / 24.0)
    return daily * np.where(day >= 5, weekend_factor, 1.0)


def submit_offsets(rng: np.random.Generator, n: int, span_s: float, *, weekday0: int, peak_hour: float,
                   peak_to_trough: float, weekend_factor: float) -> np.ndarray:
    """``n`` sorted integer submission offsets in ``[0, span_s)`` drawn from :func:`intensity`."""
    grid = np.linspace(0.0, span_s, int(span_s // 60) + 2)
    lam = intensity(grid, peak_hour=peak_hour, peak_to_trough=peak_to_trough, weekend_factor=weekend_factor,
                    weekday0=weekday0)
    cum = np.concatenate([[0.0], np.cumsum((lam[1:] + lam[:-1]) / 2 * np.diff(grid))])
    u = np.sort(rng.uniform(0.0, cum[-1], n))
    return np.minimum(np.floor(np.interp(u, cum, grid)), span_s - 1).astype(np.int64)
