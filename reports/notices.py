"""One short plain-text notice per user (``notices/USER.txt``) that an operator can mail: the user's rows of
``recommendations.csv`` in words, with the Slurm options to use.  Formatting only."""

from __future__ import annotations

import re
from pathlib import Path

from .formats import Formatter

UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
WHAT = {"memory": "memory", "time": "time limit", "cores": "cores"}


def _value(fmt: Formatter, unit: str, v) -> str:
    return {"GiB": fmt.gib, "s": fmt.duration}.get(unit, fmt.number)(v)


def notice(user: str, rows: list[dict], fmt: Formatter, cluster: str, prepared_by: str) -> str:
    lines = [f"To: {user}", f"Subject: requests that fit your jobs on {cluster}", "",
             f"An audit of {cluster} compared what your jobs asked for with what they used.",
             "Asking for what the jobs need lets them start sooner and leaves room for others:", ""]
    for r in rows:
        unit = r["unit"]
        lines.append(f"- jobs named like '{r['job_family']}' ({fmt.int(r['jobs'])} jobs): they ask for "
                     f"{_value(fmt, unit, r['ask'])} of {WHAT.get(r['resource'], r['resource'])}; half need "
                     f"{_value(fmt, unit, r['need_p50'])} or less, nine in ten {_value(fmt, unit, r['need_p90'])}. "
                     f"Use {r['slurm']} (frees {fmt.number(r['frees'])} {r['frees_unit']} a month of runs like these).")
    lines += ["", "A job that needs more than it asked for is stopped by the scheduler; if that happens, go back to the",
              "larger request for that job.", "", f"-- {prepared_by}", ""]
    return "\n".join(lines)


def write_notices(recs, folder: Path, fmt: Formatter, cluster: str, prepared_by: str) -> list[Path]:
    """One notice per user as ``folder/USER.txt`` (the name made safe; ``USER-2.txt`` … when two users' safe
    names meet); notices an earlier run left there are removed first."""
    folder = Path(folder)
    for old in folder.glob("*.txt") if folder.is_dir() else ():
        old.unlink()
    if recs is None or recs.empty:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    written, taken = [], set()
    for user, g in recs.groupby("user", sort=True):
        base = UNSAFE.sub("_", str(user))[:80] or "_"
        name, k = base, 1
        while name.lower() in taken:
            k += 1
            name = f"{base}-{k}"
        taken.add(name.lower())
        path = folder / f"{name}.txt"
        path.write_text(notice(str(user), g.to_dict("records"), fmt, cluster, prepared_by), encoding="utf-8")
        written.append(path)
    return written
