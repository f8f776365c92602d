"""The cluster shapes PBS, LSF and Grid Engine report, read from their commands' output as their manuals lay it
out: ``pbsnodes -av`` / ``-a`` with ``qstat -Qf`` (pbsnodes(8B), pbs_node_attributes(7B), qstat(1B)),
``lshosts -w``, ``bhosts -l``, ``bqueues -l`` and ``bmgroup -w -r`` (lshosts(1), bhosts(1), bqueues(1),
bmgroup(1)), ``qhost -F`` with ``qconf -sq`` and ``qconf -shgrp_resolved`` (qhost(1), qconf(1), queue_conf(5),
sge_types(1)).  Every expected figure is worked out by hand in the comment beside it."""

from __future__ import annotations

import pytest

from audit.cluster_shape import load_cluster_shape, toml_text
from audit.readers import read_lsf_hosts, read_pbsnodes, read_qhost
from audit.readers.lsf_hosts import lsf_mem
from audit.readers.pbsnodes import pbs_size
from audit.readers.qhost import queue_hostgroups, sge_memory
from audit.textio import InputError

# ------------------------------------------------------------------ PBS Pro / OpenPBS

PBSNODES_AV = """\
gpu01
     Mom = gpu01.example.org
     Port = 15002
     pbs_version = 2022.1.1
     ntype = PBS
     state = free
     pcpus = 64
     resources_available.arch = linux
     resources_available.host = gpu01
     resources_available.mem = 527988356kb
     resources_available.ncpus = 64
     resources_available.ngpus = 4
     resources_available.vnode = gpu01
     resources_assigned.mem = 0kb
     resources_assigned.ncpus = 0
     queue = gpuq
     resv_enable = True
     sharing = default_shared

gpu02
     Mom = gpu02.example.org
     ntype = PBS
     state = job-busy
     pcpus = 64
     resources_available.host = gpu02
     resources_available.mem = 527988356kb
     resources_available.ncpus = 64
     resources_available.ngpus = 4
     resources_available.vnode = gpu02
     resources_assigned.ncpus = 64
     queue = gpuq
     sharing = default_shared

cpu01
     Mom = cpu01.example.org
     ntype = PBS
     state = free
     pcpus = 32
     resources_available.host = cpu01
     resources_available.mem = 196608000kb
     resources_available.ncpus = 32
     resources_available.vnode = cpu01
     sharing = default_shared

uv01
     Mom = uv01.example.org
     ntype = PBS
     state = free
     resources_available.host = uv01
     resources_available.mem = 0kb
     resources_available.ncpus = 0
     resources_available.vnode = uv01

uv01[0]
     Mom = uv01.example.org
     ntype = PBS
     state = free
     resources_available.host = uv01
     resources_available.mem = 67108864kb
     resources_available.ncpus = 16
     resources_available.vnode = uv01[0]

uv01[1]
     Mom = uv01.example.org
     ntype = PBS
     state = free
     resources_available.host = uv01
     resources_available.mem = 64gb
     resources_available.ncpus = 16
     resources_available.vnode = uv01[1]

broken01
     Mom = broken01.example.org
     ntype = PBS
     state = state-unknown,down
"""

QSTAT_QF = """\
Queue: workq
    queue_type = Execution
    total_jobs = 3
    state_count = Transit:0 Queued:0 Held:0 Waiting:0 Running:3 Exiting:0 Begun:0
    resources_assigned.ncpus = 32
    hasnodes = False
    enabled = True
    started = True

Queue: gpuq
    queue_type = Execution
    total_jobs = 1
    hasnodes = True
    enabled = True
    started = True

Queue: routeq
    queue_type = Route
    route_destinations = workq,
\tgpuq
    enabled = True
    started = True
"""

QSTAT_BF = """\
Server: pbs01
    server_state = Active
    server_host = pbs01.example.org
    scheduling = True
    total_jobs = 4
    pbs_version = 2022.1.1
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_pbs_sizes_are_1024_based_with_words_of_8_bytes():
    assert pbs_size("527988356kb") == 540_660_076_544  # 527,988,356 × 1024
    assert pbs_size("64gb") == 68_719_476_736  # 64 × 1024³
    assert pbs_size("2mw") == 16_777_216  # 2 × 1024² words × 8 bytes
    assert pbs_size("1024") == 1024  # bare: bytes
    assert pbs_size("") is None and pbs_size("lots") is None


def test_pbsnodes_av_vnodes_of_a_host_add_up_and_queues_make_partitions(tmp_path):
    read = read_pbsnodes(write(tmp_path, "pbsnodes.txt", PBSNODES_AV), server=write(tmp_path, "b.txt", QSTAT_BF),
                         queues=write(tmp_path, "q.txt", QSTAT_QF))
    # uv01 = its natural vnode (0 CPUs, 0 kb) + uv01[0] (16, 67,108,864 kb = 64 GiB) + uv01[1] (16, 64gb):
    # 32 CPUs and 128 GiB = 137,438,953,472 bytes; gpu01/gpu02 527,988,356 kb = 540,660,076,544 bytes each;
    # cpu01 196,608,000 kb = 201,326,592,000 bytes.  gpuq holds the vnodes tied to it; workq (no vnode tied to it)
    # holds the vnodes tied to no queue; routeq is a route queue and holds nothing.
    assert read.shape == {
        "name": "pbs01",
        "partitions": [{"name": "workq"}, {"name": "gpuq"}],
        "node_groups": [
            {"name": "workq-0", "count": 1, "cpus": 32, "mem_bytes": 137_438_953_472, "gpus": 0,
             "partitions": ["workq"]},
            {"name": "workq-1", "count": 1, "cpus": 32, "mem_bytes": 201_326_592_000, "gpus": 0,
             "partitions": ["workq"]},
            {"name": "gpuq-2", "count": 2, "cpus": 64, "mem_bytes": 540_660_076_544, "gpus": 4, "gpu_type": "gpu",
             "partitions": ["gpuq"]},
        ],
    }
    assert read.nodes == 4
    assert read.skipped == [(72, "no resources_available.ncpus, np or status ncpus", "broken01")]  # its title line
    load_cluster_shape(read.shape).require("node_groups", "gpu_types", "partitioned")


def test_pbsnodes_without_queues_takes_only_the_vnodes_own_queue(tmp_path):
    read = read_pbsnodes(write(tmp_path, "pbsnodes.txt", PBSNODES_AV))
    assert read.shape["name"] == "pbs"
    assert read.shape["partitions"] == [{"name": "gpuq"}]
    assert [(g["count"], g["cpus"], g.get("partitions")) for g in read.shape["node_groups"]] == [
        (1, 32, None), (1, 32, None), (2, 64, ["gpuq"])]


# ------------------------------------------------------------------ Torque

PBSNODES_TORQUE = """\
n001
     state = free
     power_state = Running
     np = 16
     properties = batch,bigmem
     ntype = cluster
     status = rectime=1793613600,macaddr=00:11:22:33:44:55,cpuclock=Fixed,varattr=,jobs=,state=free,netload=123,\
gres=,loadave=0.00,ncpus=16,physmem=131916220kb,availmem=140000000kb,totmem=148693436kb,idletime=1000,nusers=0,\
nsessions=0,uname=Linux n001 3.10.0 #1 SMP x86_64,opsys=linux
     mom_service_port = 15002
     mom_manager_port = 15003

n002
     state = job-exclusive
     power_state = Running
     np = 16
     properties = batch
     ntype = cluster
     jobs = 0-15/4242.torque01
     status = rectime=1793613600,ncpus=16,totmem=33554432kb,opsys=linux
     mom_service_port = 15002
     mom_manager_port = 15003
     gpus = 2
"""

QSTAT_QF_TORQUE = """\
Queue: batch
    queue_type = Execution
    total_jobs = 1
    resources_default.nodes = 1
    resources_default.walltime = 01:00:00
    mtime = 1793613600
    enabled = True
    started = True

Queue: bigmem
    queue_type = Execution
    resources_default.neednodes = 1:ppn=16:bigmem
    enabled = True
    started = True
"""


def test_torque_np_physmem_gpus_and_properties(tmp_path):
    read = read_pbsnodes(write(tmp_path, "pbsnodes.txt", PBSNODES_TORQUE),
                         queues=write(tmp_path, "q.txt", QSTAT_QF_TORQUE), name="torque01")
    # n001: np 16, physmem 131,916,220 kb = 135,082,209,280 bytes, properties batch,bigmem → in batch (no
    # neednodes: any node tied to no queue) and bigmem (neednodes asks for the property bigmem);
    # n002: np 16, no physmem, totmem 33,554,432 kb = 34,359,738,368 bytes, gpus 2 → batch only
    assert read.shape == {
        "name": "torque01",
        "partitions": [{"name": "batch"}, {"name": "bigmem"}],
        "node_groups": [
            {"name": "batch-0", "count": 1, "cpus": 16, "mem_bytes": 34_359_738_368, "gpus": 2, "gpu_type": "gpu",
             "partitions": ["batch"]},
            {"name": "batch-1", "count": 1, "cpus": 16, "mem_bytes": 135_082_209_280, "gpus": 0,
             "partitions": ["batch", "bigmem"]},
        ],
    }
    assert read.skipped == []


@pytest.mark.parametrize("read, what", [(read_pbsnodes, "pbsnodes output"), (read_lsf_hosts, "lshosts output"),
                                        (read_qhost, "qhost output")])
def test_an_unreadable_node_listing_names_the_file(tmp_path, read, what):
    with pytest.raises(InputError, match=rf"missing\.txt: cannot read {what}: No such file"):
        read(tmp_path / "missing.txt")


# ------------------------------------------------------------------ LSF

LSID = """\
IBM Spectrum LSF Standard 10.1.0.13, Jan 10 2022
Copyright International Business Machines Corp. 1992, 2016.
US Government Users Restricted Rights - Use, duplication or disclosure restricted by GSA ADP Schedule Contract with IBM Corp.

My cluster name is hpc1
My master name is mgmt01
"""

LSHOSTS_W = """\
HOST_NAME                       type       model  cpuf ncpus maxmem maxswp server RESOURCES
mgmt01                        X86_64 Intel_EM64T  60.0    16  62.8G   4G    Yes (mg)
login01                       X86_64 Intel_EM64T  60.0     8  31.3G   4G     No ()
cn001                         X86_64 Intel_EM64T  60.0    40 191.9G   4G    Yes ()
cn002                         X86_64 Intel_EM64T  60.0    40 191.9G   4G    Yes ()
gn001                         X86_64 Intel_EM64T  60.0    48 503.5G   4G    Yes (gpu nvlink)
cn003                        UNKNOWN UNKNOWN_AUTO_DETECT   1.0     -      -      -    Yes ()
"""

BHOSTS_L = """\
HOST  cn001
STATUS           CPUF  JL/U    MAX  NJOBS    RUN  SSUSP  USUSP    RSV DISPATCH_WINDOW
ok              60.00     -     40     10     10      0      0      0      -

 CURRENT LOAD USED FOR SCHEDULING:
                r15s   r1m  r15m    ut    pg    io   ls    it   tmp   swp   mem  slots
 Total           1.0   1.0   1.0   25%   0.0    10    0  1000  350G  4.0G 150.2G     30
 Reserved        0.0   0.0   0.0    0%   0.0     0    0     0    0M    0M   40G      -


 LOAD THRESHOLD USED FOR SCHEDULING:
           r15s   r1m  r15m   ut      pg    io   ls    it    tmp    swp    mem
 loadSched   -     -     -     -       -     -    -     -     -      -      -
 loadStop    -     -     -     -       -     -    -     -     -      -      -


HOST  gn001
STATUS           CPUF  JL/U    MAX  NJOBS    RUN  SSUSP  USUSP    RSV DISPATCH_WINDOW
ok              60.00     -     48      2      2      0      0      0      -

 CURRENT LOAD USED FOR SCHEDULING:
                r15s   r1m  r15m    ut    pg    io   ls    it   tmp   swp   mem  slots
 Total           0.5   0.5   0.5   10%   0.0     5    0  2000  400G  4.0G 400.0G     46
 Reserved        0.0   0.0   0.0    0%   0.0     0    0     0    0M    0M    0M      -

               ngpus ngpus_shared ngpus_excl_t ngpus_excl_p ngpus_physical
 Total           4.0          0.0          4.0          0.0            2.0
 Reserved        0.0          0.0          0.0          0.0            2.0


 LOAD THRESHOLD USED FOR SCHEDULING:
           r15s   r1m  r15m   ut      pg    io   ls    it    tmp    swp    mem
 loadSched   -     -     -     -       -     -    -     -     -      -      -
 loadStop    -     -     -     -       -     -    -     -     -      -      -


HOST  cn003
STATUS           CPUF  JL/U    MAX  NJOBS    RUN  SSUSP  USUSP    RSV DISPATCH_WINDOW
unavail          1.00     -     40      0      0      0      0      0      -
"""

BQUEUES_L = """\
QUEUE: normal
  -- For normal low priority jobs, running only if hosts are lightly loaded.  This is the default queue.

PARAMETERS/STATISTICS
PRIO NICE STATUS          MAX JL/U JL/P JL/H NJOBS  PEND   RUN SSUSP USUSP  RSV PJOBS
 30    0  Open:Active       -    -    -    -    10     0    10     0     0    0     0
Interval for a host to accept two jobs is 0 seconds

SCHEDULING PARAMETERS
           r15s   r1m  r15m   ut      pg    io   ls    it    tmp    swp    mem
 loadSched   -     -     -     -       -     -    -     -     -      -      -
 loadStop    -     -     -     -       -     -    -     -     -      -      -

USERS: all
HOSTS:  cpu_hosts/ cn003
ADMINISTRATORS:  lsfadmin

QUEUE: gpu
  -- Jobs that use GPUs.

PARAMETERS/STATISTICS
PRIO NICE STATUS          MAX JL/U JL/P JL/H NJOBS  PEND   RUN SSUSP USUSP  RSV PJOBS
 40    0  Open:Active       -    -    -    -     2     0     2     0     0    0     0

USERS: all
HOSTS:  gpu_hosts/

QUEUE: short
  -- Short jobs anywhere but the GPU host.

USERS: all
HOSTS:  all ~gn001

QUEUE: night
  -- No HOSTS: every host.

USERS: all

QUEUE: prio
  -- The GPU host first, then the others.

USERS: all
HOSTS:  gn001+2 others
"""

BMGROUP = """\
GROUP_NAME    HOSTS
cpu_hosts     cn001 cn002
gpu_hosts     gn001
"""


def test_lsf_memory_is_1024_based_and_bare_figures_are_mb():
    assert lsf_mem("503.5G") == 540_629_008_384  # 503.5 × 1024³
    assert lsf_mem("191.9G") == 206_051_056_026  # 191.9 × 1,073,741,824 = 206,051,056,025.6
    assert lsf_mem("2047M") == 2_146_435_072  # 2047 × 1024²
    assert lsf_mem("2047") == 2_146_435_072  # bare: MB
    assert lsf_mem("-") is None


def test_lsf_hosts_slots_gpus_and_queues(tmp_path):
    read = read_lsf_hosts(write(tmp_path, "lshosts.txt", LSHOSTS_W), bhosts=write(tmp_path, "bh.txt", BHOSTS_L),
                          queues=write(tmp_path, "bq.txt", BQUEUES_L), hostgroups=write(tmp_path, "bm.txt", BMGROUP),
                          lsid=write(tmp_path, "lsid.txt", LSID))
    # mgmt01 16 CPUs, 62.8G = 67,430,986,547 bytes (62.8 × 1024³ = 67,430,986,547.2); cn001/cn002 40, 191.9G;
    # gn001 48, 503.5G, GPUs ngpus_physical Total 2.0 + Reserved 2.0 = 4; cn003 ncpus "-": its MAX 40 slots,
    # maxmem "-": 0; login01 is a client (server No).  Queues: normal = cpu_hosts/ (cn001 cn002) + cn003;
    # gpu = gn001; short = all but gn001; night (no HOSTS) = all; prio = gn001 + the others = all.
    assert read.shape == {
        "name": "hpc1",
        "partitions": [{"name": "short"}, {"name": "night"}, {"name": "prio"}, {"name": "normal"}, {"name": "gpu"}],
        "node_groups": [
            {"name": "short-0", "count": 1, "cpus": 16, "mem_bytes": 67_430_986_547, "gpus": 0,
             "partitions": ["short", "night", "prio"]},
            {"name": "normal-1", "count": 1, "cpus": 40, "mem_bytes": 0, "gpus": 0,
             "partitions": ["normal", "short", "night", "prio"]},
            {"name": "normal-2", "count": 2, "cpus": 40, "mem_bytes": 206_051_056_026, "gpus": 0,
             "partitions": ["normal", "short", "night", "prio"]},
            {"name": "gpu-3", "count": 1, "cpus": 48, "mem_bytes": 540_629_008_384, "gpus": 4, "gpu_type": "gpu",
             "partitions": ["gpu", "night", "prio"]},
        ],
    }
    assert read.nodes == 5
    assert read.skipped == [(3, "a client host (server No), where no job runs", "login01")]
    load_cluster_shape(read.shape).require("node_groups", "gpu_types", "partitioned")


def test_lsf_without_bqueues_says_there_are_no_partitions(tmp_path):
    read = read_lsf_hosts(write(tmp_path, "lshosts.txt", LSHOSTS_W))
    # without bhosts cn003 has neither ncpus nor MAX: set aside
    assert read.shape["name"] == "lsf" and read.shape["partitions"] == []
    assert read.nodes == 4 and [s[2] for s in read.skipped] == ["login01", "cn003"]
    assert read.notes == ["no bqueues -l output: the hosts are in no partition"]


# ------------------------------------------------------------------ Grid Engine

QHOST_F = """\
HOSTNAME                ARCH         NCPU NSOC NCOR NTHR  LOAD  MEMTOT  MEMUSE  SWAPTO  SWAPUS
----------------------------------------------------------------------------------------------
global                  -               -    -    -    -     -       -       -       -       -
   gc:licenses=10.000000
node01                  lx-amd64       32    2   16   32  0.50  251.6G   10.2G    8.0G     0.0
   hl:arch=lx-amd64
   hl:num_proc=32.000000
   hl:mem_total=251.613G
   hl:swap_total=8.000G
   hl:virtual_total=259.613G
   hl:load_avg=0.500000
   hc:slots=32.000000
node02                  lx-amd64       32    2   16   32  0.10  251.6G   10.2G    8.0G     0.0
   hl:arch=lx-amd64
   hl:num_proc=32.000000
   hl:mem_total=251.613G
gpu01                   lx-amd64       48    2   24   48  2.00  503.5G   40.0G    8.0G     0.0
   hl:num_proc=48.000000
   hl:mem_total=503.500G
   hc:gpu=2.000000
gpu02                   lx-amd64       48    2   24   48  1.00  503.5G   20.0G    8.0G     0.0
   hl:num_proc=48.000000
   hl:gpu=4.000000
   hc:gpu=1.000000
down01                  lx-amd64        -    -    -    -     -       -       -       -       -
"""

QCONF_ALL_Q = """\
qname                 all.q
hostlist              @allhosts
seq_no                0
load_thresholds       np_load_avg=1.75
suspend_thresholds    NONE
pe_list               make smp mpi
rerun                 FALSE
slots                 1,[node01.cluster=32],[node02=32],[gpu01=0], \\
                      [gpu02=48]
tmpdir                /tmp
shell                 /bin/sh
h_rt                  INFINITY
"""

QCONF_GPU_Q = """\
qname                 gpu.q
hostlist              @gpuhosts
seq_no                1
slots                 48
"""

ALLHOSTS = "node01.cluster node02.cluster gpu01 gpu02 down01\n"
GPUHOSTS = "gpu01 gpu02\n"


def test_sge_memory_specifiers():
    assert sge_memory("251.613G") == 270_167_401_562  # 251.613 × 1,073,741,824 = 270,167,401,562.1
    assert sge_memory("503.5G") == 540_629_008_384  # 503.5 × 1024³
    assert sge_memory("4g") == 4_000_000_000  # g: × 1000³
    assert sge_memory("512M") == 536_870_912  # M: × 1024²
    assert sge_memory("-") is None


def test_qhost_queues_slots_and_hostgroups(tmp_path):
    queues = [write(tmp_path, "all.q.txt", QCONF_ALL_Q), write(tmp_path, "gpu.q.txt", QCONF_GPU_Q)]
    groups = {"@allhosts": write(tmp_path, "@allhosts.txt", ALLHOSTS),
              "@gpuhosts": write(tmp_path, "@gpuhosts.txt", GPUHOSTS)}
    read = read_qhost(write(tmp_path, "qhost.txt", QHOST_F), queues=queues, hostgroups=groups)
    # node01/node02: NCPU 32, hl:mem_total 251.613G = 270,167,401,562 bytes; in all.q (@allhosts, by their short
    # names; 32 slots each).  gpu01: 48 CPUs, 503.5G, gpu only hc:gpu=2 (what is free now) → 2, with a note;
    # all.q gives it 0 slots → gpu.q only.  gpu02: MEMTOT 503.5G, hl:gpu=4 (a load value: the host's count) over
    # hc:gpu=1; all.q 48 slots and gpu.q.  down01: NCPU "-" and no num_proc → set aside.
    assert read.shape == {
        "name": "sge",
        "partitions": [{"name": "all.q"}, {"name": "gpu.q"}],
        "node_groups": [
            {"name": "all.q-0", "count": 2, "cpus": 32, "mem_bytes": 270_167_401_562, "gpus": 0,
             "partitions": ["all.q"]},
            {"name": "gpu.q-1", "count": 1, "cpus": 48, "mem_bytes": 540_629_008_384, "gpus": 2, "gpu_type": "gpu",
             "partitions": ["gpu.q"]},
            {"name": "all.q-2", "count": 1, "cpus": 48, "mem_bytes": 540_629_008_384, "gpus": 4, "gpu_type": "gpu",
             "partitions": ["all.q", "gpu.q"]},
        ],
    }
    assert read.skipped == [(25, "no NCPU (the host is down or never reported)", "down01")]  # its line
    assert len(read.notes) == 1 and "gpu01" in read.notes[0] and "gpu02" not in read.notes[0]
    load_cluster_shape(read.shape).require("node_groups", "gpu_types", "partitioned")
    assert "count = 2" in toml_text(read.shape)


def test_the_hostgroups_a_queue_names_are_read_from_hostlist_and_slots():
    text = "qname q1\nhostlist @a node9, @b\nslots 4,[@c=2],[node9=8]\n"
    assert queue_hostgroups(text) == ["@a", "@b", "@c"]
    assert queue_hostgroups(QCONF_ALL_Q) == ["@allhosts"]
