"""Real services the tests start (two Slurm clusters, a Grid Engine), brought up and given their jobs in a
background thread as the session starts.

Their waits are long and idle (a Slurm TIMEOUT needs its smallest limit, one minute, and slurmctld checks limits
every 30 s; the Grid Engine's jobs sleep and its execd is reconfigured), so ``tests/conftest.py`` starts them once
collection is done, moves their modules' tests to the end of the run, and the rest of the suite runs meanwhile.
Each such module names its start in a function ``bring_up_ahead(skip) -> dict`` (``skip(reason)`` when the service
cannot run here) and its module fixture takes the result with ``take``; what it takes, it stops.

The thread shares its process with the tests that run meanwhile, so a test must not replace what the whole
process uses (``time.time``, ``time.sleep``: patch the name where the code under test looks it up), and the
starts time their waits on the monotonic clock, with ``monotonic`` and ``sleep`` taken by name as their module
is imported, out of reach of a later patch of the ``time`` module.  A test that replaced ``time.time`` with a fixed clock once
ended the Grid Engine's wait for its jobs at once, in about one run in five.

The services start in the reverse of the order their modules run: the first Slurm started owns munged, which
``stop-slurm.sh`` stops only with the cluster that started it, so it is the last one stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest


class Skipped(Exception):
    """The service cannot be started here; the reason is the message."""


def _skip(reason: str) -> None:
    raise Skipped(reason)


class Ahead:
    """Services started in the background, each taken once by its module's fixture."""

    def __init__(self, starts: dict[str, Callable]):
        self.starts = starts
        self.results: dict[str, dict | BaseException] = {}
        self.thread = threading.Thread(target=self._run, name="started-ahead", daemon=True)

    def begin(self) -> Ahead:
        if self.thread.ident is None:  # once
            self.thread.start()
        return self

    def _run(self) -> None:
        for name, start in self.starts.items():
            try:
                self.results[name] = start(_skip)
            except BaseException as exc:  # handed to the module's fixture, which fails or skips with it
                self.results[name] = exc

    def take(self, name: str) -> dict:
        """What was started for module ``name``, once it is ready (started now if it was not yet); the caller
        stops it."""
        self.begin().thread.join()
        got = self.results.pop(name, None)
        if got is None:
            raise KeyError(f"nothing was started ahead for {name}")
        if isinstance(got, Skipped):
            pytest.skip(str(got))
        if isinstance(got, BaseException):
            raise got
        return got

    def close(self) -> None:
        """Stop the services no fixture took (a run cut short, or every test of a module failed to start)."""
        if self.thread.ident is None:  # never started (an xdist worker that ran none of their modules)
            return
        self.thread.join()
        for got in self.results.values():
            if isinstance(got, dict):
                got["stop"]()
        self.results.clear()
