"""The glossary at the end of the report: every term its pages use, in plain words."""

TERMS = (
    ("Allocated", "What a job held from the scheduler (cores, memory, GPUs) for its whole run, used or not."),
    ("Binding resource", "Of a pool: the resource (memory, cores or GPUs) whose cut by the oracle is the most of "
                         "the pool's nodes' worth; the pool's gap to the oracle is counted in it."),
    ("Bounded slowdown", "A job's time from submission to end over its run time (runs under 10 s count as 10 s); "
                         "1 means it never waited."),
    ("Calibrated prediction at pXX", "A job's predicted need, from its user's and job family's past only, set so "
                                     "that XX % of jobs need at most that much; the coverage measured out of sample "
                                     "is in the methods."),
    ("Capacity search", "Replays of the month on smaller clusters, pool by pool, to find the fewest nodes that keep "
                        "today's p95 wait and bounded slowdown."),
    ("Enforce / advise", "Enforce: the job gets only the right-sized request and is killed where it crosses it, then "
                         "resubmitted as asked. Advise: the scheduler plans with the prediction, the job keeps its "
                         "own limit."),
    ("Failed work", "Resources held by jobs that ended OUT_OF_MEMORY, TIMEOUT, NODE_FAIL, FAILED or PREEMPTED."),
    ("Fidelity", "The replay of the requests as made against the schedule the logs record: how far to trust the "
                 "simulator."),
    ("Finding", "Jobs that waste capacity in one recognised way (after Job Defense Shield's alerts), with the "
                "threshold in the config."),
    ("Idle", "Allocated but not used: cores not busy, memory above the peak, GPUs not utilised; counted only where "
             "use is known."),
    ("Idle share of allocated compute", "Idle dollars over allocated dollars of the resources whose use is known."),
    ("Kills per 1,000 jobs", "Attempts the right-sized requests would have killed (memory or time crossed), per "
                             "1,000 jobs: the failure cost of a risk level."),
    ("MIG", "Multi-Instance GPU: one GPU split into isolated slices, each with part of its memory."),
    ("Occupancy", "What was allocated out of the partition's capacity, over time."),
    ("p95 wait", "The wait that 95 % of jobs do not exceed."),
    ("Price book", "Dated prices per vCPU-hour, GiB-hour and GPU-hour, each with its source."),
    ("Recommended risk level", "The level that recovers the most nodes with kills at or under the tolerance, on "
                               "average over the month and its shaken copies for the closest contenders."),
    ("Recoverable capacity", "Nodes the cluster could do without, at the recommended level, keeping today's "
                             "service; the interval comes from shaken copies of the month."),
    ("Resource-hours", "A resource held for a time: core-h, GiB-h, GPU-h, node-h."),
    ("Service rule", "Of the gap to the oracle: the nodes left once no history, the spread of predictions and "
                     "kills are counted; capacity freed that the queue and the packing of jobs onto nodes still "
                     "need to keep today's service."),
    ("Shaken mean", "A contender's nodes recovered on average over the month as it ran and its shaken copies "
                    "(every submission moved by up to 5 minutes)."),
    ("Tolerance", "The largest share of jobs the recommended level may kill."),
    ("Utilisation", "What was used of what was allocated, over the jobs with known use."),
)
