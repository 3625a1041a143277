"""What a build has imported when its first attempt's process is spawned (issue 10's start-up goal).

A real ``rocmbuild build`` of a one-step recipe, with pexpect's spawn wrapped to write down
``sys.modules`` at that moment: modules the first attempt does not need must not be there (each
costs its import, dataclasses and regexes on the way to every build); nor are facts.json's probes
running yet (their processes compete for the CPUs with rocmbuild's start).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_e2e_ladder import base_env

# pexpect.spawn wrapped: the first call writes the module names down, then spawns as before.
SPY = """
import json, sys
import pexpect
real, out = pexpect.spawn, sys.argv.pop(1)
def spawn(*args, **kwargs):
    if not spawn.seen:
        spawn.seen = True
        from rocmbuild.process.command import pending_pids
        with open(out, "w") as handle:
            json.dump({"modules": sorted(sys.modules), "probes": len(pending_pids())}, handle)
    return real(*args, **kwargs)
spawn.seen = False
pexpect.spawn = spawn
from rocmbuild.cli import main
sys.argv[0] = "rocmbuild"
main()
"""

NOT_BEFORE_THE_FIRST_ATTEMPT = (
    "_hashlib",  # OpenSSL (~5 ms): digest.py hashes the keys and small trees
    "psutil", "structlog",  # imported once the step's process exists (proctree.Tree, recorder.open_events)
    "rocmbuild.loop.ladder", "rocmbuild.loop.remedies", "rocmbuild.checks.preflight",  # at a failure / preflight
    "rocmbuild.records.history", "rocmbuild.records.attempts",  # `history`; an attempt's record, once it ended
)


def test_a_build_spawns_its_first_attempt_without_what_it_does_not_need(tmp_path: Path) -> None:
    recipe = tmp_path / "one.toml"
    recipe.write_text('name = "one"\n[steps]\nbuild = ["true"]\n')
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text("int main(void) { return 0; }\n")  # hashed for the up-to-date check
    for run in ("first", "second"):
        seen = tmp_path / f"modules-{run}.json"
        proc = subprocess.run([sys.executable, "-c", SPY, str(seen), "build", str(recipe), "--source", str(src),
                               "--run-dir", str(tmp_path / run), "--arch", "gfx90a", "--skip-preflight",
                               "--no-cache", "--quiet", "--force"],
                              env=base_env(tmp_path), capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        at_spawn = json.loads(seen.read_text())
        modules = set(at_spawn["modules"])
        assert "rocmbuild.process.runner" in modules, "written down at the attempt's spawn"
        assert [m for m in NOT_BEFORE_THE_FIRST_ATTEMPT if m in modules] == []
        # The first run on a machine parses the TOML files; the next reads them from the cache (tomlcache.py).
        assert ("tomllib" in modules) == (run == "first")
        # facts.json's probes start once the attempt's process exists (runfacts.DeferredFacts), and are done
        # before the summary is final.
        assert at_spawn["probes"] == 0
        facts = json.loads((tmp_path / run / "facts.json").read_text())
        assert {"cmake", "ninja", "setuptools", "pip", "torch"} <= set(facts["tools"])
