#!/bin/sh
# Stop the Grid Engine start-sge.sh brought up in ROOT (its execd, then its qmaster), by the pids they wrote: a
# TERM, then a KILL after 3 s (the instance and its spool are thrown away).
#   stop-sge.sh ROOT
root=$1
for pidfile in "$root"/spool/execd/*/execd.pid "$root/spool/qmaster/qmaster.pid"; do
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || continue
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 15 ]; do i=$((i+1)); sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
done
