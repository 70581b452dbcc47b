#!/usr/bin/env bash
# Start a real single-node Slurm (munge, slurmctld, slurmd) on this machine, for the `slurm`
# tests (tests/test_slurm.py). Needs root; installs slurm-wlm and munge with apt-get if they
# are missing. Safe to run again: daemons left over from an earlier start are stopped first,
# by their pid files. Recipe: shared/ops/single-node-slurm.md. Stop with .ci/slurm-stop.sh.
set -euo pipefail

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurm-wlm munge >/dev/null
fi

HOST=$(hostname -s)
CPUS=$(nproc)
MEM=$(( $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) - 512 ))  # MB, below `slurmd -C`
LOGDIR=/var/log/slurm
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd "$LOGDIR" /run/slurm

bash "$(dirname "$0")/slurm-stop.sh"

[ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
mkdir -p /run/munge && chown munge:munge /run/munge && chmod 0755 /run/munge
runuser -u munge -- /usr/sbin/munged   # daemonizes; pid in /run/munge/munged.pid
munge -n | unmunge >/dev/null

cat > /etc/slurm/slurm.conf <<CONF
ClusterName=ci
SlurmctldHost=${HOST}
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=${LOGDIR}/slurmctld.log
SlurmdLogFile=${LOGDIR}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=30
Waittime=0
NodeName=${HOST} NodeAddr=127.0.0.1 CPUs=${CPUS} RealMemory=${MEM} State=UNKNOWN
PartitionName=debug Nodes=${HOST} Default=YES MaxTime=INFINITE State=UP
CONF

slurmctld   # daemonizes; pid in /run/slurm/slurmctld.pid
slurmd      # daemonizes; pid in /run/slurm/slurmd.pid
for _ in $(seq 1 60); do
  sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)$' && break  # idle* = down
  sleep 0.5
done
sinfo
