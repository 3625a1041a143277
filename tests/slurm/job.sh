#!/bin/bash
# A Slurm batch script for one rocmbuild run (docs/howto-batch-scheduler.md): the same command in every
# start of the job, so a requeued job continues its run.  The scheduler's SIGTERM (a requeue, a
# preemption, or --signal=B:TERM@N before the time limit) reaches rocmbuild, which stops cleanly and
# exits 130; the script then requeues the job when it may (REQUEUE_ON_INTERRUPT=1) and gives up otherwise.
# Usage: sbatch --requeue --open-mode=append [--signal=B:TERM@120] job.sh RECIPE [rocmbuild options...]
set -u
echo "job ${SLURM_JOB_ID} start ${SLURM_RESTART_COUNT:-0}"
rocmbuild "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT HUP
wait "$pid"; rc=$?
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done  # a trapped signal ends `wait` early
echo "rocmbuild exit $rc"
case $rc in
  0) ;;                                    # succeeded (or up to date)
  130|143) # 130 interrupted: the run is resumable, the next start of this job continues it;
           # 143: the signal came before rocmbuild could start (no run yet): starting again is as safe
    if [ "${REQUEUE_ON_INTERRUPT:-0}" = 1 ]; then scontrol requeue "$SLURM_JOB_ID"; fi ;;
  5) echo "out of --budget: give it more time" ;;   # budget_exhausted: resumable only with more time
  *) echo "rocmbuild gave up (exit $rc): see the run's summary" ;;  # 1, 2, 3, 4, 70: requeueing won't help
esac
exit "$rc"
