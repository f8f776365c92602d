"""Figures in scheduler units and words, by hand."""

from __future__ import annotations

import pytest

from predictors.advisor.sched_units import (
    GIB,
    duration_words,
    kube_size,
    odds_words,
    readable_size,
    round_time,
    slurm_size,
    slurm_time,
    whole,
)


@pytest.mark.parametrize("seconds,text", [(60, "00:01:00"), (61, "00:02:00"), (3600, "01:00:00"),
                                          (170100, "1-23:15:00"), (172800, "2-00:00:00")])
def test_slurm_time_rounds_up_to_the_minute(seconds, text):
    assert slurm_time(seconds) == text


def test_suggested_times_round_up_in_steps():
    assert round_time(10) == 300 and round_time(3599) == 3600 and round_time(3601) == 4500
    assert round_time(1.6 * 86400) == 1.6 * 86400 // 900 * 900 + 900


@pytest.mark.parametrize("nbytes,slurm,kube", [(0.3 * GIB, "400M", "400Mi"), (GIB, "1G", "1Gi"),
                                               (3.1 * GIB, "3200M", "3200Mi"), (9.99 * GIB, "10G", "10Gi"),
                                               (281.2 * GIB, "282G", "282Gi")])
def test_sizes_round_up(nbytes, slurm, kube):
    assert slurm_size(nbytes) == slurm and kube_size(nbytes) == kube


def test_words():
    assert readable_size(3.14 * GIB) == "3.2G" and readable_size(40.2 * GIB) == "41G"
    assert whole(0.2) == 1 and whole(6.0) == 6 and whole(6.01) == 7
    assert duration_words(48 * 3600) == "48 h" and duration_words(45 * 60) == "45 min"
    assert duration_words(4 * 86400) == "4 days"
    assert odds_words(0.2) == "about 1 in 5" and odds_words(0.004) == "fewer than 1 in 100"
    assert odds_words(0.8) == "more than half of" and odds_words(0.6, "at least") == "at least half of"
