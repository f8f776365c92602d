"""Resource model of a single pool of interchangeable processors.

A *free state* is an ``int`` (free processors); an *allocation* is an ``int`` (processors held).
All resource models offer the same small algebra, so scheduling policies are written once:
``fits(free, req)`` → allocation or ``None``; ``take``/``give`` return the new free state (a model
with array states updates them in place); ``copy``; ``cap`` (the smaller of two states); ``empty``;
``idle`` (CPUs and GPUs free in total).
"""

from __future__ import annotations


class PoolModel:
    """One pool of ``procs`` processors; a request needs ``nodes × cpus`` of them."""

    kind = "pool"

    def __init__(self, procs: int):
        if procs < 1:
            raise ValueError(f"a pool needs at least one processor, got {procs}")
        self.procs = int(procs)

    def initial(self) -> int:
        return self.procs

    def request(self, nodes: int, cpus: int, mem: int, gpus: int, partition: str):
        return nodes * cpus

    def ever_fits(self, req) -> bool:
        return req <= self.procs

    @staticmethod
    def fits(free: int, req: int):
        return req if req <= free else None

    @staticmethod
    def take(free: int, alloc: int) -> int:
        return free - alloc

    @staticmethod
    def give(free: int, alloc: int) -> int:
        return free + alloc

    @staticmethod
    def copy(free: int) -> int:
        return free

    @staticmethod
    def cap(a: int, b: int) -> int:
        return a if a < b else b

    @staticmethod
    def empty(free: int) -> bool:
        return free <= 0

    @staticmethod
    def idle(free: int) -> list:
        """[CPUs, GPUs] free in total."""
        return [free, 0]

    @staticmethod
    def held(alloc: int) -> tuple:
        """(CPUs, memory bytes, GPUs) an allocation holds."""
        return alloc, 0, 0

    @staticmethod
    def nodes_of(alloc: int) -> None:
        return None
