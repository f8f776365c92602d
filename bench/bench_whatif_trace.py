"""``reclaim whatif`` on a large real trace, whole command, on the default local Dask and with ``--serial``.

HPC2N (202,876 jobs, one pool of 240 processors) from ../shared/traces/swf, as an operator would run it on an
archive log: ``--procs 240 --mode advise --predictor last_two --backfill-order sjf``.  Target: under 5 minutes
on the default local Dask (one worker per core), and the same bytes in ``whatif/`` as ``--serial`` gives.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HPC2N = ROOT / ".." / "shared" / "traces" / "swf" / "HPC2N-2002-2.1-cln.swf.gz"
ARGS = ("--procs", "240", "--mode", "advise", "--predictor", "last_two", "--backfill-order", "sjf", "--quiet")
TARGET_S = 300.0


def _run(out: Path, *extra: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "audit.cli", "whatif", str(HPC2N), *ARGS, *extra, "--out", str(out)],
                   check=True, capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - t


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((folder / "whatif").iterdir())
            if p.is_file()}


def main() -> None:
    if not HPC2N.exists():
        print(f"whatif HPC2N: skipped ({HPC2N} not present)")
        return
    with tempfile.TemporaryDirectory(prefix="bench-whatif-trace-") as tmp:
        dask, serial = Path(tmp) / "dask", Path(tmp) / "serial"
        t_dask = _run(dask)
        t_serial = _run(serial, "--serial")
        a, b = _digests(dask), _digests(serial)
    same = a == b
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    print(f"whatif HPC2N (202,876 jobs, whole command): local Dask {t_dask:.0f} s (target < {TARGET_S:.0f} s), "
          f"--serial {t_serial:.0f} s; whatif/ the same bytes: {'yes' if same else 'NO: ' + ', '.join(differ)} "
          f"({len(a)} files)")


if __name__ == "__main__":
    main()
