"""Benchmarks: `make bench` runs each bench_* module in its own process and prints its figures."""
