"""Field names of ``sacct`` output: header aliases and the known headerless field orders."""

from __future__ import annotations

#: lower-cased sacct header name → the key the text reader uses
ALIASES = {
    "jobid": "JobID", "jobidraw": "JobIDRaw", "cluster": "Cluster", "partition": "Partition", "qos": "QOS",
    "account": "Account", "group": "Group", "gid": "GID", "user": "User", "uid": "UID",
    "submit": "Submit", "eligible": "Eligible", "start": "Start", "end": "End",
    "elapsed": "Elapsed", "elapsedraw": "ElapsedRaw", "exitcode": "ExitCode", "state": "State",
    "nnodes": "NNodes", "allocnodes": "NNodes", "ncpus": "NCPUS", "alloccpus": "NCPUS",
    "reqcpus": "ReqCPUS", "reqnodes": "ReqNodes", "reqmem": "ReqMem", "reqtres": "ReqTRES",
    "alloctres": "AllocTRES", "reqgres": "ReqGRES", "allocgres": "AllocGRES",
    "timelimit": "Timelimit", "timelimitraw": "TimelimitRaw", "nodelist": "NodeList", "jobname": "JobName",
    "totalcpu": "TotalCPU", "maxrss": "MaxRSS", "averss": "AveRSS", "ntasks": "NTasks",
    "tresusageintot": "TRESUsageInTot", "admincomment": "AdminComment",
}

#: the 26-field headerless order of ``sacct --parsable2 --noheader --allocations --duplicates`` dumps
#: used by Open XDMoD's shredder (``../shared/traces/sacct/phillips.log``)
XDMOD_26 = (
    "JobID", "JobIDRaw", "Cluster", "Partition", "QOS", "Account", "Group", "GID", "User", "UID",
    "Submit", "Eligible", "Start", "End", "Elapsed", "ExitCode", "State", "NNodes", "NCPUS", "ReqCPUS",
    "ReqMem", "ReqTRES", "AllocTRES", "Timelimit", "NodeList", "JobName",
)

#: headerless orders recognised by their field count
KNOWN_ORDERS = {len(XDMOD_26): XDMOD_26}

#: columns whose presence means the dump carries usage (otherwise use is unknown, not zero)
USAGE_FIELDS = ("TotalCPU", "MaxRSS", "AveRSS", "TRESUsageInTot", "AdminComment")


def normalise_header(names: list[str]) -> list[str]:
    """Map header names to reader keys; unknown names are kept as they are (and ignored)."""
    return [ALIASES.get(n.strip().lower(), n.strip()) for n in names]
