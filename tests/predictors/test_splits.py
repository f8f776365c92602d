"""Rolling-origin folds, worked by hand on days (predictors.features.splits)."""

from __future__ import annotations

import numpy as np

from predictors.features.splits import DAY_S, fold_of, origins


def days(*d):
    return np.array(d, dtype=np.float64) * DAY_S


def test_a_30_day_month_after_a_week_of_warm_up_has_four_weekly_origins():
    submit = days(0, 6.9, 7, 13.9, 14, 21, 27.9, 28, 29.5, 30)
    assert (origins(submit, warmup_days=7, test_days=7) == days(7, 14, 21, 28)).all()
    # days 28-30 are a window of their own; before day 7 no fold
    assert fold_of(submit, days(7, 14, 21, 28), 7).tolist() == [-1, -1, 0, 0, 1, 2, 2, 3, 3, 3]


def test_a_last_window_under_half_a_week_joins_the_one_before():
    submit = days(0, 7, 14, 21, 27.9, 28, 29.5, 30)  # the last window spans two days: under 3.5
    got = origins(submit, warmup_days=7, test_days=7, min_last_share=0.5)
    assert (got == days(7, 14, 21)).all()
    assert fold_of(submit, got, 7, open_last=True).tolist() == [-1, 0, 1, 2, 2, 2, 2, 2]
    assert fold_of(submit, got, 7).tolist() == [-1, 0, 1, 2, 2, -1, -1, -1]  # without open_last: no fold


def test_a_last_window_of_half_a_week_or_more_keeps_its_origin():
    submit = days(0, 7, 14, 21, 28, 31.5)  # 3.5 days: not under half a week
    got = origins(submit, warmup_days=7, test_days=7, min_last_share=0.5)
    assert (got == days(7, 14, 21, 28)).all()
    assert fold_of(submit, got, 7, open_last=True).tolist() == [-1, 0, 1, 2, 3, 3]


def test_a_single_short_window_is_never_joined_away():
    submit = days(0, 7, 8)
    assert (origins(submit, warmup_days=7, test_days=7, min_last_share=0.5) == days(7)).all()
