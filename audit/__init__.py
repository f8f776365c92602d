"""Reclaim audit, in wings (docs/architecture.md): the front door (``cli``, ``pipeline``, ``ingest``), the stages
(``telemetry``, ``accounting``, ``whatif``), the ``readers`` and the core (the job, telemetry and node tables,
ledger, store, units, text I/O, the cluster shape); ``synthetic`` is the generator."""

__version__ = "0.1.0"
