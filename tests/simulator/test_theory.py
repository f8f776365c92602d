"""FIFO on single-resource jobs against queueing theory: M/M/1 and M/M/c (Erlang C) mean waits, and
Little's law."""

import math

import numpy as np
import pytest

from simulator import FIFO, Jobs, Pool, Simulator
from simulator.occupancy import step


def erlang_c(c: int, a: float) -> float:
    """Probability an arrival waits in M/M/c with offered load ``a`` = λ/μ."""
    rho = a / c
    top = a**c / math.factorial(c) / (1 - rho)
    bottom = sum(a**k / math.factorial(k) for k in range(c)) + top
    return top / bottom


def mm_jobs(n: int, lam: float, mu: float, seed: int) -> Jobs:
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(1 / lam, n))
    run = rng.exponential(1 / mu, n)
    return Jobs.from_arrays(id=np.arange(n), submit=submit, run=run, cpus=np.ones(n, dtype=np.int64))


@pytest.mark.parametrize("c, lam, mu, seed", [(1, 0.7, 1.0, 11), (4, 3.0, 1.0, 12)])
def test_mean_wait_matches_erlang_c(c, lam, mu, seed):
    n = 300_000
    r = Simulator(Pool(c), FIFO()).run(mm_jobs(n, lam, mu, seed))
    a = lam / mu
    theory = erlang_c(c, a) / (c * mu - lam)  # M/M/1: ρ/(μ − λ)
    if c == 1:
        assert theory == pytest.approx(lam / (mu * (mu - lam)))
    warm = n // 20
    assert r.wait[warm:].mean() == pytest.approx(theory, rel=0.05)
    assert (r.state == "COMPLETED").all()


def test_littles_law():
    lam, mu, n = 0.8, 1.0, 200_000
    r = Simulator(Pool(1), FIFO()).run(mm_jobs(n, lam, mu, 5))
    # L (time-average number waiting, from the queue-length step function) = λ × W
    times, level = step(r.submit, r.start, np.ones(n))
    t0, t1 = r.submit[0], r.start.max()
    area = float(np.sum(level[:-1] * np.diff(times)))
    L = area / (t1 - t0)
    lam_hat = n / (t1 - t0)
    assert L == pytest.approx(lam_hat * r.wait.mean(), rel=1e-9)
    rho = lam / mu
    assert L == pytest.approx(rho**2 / (1 - rho), rel=0.05)  # M/M/1: Lq = ρ²/(1 − ρ)
