"""The readers: one module per input format, each a ``read_<format>()`` that maps a file into the core's tables
(jobs, the long telemetry table, nodes) with its ledger and quarantine.  Readers import only the core.

``sacct/`` (text and ``--json``), ``pbs`` (PBS Pro, OpenPBS, Torque), ``lsf`` (``lsb.acct``), ``sge`` (Grid Engine),
``k8s/`` (pods, nodes, kube-state-metrics), ``swf``, ``alibaba``, ``jobstats``
(the summaries in ``AdminComment``), ``prometheus``, ``cgroup``, ``gpu_index`` (a prolog's GPU holds);
``scontrol`` (the shape a Slurm cluster reports), ``pbsnodes``, ``lsf_hosts`` and ``qhost`` (the shapes PBS, LSF
and Grid Engine report), ``pilot`` (a ``reclaim collect`` tarball); ``detect`` tells a
file's format, ``dispatch`` hands it to its reader.
"""

from .alibaba import read_alibaba_genai, read_alibaba_nodes, read_alibaba_pods
from .cgroup import read_cgroup
from .detect import NODES, READABLE, TELEMETRY, detect_format, expand_paths
from .dispatch import read_jobs_file, read_nodes_file, read_telemetry_file
from .gpu_index import read_gpu_index
from .jobstats import decode_jobstats, encode_jobstats
from .k8s import read_k8s_nodes, read_k8s_pods
from .lsf import read_lsf
from .lsf_hosts import read_lsf_hosts
from .pbs import read_pbs
from .pbsnodes import read_pbsnodes
from .pilot import is_pilot_tarball, read_pilot
from .prometheus import read_prometheus
from .qhost import read_qhost
from .sacct import read_sacct, read_sacct_json
from .scontrol import read_scontrol_nodes
from .sge import read_sge
from .swf import read_swf

__all__ = [
    "NODES", "READABLE", "TELEMETRY", "decode_jobstats", "detect_format", "encode_jobstats", "expand_paths",
    "is_pilot_tarball", "read_alibaba_genai", "read_alibaba_nodes", "read_alibaba_pods", "read_cgroup",
    "read_gpu_index", "read_jobs_file", "read_k8s_nodes", "read_k8s_pods", "read_lsf", "read_lsf_hosts",
    "read_nodes_file", "read_pbs", "read_pbsnodes", "read_pilot", "read_prometheus", "read_qhost", "read_sacct",
    "read_sacct_json", "read_scontrol_nodes", "read_sge", "read_swf", "read_telemetry_file",
]
