"""Right-sizing predictors on 100,000 jobs of the generated month: train every target at 0.5/0.9/0.99.

Targets: training all five targets' LightGBM models (the ``lightgbm`` of the line-up: hurdle classifier and
quantile boosters) on 100,000 jobs < 60 s; predicting 100,000 jobs < 5 s (p50/p90/p99; the whole quantile curve that calibration reads,
``CURVE_LEVELS``, is timed beside it).  Feature building (past-only history) is timed separately.
"""

from __future__ import annotations

from audit.ingest import read_inputs
from predictors.features import TARGETS, actual, eligible, submission_features
from predictors.models import CURVE_LEVELS, default_models

from .bench_account import month_dir
from .common import peak_rss_mib, timed

JOBS = 100_000
LEVELS = (0.5, 0.9, 0.99)


def main() -> None:
    jobs = read_inputs([month_dir() / "sacct.txt"]).jobs.head(JOBS).reset_index(drop=True)
    total = {"feat": 0.0, "fit": 0.0, "pred": 0.0, "curve": 0.0}
    for name in TARGETS:
        with timed() as t_feat:
            X = submission_features(jobs, name)
        ok = eligible(jobs, name)
        y = actual(jobs, name)[ok]
        with timed() as t_fit:
            model = default_models(LEVELS, name, only=["lightgbm"])["lightgbm"].fit(X[ok], y)
        with timed() as t_pred:
            model.predict(X)
        with timed() as t_curve:
            model.predict_at(X, CURVE_LEVELS)
        for k, t in (("feat", t_feat), ("fit", t_fit), ("pred", t_pred), ("curve", t_curve)):
            total[k] += t["s"]
        print(f"  {name:<10} features {t_feat['s']:5.2f} s, fit {int(ok.sum()):>7,} jobs × 3 levels {t_fit['s']:5.2f} s, "
              f"predict {len(jobs):,} jobs {t_pred['s']:5.2f} s (curve of {len(CURVE_LEVELS)} levels {t_curve['s']:5.2f} s)")
    print(f"predict train: 5 targets × 3 levels on {len(jobs):,} jobs in {total['fit']:.1f} s (target < 60 s), "
          f"features {total['feat']:.1f} s; predict p50/p90/p99 of {len(jobs):,} jobs × 5 targets in {total['pred']:.2f} s "
          f"(target < 5 s), the calibration curve in {total['curve']:.2f} s; peak memory {peak_rss_mib():,.0f} MiB")

if __name__ == "__main__":
    main()
