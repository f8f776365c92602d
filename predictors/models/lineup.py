"""The model line-up compared side by side: the five site baselines, the four site rules on each job's habit
(user, job family, request shape), and the two quantile models."""

from __future__ import annotations

from ..features import get_target
from .baselines import HabitRule, KRRBaseline, LastTwoBaseline, RequestBaseline, UserMeanBaseline, VPABaseline
from .habit_t import HabitT
from .quantile_hurdle import HurdleQuantileGBM
from .quantile_linear import LinearQuantile

BASELINES = ("request", "user_mean", "last_two", "vpa", "krr")
#: the rules sites and Kubernetes tools use, keyed on the habit: (statistic, margin, ended jobs needed).
#: ``habit_max``: the largest past need plus 20 % once two ended; KRR's max over 14 days plus 15 %; VPA's
#: 90th percentile over 8 days plus 15 %; Autopilot's decayed 98th percentile plus 10 %
HABIT_RULES = {"habit_max": ("max", 1.2, 2), "habit_krr": ("krr", 1.15, 2), "habit_vpa": ("vpa", 1.15, 2),
               "habit_autopilot": ("autopilot", 1.1, 2)}
#: the habit's predictive distribution of its next job's share of the request (``habit_t``)
HABIT_MODELS = ("habit_t",)
#: models whose quantiles are conformalised on the trailing window
CALIBRATED = ("quantreg", "lightgbm")
MODELS = BASELINES + tuple(HABIT_RULES) + HABIT_MODELS + CALIBRATED


def default_models(levels, target: str, *, n_estimators: int = 60, num_threads: int = 1, random_state: int = 0,
                   only=None) -> dict:
    """Fresh, unfitted estimators by name (``only`` keeps a subset, in line-up order)."""
    off = get_target(target).log_offset
    make = {
        "request": lambda: RequestBaseline(levels),
        "user_mean": lambda: UserMeanBaseline(levels),
        "last_two": lambda: LastTwoBaseline(levels),
        "vpa": lambda: VPABaseline(levels),
        "krr": lambda: KRRBaseline(levels),
        **{name: (lambda a=args: HabitRule(levels, stat=a[0], margin=a[1], min_history=a[2]))
           for name, args in HABIT_RULES.items()},
        "habit_t": lambda: HabitT(levels),
        "quantreg": lambda: LinearQuantile(levels, log_offset=off),
        "lightgbm": lambda: HurdleQuantileGBM(levels, n_estimators=n_estimators, log_offset=off,
                                              num_threads=num_threads, random_state=random_state),
    }
    names = MODELS if only is None else tuple(m for m in MODELS if m in set(only))
    unknown = set(only or ()) - set(MODELS)
    if unknown:
        raise ValueError(f"unknown model(s) {sorted(unknown)}; choose among {', '.join(MODELS)}")
    return {m: make[m]() for m in names}
