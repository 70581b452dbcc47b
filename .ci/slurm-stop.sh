#!/usr/bin/env bash
# Stop the daemons started by .ci/slurm-start.sh, by their pid files (never by name).
for f in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid /run/munge/munged.pid; do
  [ -s "$f" ] || continue
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
done
exit 0
