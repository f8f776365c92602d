"""The accounting stage: what was allocated against what was used, for every job and in total.

:mod:`.waste` per job (``waste.parquet``), priced by the dated :mod:`.pricebook`; :mod:`.headline` the figures of
``summary.json``; :mod:`.failed` failed work and its diagnosis; :mod:`.occupancy` hour by hour against the
cluster shape (:mod:`.shape`); :mod:`.aggregate` totals by account, user, partition and more, with job
:mod:`.families`; :mod:`.efficiency` as reportseff defines it; :mod:`.quality` the caveats' reach;
:mod:`.findings` the wasteful jobs by kind (after Job Defense Shield's alerts); :mod:`.periods` dollars per month and
year under every price book; :mod:`.daily` occupancy against utilisation by day; :mod:`.recommend` right-sized
requests per user and job family from the what-if's predictions; :mod:`.account` runs them all
(``reclaim account``).
"""

from .account import AccountResult, account, account_jobs, write_account, write_recommendations
from .findings import Thresholds
from .headline import headline, summarise
from .pricebook import PriceBook, PriceBookError, load_price_book

__all__ = ["AccountResult", "PriceBook", "PriceBookError", "account", "account_jobs", "headline",
           "load_price_book", "summarise", "Thresholds", "write_account", "write_recommendations"]
