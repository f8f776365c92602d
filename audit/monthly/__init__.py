"""The monthly run's pieces: months kept side by side for trends (:mod:`.trends`), the short summary
(:mod:`.summary`), Prometheus textfile metrics (:mod:`.textfile`), and safe publishing (:mod:`.folders`).
The run itself, which chains collection, the audit and these, is ``audit.pipeline.monthly``."""

from .folders import Busy, locked, publish, staging, write_atomic
from .summary import markdown, monthly_summary
from .textfile import textfile
from .trends import groups_of, history, month_figures, movers, record_month

__all__ = ["Busy", "groups_of", "history", "locked", "markdown", "month_figures", "monthly_summary", "movers",
           "publish", "record_month", "staging", "textfile", "write_atomic"]
