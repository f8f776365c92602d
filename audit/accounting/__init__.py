"""The accounting stage: what was allocated against what was used, for every job and in total.

:mod:`.waste` per job (``waste.parquet``), priced by the dated :mod:`.pricebook`; :mod:`.headline` the figures of
``summary.json``; :mod:`.failed` failed work and its diagnosis; :mod:`.occupancy` hour by hour against the
cluster shape (:mod:`.shape`); :mod:`.aggregate` totals by account, user, partition and more, with job
:mod:`.families`; :mod:`.efficiency` as reportseff defines it; :mod:`.quality` the caveats' reach;
:mod:`.account` runs them all (``reclaim account``).
"""

from .account import AccountResult, account, account_jobs, write_account
from .headline import headline, summarise
from .pricebook import PriceBook, PriceBookError, load_price_book

__all__ = ["AccountResult", "PriceBook", "PriceBookError", "account", "account_jobs", "headline",
           "load_price_book", "summarise", "write_account"]
