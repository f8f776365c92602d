"""Right-sizing predictors: each job's need from its past only, calibrated, and the advice a user gets before
submitting.

- :mod:`predictors.features`: what is known of a job when it is submitted and what it turned out to need, the
  history of its user, family and request shape, and the time-ordered splits that keep every prediction out of
  sample.
- :mod:`predictors.models`: the site rules and the quantile models as estimators, their conformal calibration
  (stratum by stratum) and metrics, the rolling origin that yields the audit's right-sized requests, and the kill
  budget spent where it buys most.
- :mod:`predictors.advisor`: a job script or manifest read as a request, the model fitted once per store, and the
  advice (the request to make, the lines to paste, the warnings).

:mod:`predictors.evaluate` scores every model side by side on future weeks; :mod:`predictors.cli` is the
``reclaim predict`` group.  Only audit's core is imported (``docs/architecture.md``).
"""
