"""The telemetry stage: attaching telemetry to jobs.

:mod:`.sources` takes the telemetry and node files of an ingest and hands them to their readers; :mod:`.join`
attributes samples to jobs (by label, GPU index or node and time) and summarises them per job, on the vectorised
blocks of :mod:`.kernel` (:mod:`.stream` for a month read from Parquet); :mod:`.caveats` writes the figures into
the job table; :mod:`.store` writes the telemetry files of the store.
"""

from .join import JoinPolicy, TelemetryJoin, join_telemetry
from .sources import TelemetryInputs
from .store import clear_telemetry_store, write_telemetry_store
from .stream import stream_parquet

__all__ = ["JoinPolicy", "TelemetryInputs", "TelemetryJoin", "clear_telemetry_store", "join_telemetry",
           "stream_parquet", "write_telemetry_store"]
