"""Ingest a 1,000,000-line sacct --parsable2 text file (allocation lines with .batch, .extern and srun steps).

Target: ≥ 100,000 lines/s and < 2 GiB peak on a 2-core machine.  The file is written once into
bench/data/ (deterministic, seed 7) and reused.
"""

from __future__ import annotations

import numpy as np

from audit.readers.sacct.text import read_sacct

from .common import DATA, peak_rss_mib, timed

HEADER = ("JobID|JobIDRaw|Cluster|Partition|QOS|Account|User|Submit|Eligible|Start|End|Elapsed|Timelimit|State|"
          "ExitCode|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|TotalCPU|MaxRSS|AveRSS|NTasks|TRESUsageInTot|"
          "NodeList|JobName")
LINES = 1_000_000


def _hms(s: np.ndarray) -> np.ndarray:
    d, rem = np.divmod(s.astype(np.int64), 86400)
    h, rem = np.divmod(rem, 3600)
    m, sec = np.divmod(rem, 60)
    body = np.char.add(np.char.add(np.char.add(np.char.zfill(h.astype(str), 2), ":"),
                                   np.char.add(np.char.zfill(m.astype(str), 2), ":")), np.char.zfill(sec.astype(str), 2))
    return np.where(d > 0, np.char.add(np.char.add(d.astype(str), "-"), body), body)


def make_file(path, lines: int = LINES, seed: int = 7) -> None:
    """Four lines per job: allocation, .batch, .extern, .0 — realistic values, vectorised."""
    rng = np.random.default_rng(seed)
    n = lines // 4
    ids = (1_000_000 + np.arange(n)).astype(str)
    cpus = rng.choice([1, 2, 4, 8, 16, 32, 64], n)
    el = rng.lognormal(7.5, 1.5, n).clip(1, 6 * 86400).astype(int)
    limit = (el * rng.uniform(1.2, 4, n)).astype(int)
    t0 = np.datetime64("2024-03-01T00:00:00") + np.sort(rng.integers(0, 30 * 86400, n)).astype("timedelta64[s]")
    start = t0 + rng.integers(0, 3600, n).astype("timedelta64[s]")
    end = start + el.astype("timedelta64[s]")
    ts = lambda a: np.datetime_as_string(a, unit="s")  # noqa: E731
    sub, st, en = ts(t0), ts(start), ts(end)
    mem = (cpus * 4000).astype(str)
    used = (cpus * el * rng.uniform(0.05, 1, n)).astype(int)
    rss = (rng.lognormal(13, 1.5, n)).astype(int).astype(str)
    state = rng.choice(["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 1000", "OUT_OF_MEMORY"], n,
                       p=[0.8, 0.08, 0.05, 0.05, 0.02])
    user = np.char.add("u", rng.integers(0, 500, n).astype(str))
    c = cpus.astype(str)
    elt, lim, usedt = _hms(el), _hms(limit), _hms(used)
    sep = "|"

    def join(*cols):
        out = cols[0]
        for col in cols[1:]:
            out = np.char.add(np.char.add(out, sep), col)
        return out

    e = np.full(n, "")
    alloc = join(ids, ids, np.full(n, "bench"), np.full(n, "cpu"), np.full(n, "normal"), np.char.add("acct", user),
                 user, sub, sub, st, en, elt, lim, state, np.full(n, "0:0"), np.full(n, "1"), c, c,
                 np.char.add(mem, "M"), e, np.char.add(np.char.add("billing=" + c.astype(object), ",cpu=").astype(str),
                                                         np.char.add(c, np.char.add(",mem=", np.char.add(mem, "M,node=1")))),
                 usedt, e, e, e, e, np.full(n, "n001"), np.full(n, "job"))
    batch = join(np.char.add(ids, ".batch"), np.char.add(ids, ".batch"), np.full(n, "bench"), e, e, e, e, sub, sub,
                 st, en, elt, e, np.full(n, "COMPLETED"), np.full(n, "0:0"), np.full(n, "1"), c, c, e, e, e,
                 np.full(n, "00:01.500"), np.full(n, "5120K"), np.full(n, "5120K"), np.full(n, "1"), e,
                 np.full(n, "n001"), np.full(n, "batch"))
    extern = join(np.char.add(ids, ".extern"), np.char.add(ids, ".extern"), np.full(n, "bench"), e, e, e, e, sub, sub,
                  st, en, elt, e, np.full(n, "COMPLETED"), np.full(n, "0:0"), np.full(n, "1"), c, c, e, e, e,
                  np.full(n, "00:00:00"), np.full(n, "0"), np.full(n, "0"), np.full(n, "1"), e, np.full(n, "n001"),
                  np.full(n, "extern"))
    step0 = join(np.char.add(ids, ".0"), np.char.add(ids, ".0"), np.full(n, "bench"), e, e, e, e, sub, sub, st, en,
                 elt, e, np.full(n, "COMPLETED"), np.full(n, "0:0"), np.full(n, "1"), c, c, e, e, e, usedt,
                 np.char.add(rss, "K"), np.char.add(rss, "K"), c, np.char.add("mem=", np.char.add(rss, "K")),
                 np.full(n, "n001"), np.full(n, "solver"))
    body = np.stack([alloc, batch, extern, step0], axis=1).reshape(-1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "\n" + "\n".join(body.tolist()) + "\n", encoding="utf-8")


def main() -> None:
    path = DATA / "sacct_1M.txt"
    if not path.exists():
        make_file(path)
    with timed() as t:
        r = read_sacct(path)
    led = r.ledger
    assert led.balanced and led.quarantined == 0, led.to_dict()
    print(f"sacct text ingest: {led.read:,} lines ({len(r.jobs):,} jobs, {led.folded:,} steps folded) in {t['s']:.2f} s"
          f" = {led.read / t['s']:,.0f} lines/s; peak memory {peak_rss_mib():,.0f} MiB"
          f"  [target >= 100,000 lines/s, < 2,048 MiB]")


if __name__ == "__main__":
    main()
