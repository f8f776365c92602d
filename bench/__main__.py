"""Run every benchmark module in a fresh process (so each one's peak memory is its own)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import bench


def main() -> int:
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(bench.__file__).parent)]) if m.name.startswith("bench_"))
    only = sys.argv[1:]
    failed = 0
    for name in names:
        if only and not any(o in name for o in only):
            continue
        print(f"== {name}", flush=True)
        code = f"import bench.{name} as m; m.main()"
        rc = subprocess.call([sys.executable, "-c", code])
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
