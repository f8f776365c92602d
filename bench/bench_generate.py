"""Time ``reclaim generate`` for the default 122,000-job month (sacct text, 30 s DCGM telemetry, truth)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from audit.synthetic import generate

JOBS = 122_000
TARGET_S = 60.0


def main() -> None:
    out = Path(tempfile.mkdtemp(prefix="reclaim-bench-generate-"))
    try:
        t = time.perf_counter()
        files = generate(out, jobs=JOBS, days=30.0, seed=1)
        took = time.perf_counter() - t
        size = sum(p.stat().st_size for p in files)
        tel = [p for p in files if p.parent.name == "telemetry" and p.suffix == ".json"]
        tel_size = sum(p.stat().st_size for p in tel)
        print(f"generate: {JOBS:,} jobs over 30 days in {took:.1f} s (target < {TARGET_S:.0f} s); "
              f"{len(files)} files, {size / 2**20:,.0f} MiB of which telemetry {tel_size / 2**20:,.0f} MiB "
              f"in {len(tel)} files")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
