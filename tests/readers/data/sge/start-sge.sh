#!/bin/sh
# Bring up a single-host Grid Engine (Debian's gridengine-master/-exec 8.1.9, i.e. Son of Grid Engine) in a folder
# of its own: its own cell, spool and ports, so that a Grid Engine already on the machine is left alone.
#   start-sge.sh ROOT QMASTER_PORT EXECD_PORT [EXECD_PARAMS]
# ROOT must not exist.  Prints the environment to source (SGE_ROOT, SGE_CELL, ports, PATH) on its last lines.
# Stop with stop-sge.sh ROOT.  Needs root; the daemons run as root (admin_user none), jobs may run as root
# (min_uid 0).
set -eu
root=$1; qport=$2; eport=$3; execd_params=${4:-none}
host=$(hostname)
[ ! -e "$root" ] || { echo "$root exists" >&2; exit 1; }
mkdir -p "$root/default/common" "$root/spool/qmaster" "$root/spool/execd" "$root/jobs"
chmod 1777 "$root/jobs"
for d in bin lib util utilbin; do ln -s "/var/lib/gridengine/$d" "$root/$d"; done
cat > "$root/default/common/bootstrap" <<END
# Version: 8.1.9
admin_user              none
default_domain          none
ignore_fqdn             true
spooling_method         classic
spooling_lib            libspoolc
spooling_params         $root/default/common;$root/spool/qmaster
binary_path             /usr/sbin
qmaster_spool_dir       $root/spool/qmaster
security_mode           none
listener_threads        2
worker_threads          2
scheduler_threads       1
END
echo "$host" > "$root/default/common/act_qmaster"
# a host whose name resolves to the loopback address (containers) is seen as "localhost" by the qmaster
echo "$host localhost" > "$root/default/common/host_aliases"
export SGE_ROOT="$root" SGE_CELL=default SGE_QMASTER_PORT="$qport" SGE_EXECD_PORT="$eport"
sed -e "s#^execd_spool_dir .*#execd_spool_dir $root/spool/execd#" \
    -e "s#^min_uid .*#min_uid 0#" -e "s#^min_gid .*#min_gid 0#" \
    -e "s#^execd_params .*#execd_params $execd_params#" \
    -e "s#^reporting_params .*#reporting_params accounting=true reporting=false flush_time=00:00:01 joblog=false sharelog=00:00:00#" \
    -e "s#^load_report_time .*#load_report_time 00:00:05#" \
    /usr/share/gridengine/default-configuration > "$root/global-conf"
/usr/lib/gridengine/spoolinit classic libspoolc "$root/default/common;$root/spool/qmaster" init >/dev/null
/usr/lib/gridengine/spooldefaults configuration "$root/global-conf" >/dev/null
/usr/lib/gridengine/spooldefaults complexes /usr/share/gridengine/util/resources/centry >/dev/null
/usr/lib/gridengine/spooldefaults usersets /usr/share/gridengine/util/resources/usersets >/dev/null
/usr/lib/gridengine/spooldefaults managers root >/dev/null
/usr/sbin/sge_qmaster
i=0
until qconf -sh >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 60 ] || { echo "qmaster did not come up" >&2; exit 1; }; sleep 1; done
qconf -ssconf | sed -e 's/^schedule_interval .*/schedule_interval 0:0:1/' > "$root/sconf"
qconf -Msconf "$root/sconf" >/dev/null
qconf -ah "$host" >/dev/null 2>&1 || true
qconf -as "$host" >/dev/null
printf 'hostname %s\nload_scaling NONE\ncomplex_values NONE\nuser_lists NONE\nxuser_lists NONE\nprojects NONE\nxprojects NONE\nusage_scaling NONE\nreport_variables NONE\n' "$host" > "$root/exechost"
qconf -Ae "$root/exechost" >/dev/null
printf 'pe_name smp\nslots 64\nuser_lists NONE\nxuser_lists NONE\nstart_proc_args /bin/true\nstop_proc_args /bin/true\nallocation_rule $pe_slots\ncontrol_slaves TRUE\njob_is_first_task TRUE\nurgency_slots min\naccounting_summary FALSE\nqsort_args NONE\n' > "$root/pe"
qconf -Ap "$root/pe" >/dev/null
qconf -sq all.q >/dev/null 2>&1 || true
cat > "$root/queue" <<END
qname                 all.q
hostlist              $host
seq_no                0
load_thresholds       NONE
suspend_thresholds    NONE
nsuspend              1
suspend_interval      00:05:00
priority              0
min_cpu_interval      00:05:00
processors            UNDEFINED
qtype                 BATCH INTERACTIVE
ckpt_list             NONE
pe_list               smp
rerun                 FALSE
slots                 8
tmpdir                /tmp
shell                 /bin/sh
prolog                NONE
epilog                NONE
shell_start_mode      unix_behavior
starter_method        NONE
suspend_method        NONE
resume_method         NONE
terminate_method      NONE
notify                00:00:05
owner_list            NONE
user_lists            NONE
xuser_lists           NONE
subordinate_list      NONE
complex_values        NONE
projects              NONE
xprojects             NONE
calendar              NONE
initial_state         default
s_rt                  INFINITY
h_rt                  INFINITY
s_cpu                 INFINITY
h_cpu                 INFINITY
s_fsize               INFINITY
h_fsize               INFINITY
s_data                INFINITY
h_data                INFINITY
s_stack               INFINITY
h_stack               INFINITY
s_core                INFINITY
h_core                INFINITY
s_rss                 INFINITY
h_rss                 INFINITY
s_vmem                INFINITY
h_vmem                INFINITY
END
qconf -Aq "$root/queue" >/dev/null
/usr/sbin/sge_execd
i=0
until qhost -h "$host" 2>/dev/null | awk 'NR>3 && $4 != "-" {ok=1} END {exit !ok}'; do
  i=$((i+1)); [ $i -lt 90 ] || { echo "execd did not report" >&2; exit 1; }; sleep 1
done
echo "SGE_ROOT=$root SGE_CELL=default SGE_QMASTER_PORT=$qport SGE_EXECD_PORT=$eport"
