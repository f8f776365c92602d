"""On a generated month, the advisor's memory suggestion for the planted over-requesting users: below what they
ask and at or above their planted need at p90 (``truth_jobs.csv``) for at least 90 % of them.

The month here has 30,000 jobs over 30 days (about 80 users, the default's habits and over-request); the
default 122,000-job month is checked by ``make bench`` (``bench/bench_advisor.py``)."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.planted_users import over_requesting, planted_check
from predictors.advisor.model import AdvisorModel


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    from audit.ingest import read_inputs
    from audit.synthetic import generate

    out = tmp_path_factory.mktemp("month30k")
    generate(out, jobs=30_000, days=30.0, seed=3, write_telemetry=False)
    return read_inputs([out / "sacct.txt"]).jobs, pd.read_csv(out / "truth_jobs.csv")


def test_over_requesting_users_get_a_cut_that_covers_their_need(month):
    jobs, truth = month
    users = over_requesting(jobs, truth)
    assert len(users) >= 20  # enough users for the share to mean something
    model = AdvisorModel(targets=("memory",)).fit(jobs)
    res = planted_check(model, users)
    assert res["ok"].mean() >= 0.9, res[~res["ok"]]
