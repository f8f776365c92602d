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

#: every field ``sacct --format`` accepts (Slurm 22.05 to 25.05, as ``sacct --helpformat`` lists them), lower-cased:
#: a first line made of these names, in any order, is a header
SACCT_FIELD_NAMES = frozenset(n.lower() for n in (
    "Account", "AdminComment", "AllocCPUS", "AllocGRES", "AllocNodes", "AllocTRES", "AssocID", "AveCPU",
    "AveCPUFreq", "AveDiskRead", "AveDiskWrite", "AvePages", "AveRSS", "AveVMSize", "BlockID", "Cluster",
    "Comment", "Constraints", "ConsumedEnergy", "ConsumedEnergyRaw", "Container", "CPUTime", "CPUTimeRAW",
    "DBIndex", "DerivedExitCode", "Elapsed", "ElapsedRaw", "Eligible", "End", "ExitCode", "Extra", "FailedNode",
    "Flags", "GID", "Group", "JobID", "JobIDRaw", "JobName", "Layout", "Licenses", "MaxDiskRead",
    "MaxDiskReadNode", "MaxDiskReadTask", "MaxDiskWrite", "MaxDiskWriteNode", "MaxDiskWriteTask", "MaxPages",
    "MaxPagesNode", "MaxPagesTask", "MaxRSS", "MaxRSSNode", "MaxRSSTask", "MaxVMSize", "MaxVMSizeNode",
    "MaxVMSizeTask", "McsLabel", "MinCPU", "MinCPUNode", "MinCPUTask", "NCPUS", "NNodes", "NodeList", "NTasks",
    "Partition", "Planned", "PlannedCPU", "PlannedCPURAW", "Priority", "QOS", "QOSRAW", "Reason", "ReqCPUFreq",
    "ReqCPUFreqGov", "ReqCPUFreqMax", "ReqCPUFreqMin", "ReqCPUS", "ReqGRES", "ReqMem", "ReqNodes", "ReqTRES",
    "Reservation", "ReservationId", "Reserved", "ResvCPU", "ResvCPURAW", "Start", "State", "Submit",
    "SubmitLine", "Suspended", "SystemComment", "SystemCPU", "Timelimit", "TimelimitRaw", "TotalCPU",
    "TRESUsageInAve", "TRESUsageInMax", "TRESUsageInMaxNode", "TRESUsageInMaxTask", "TRESUsageInMin",
    "TRESUsageInMinNode", "TRESUsageInMinTask", "TRESUsageInTot", "TRESUsageOutAve", "TRESUsageOutMax",
    "TRESUsageOutMaxNode", "TRESUsageOutMaxTask", "TRESUsageOutMin", "TRESUsageOutMinNode", "TRESUsageOutMinTask",
    "TRESUsageOutTot", "UID", "User", "UserCPU", "WCKey", "WCKeyID", "WorkDir",
))

#: headerless orders recognised by their field count
KNOWN_ORDERS = {len(XDMOD_26): XDMOD_26}

#: columns whose presence means the dump carries usage (otherwise use is unknown, not zero)
USAGE_FIELDS = ("TotalCPU", "MaxRSS", "AveRSS", "TRESUsageInTot", "AdminComment")


def is_header(tokens: list[str]) -> bool:
    """Whether a first line's fields are sacct field names (any order, any case, a ``-p`` trailing empty field
    allowed): a header names ``JobID``, or names nothing but sacct fields."""
    names = [t.strip().lower() for t in tokens]
    if names and names[-1] == "":
        names = names[:-1]
    if "jobid" in names:
        return True
    return len(names) >= 2 and all(n in SACCT_FIELD_NAMES for n in names)


def normalise_header(names: list[str]) -> list[str]:
    """Map header names to reader keys; unknown names are kept as they are (and ignored)."""
    return [ALIASES.get(n.strip().lower(), n.strip()) for n in names]
