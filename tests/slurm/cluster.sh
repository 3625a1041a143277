#!/usr/bin/env bash
# A real single-node Slurm cluster (munged + slurmctld + slurmd, Debian's slurm-wlm and munge) for the
# scheduler test tier.  Everything lives in one private directory (config, keys, spool, logs, PID files)
# with its own ports, so it touches no system-wide Slurm or munge setup.
#
#   tests/slurm/cluster.sh start   # idempotent: starts what is not running, waits for the node to be idle
#   tests/slurm/cluster.sh stop    # stops the daemons it started, by their PIDs
#   tests/slurm/cluster.sh env     # prints `export SLURM_CONF=...` for clients (sbatch, squeue, scontrol)
#
# Needs root (slurmd runs jobs as their submitter; SlurmUser=root).  ROCMBUILD_SLURM_DIR moves the directory.
set -euo pipefail
DIR=${ROCMBUILD_SLURM_DIR:-/tmp/rocmbuild-slurm}
CONF=$DIR/slurm.conf
MUNGE=$DIR/munge
HOST=$(hostname)
CTLD_PORT=${ROCMBUILD_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${ROCMBUILD_SLURMD_PORT:-16818}

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_packages() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
  else
    echo "slurm cluster: slurmctld/munged missing; install them with: sudo apt-get install slurm-wlm munge" >&2
    exit 1
  fi
}

start_munge() {
  alive "$MUNGE/run/munged.pid" && return 0
  # The key private to munge; the socket's directory open to clients (munged checks both).
  mkdir -p "$MUNGE/etc" "$MUNGE/run"
  [ -f "$MUNGE/etc/munge.key" ] || dd if=/dev/urandom bs=1 count=1024 of="$MUNGE/etc/munge.key" status=none
  chown -R munge:munge "$MUNGE"
  chmod 755 "$MUNGE" "$MUNGE/run"
  chmod 700 "$MUNGE/etc"
  chmod 400 "$MUNGE/etc/munge.key"
  runuser -u munge -- /usr/sbin/munged --socket="$MUNGE/run/munge.socket" --key-file="$MUNGE/etc/munge.key" \
    --pid-file="$MUNGE/run/munged.pid" --log-file="$MUNGE/etc/munged.log" --seed-file="$MUNGE/etc/munged.seed"
}

write_conf() {
  local mem
  mem=$(( $(free -m | awk '/Mem/{print $2}') - 1024 ))
  mkdir -p "$DIR/ctld" "$DIR/slurmd" "$DIR/log"
  cat > "$CONF.new" <<CONF
ClusterName=rocmbuildci
SlurmctldHost=$HOST
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE/run/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/slurmd
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
ReturnToService=2
KillWait=30
MinJobAge=600
JobRequeue=1
MpiDefault=none
NodeName=$HOST CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
  mv "$CONF.new" "$CONF"
}

start() {
  [ "$(id -u)" = 0 ] || { echo "slurm cluster: needs root (slurmd starts jobs as their user)" >&2; exit 1; }
  install_packages
  start_munge
  [ -f "$CONF" ] || write_conf
  export SLURM_CONF=$CONF
  alive "$DIR/slurmctld.pid" || /usr/sbin/slurmctld -f "$CONF"
  alive "$DIR/slurmd.pid" || /usr/sbin/slurmd -f "$CONF"
  for _ in $(seq 1 100); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      echo "slurm cluster: up (SLURM_CONF=$CONF)"
      return 0
    fi
    sleep 0.2
  done
  echo "slurm cluster: the node did not come up; see $DIR/log" >&2
  sinfo >&2 || true
  exit 1
}

stop_pid() {  # stop one daemon by the PID in its file, SIGKILL if it lingers
  local file=$1
  alive "$file" || { rm -f "$file"; return 0; }
  local pid
  pid=$(cat "$file")
  kill -TERM "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || { rm -f "$file"; return 0; }; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$file"
}

stop() {
  stop_pid "$DIR/slurmd.pid"
  stop_pid "$DIR/slurmctld.pid"
  stop_pid "$MUNGE/run/munged.pid"
  echo "slurm cluster: stopped"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
