"""A tiny rocmbuild-like driver: runs one attempt inside InterruptFlag and exits 130 when interrupted.

usage: driver.py WORKDIR COMMAND
Writes WORKDIR/marker.json with the outcome (the "records") before exiting.
"""

import json
import os
import sys
from pathlib import Path

from rocmbuild.process.attempt import AttemptHooks, AttemptRequest
from rocmbuild.process.runner import InterruptFlag, Limits, Step, run_attempt
from rocmbuild.process.watcher import Watcher

work = Path(sys.argv[1])
command = sys.argv[2]
with InterruptFlag() as interrupted:
    outcome = run_attempt(
        AttemptRequest((Step("build", command),), cwd=work, env=dict(os.environ), log_path=work / "attempt-1.log",
                       limits=Limits(stall_timeout_s=30, grace_s=0.5)),
        AttemptHooks(watcher=Watcher(), interrupted=interrupted),
    )
    record = {"ended": outcome.ended, "exit_code": outcome.exit_code, "signal": outcome.signal,
              "step": outcome.step.name if outcome.step else None, "received": interrupted.received}
    (work / "marker.json").write_text(json.dumps(record))
sys.exit(130 if outcome.ended == "interrupted" else 0 if outcome.succeeded else 1)
