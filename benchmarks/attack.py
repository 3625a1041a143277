"""The attack table: one line per case (held / GOT THROUGH), then held/tried.

usage: python benchmarks/attack.py [--only SUBSTRING] [--list]

Runs the installed ``rocmbuild`` (the venv's, next to this interpreter) for real:
real processes, signals, PTYs, mounts (root), cgroups.  Set PYTHONPATH to
another checkout to attack that code instead (``PYTHONPATH=/tmp/old python
benchmarks/attack.py``).  Every case cleans up its processes and mounts.

Categories: stop (no survivor of any escape kind after any stop path, SIGKILL
included), sigkill-records (records readable after SIGKILL), leftovers, clean
(nothing outside the tree deleted), secrets, repro, lock, reader (a closed or
damaged reader, damaged records), fs, recipe, options (bad input exits 2), flood
(memory flat), redos (a catastrophic user regex is refused or cannot hang the
build), trust (files another user can change), terminal (escapes from the build), uptodate (a
change the build depends on is never answered with up_to_date), special (FIFOs, devices, a
sparse file, signals and --budget while the fingerprint reads the tree): attack_uptodate.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
CHILDREN = ROOT / "tests" / "children"
ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
PY = sys.executable

Case = tuple[str, Callable[[Path], tuple[bool, str]]]


# -- helpers ---------------------------------------------------------------------------------------


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"), HIP_PLATFORM="amd")
    env.update(extra)
    return env


def recipe(tmp: Path, build: str, *, name: str = "atk", env: str = "", clean: str = "") -> Path:
    path = tmp / f"{name}.toml"
    path.write_text(f'name = "{name}"\n[env]\n{env}\n[steps]\nbuild = [{json.dumps(build)}]\n'
                    + (f"[clean]\npaths = {clean}\n" if clean else ""))
    return path


def build_argv(tmp: Path, recipe_path: Path, *extra: str, run: str = "run", source: str = "src") -> list[str]:
    (tmp / source).mkdir(exist_ok=True)
    return [ROCMBUILD, str(recipe_path), "--source", str(tmp / source), "--run-dir", str(tmp / run),
            "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--max-attempts", "1", *extra]


def run(argv: list[str], env: dict[str, str], timeout: float = 60, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]


def marked(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.info["status"] != psutil.STATUS_ZOMBIE and marker in (p.info["cmdline"] or []):
            found.append(p)
    return found


def kill_marked(marker: str) -> None:
    for _ in range(100):
        procs = marked(marker)
        if not procs:
            return
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.kill()
        time.sleep(0.02)


def kinds_alive(marker: str) -> set[str]:
    kinds = set()
    for p in marked(marker):
        with contextlib.suppress(psutil.Error):
            cmd = p.cmdline()
            kinds.add("reforker" if any("reforker.py" in c for c in cmd) else cmd[-1])
    return kinds


@contextlib.contextmanager
def mounted(where: Path, *args: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", *args, str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def summary(run_dir: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((run_dir / "summary.json").read_text())
    return data


# -- stop: no survivor after any stop path -------------------------------------------------------------

KINDS = ("daemon", "session", "nohup", "reforker")
_stop_results: dict[str, set[str] | str] = {}


def _stop_run(tmp: Path, path: str) -> set[str] | str:
    """Run escapers.py under rocmbuild, stop it by ``path``; which escape kinds are still alive."""
    marker = f"atk-{uuid.uuid4().hex[:10]}"
    stay = path != "normal-exit"
    r = recipe(tmp, f"{PY} {CHILDREN / 'escapers.py'} {marker}{' stay' if stay else ''}")
    extra = {"stall": ["--stall-timeout", "2s"], "budget": ["--budget", "3s"]}.get(path, [])
    proc = start_until_ready(build_argv(tmp, r, *extra), env_for(tmp))
    try:
        sig = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP,
               "SIGKILL": signal.SIGKILL}.get(path)
        if sig is not None:
            proc.send_signal(sig)
        proc.communicate(timeout=60)
        deadline = time.monotonic() + (5 if path == "SIGKILL" else 1)
        while marked(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        return kinds_alive(marker)
    except Exception as exc:  # the case failed to run: it did not hold
        return f"{type(exc).__name__}: {exc}"
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_marked(marker)


def stop_case(path: str, kind: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        if path not in _stop_results:
            _stop_results[path] = _stop_run(tmp, path)
        alive = _stop_results[path]
        if isinstance(alive, str):
            return False, alive
        return kind not in alive, f"{kind} survived" if kind in alive else ""
    return case


# -- records after SIGKILL, leftovers ------------------------------------------------------------------


def sigkill_records(delay: float) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        r = recipe(tmp, f"{PY} -c 'import time\nfor i in range(10**6): print(\"line\", i, flush=True)'")
        proc = subprocess.Popen(build_argv(tmp, r), env=env_for(tmp), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not (tmp / "run" / "attempt-1.log").exists() and time.monotonic() < deadline:
            time.sleep(0.02)  # killed while the build runs (before it, there is no run to read)
        time.sleep(delay)
        proc.kill()
        proc.wait()
        time.sleep(1)
        rep = run([ROCMBUILD, "report", str(tmp / "run"), "--json"], env_for(tmp))
        return rep.returncode == 0 and json.loads(rep.stdout)["outcome"] == "running", rep.stderr[-200:]
    return case


def start_until_ready(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """Start a build whose step is escapers.py and wait until its escapers say they are running."""
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "escapers ready" in line:
            break
    return proc


def leftovers(tmp: Path) -> tuple[bool, str]:
    marker = f"atk-{uuid.uuid4().hex[:10]}"
    r = recipe(tmp, f"{PY} {CHILDREN / 'escapers.py'} {marker} stay")
    proc = start_until_ready(build_argv(tmp, r), env_for(tmp))
    try:
        me = psutil.Process(proc.pid)
        for p in [*(c for c in me.children() if c.status() != psutil.STATUS_ZOMBIE
                    and "watchdog.py" in " ".join(c.cmdline())), me]:
            p.kill()
        proc.wait()
        time.sleep(0.3)
        second = run(build_argv(tmp, recipe(tmp, "true", name="ok"), run="run2"), env_for(tmp))
        time.sleep(0.5)
        alive = kinds_alive(marker)
        events = (tmp / "run2" / "events.jsonl").read_text() if (tmp / "run2").exists() else ""
        return not alive and "leftovers.stopped" in events, f"alive {alive}, exit {second.returncode}"
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_marked(marker)


# -- clean ------------------------------------------------------------------------------------------


def _outside(tmp: Path) -> tuple[Path, set[str]]:
    outside = tmp / "outside"
    (outside / "sub").mkdir(parents=True, exist_ok=True)
    for i in range(20):
        (outside / f"keep{i}").write_text("keep")
    (outside / "sub" / "keep").write_text("keep")
    return outside, {str(p) for p in outside.rglob("*")}


def clean_case(setup: Callable[[Path, Path], list[str]], *, mount: str | None = None,
               swapper: bool = False) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        from rocmbuild.loop.effects import safe_remove

        outside, before = _outside(tmp)
        src = tmp / "src"
        src.mkdir(exist_ok=True)
        patterns = setup(src, outside)
        with contextlib.ExitStack() as stack:
            if mount == "bind":
                stack.enter_context(mounted(src / "build" / "mnt", "--bind", str(outside)))
            elif mount == "tmpfs":
                m = stack.enter_context(mounted(src / "build" / "scratch", "-t", "tmpfs", "-o", "size=1M", "tmpfs"))
                (m / "data").write_text("keep")
                before = before | {"tmpfs-data"}
            error = ""
            try:
                if swapper:
                    stop = threading.Event()
                    thread = threading.Thread(target=_swap, args=(src, outside, stop), daemon=True)
                    thread.start()
                    end = time.monotonic() + 3
                    try:
                        while time.monotonic() < end:
                            safe_remove(src, patterns)
                    finally:
                        stop.set()
                        thread.join(5)
                else:
                    safe_remove(src, patterns)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            after = {str(p) for p in outside.rglob("*")}
            if mount == "tmpfs" and (src / "build" / "scratch" / "data").exists():
                after.add("tmpfs-data")
        lost = before - after
        return not lost and not error, error or (f"{len(lost)} deleted outside" if lost else "")
    return case


def _swap(src: Path, outside: Path, stop: threading.Event) -> None:
    build = src / "build"
    while not stop.is_set():
        try:
            if build.is_symlink() or not build.exists():
                build.unlink(missing_ok=True)
                build.mkdir()
                for i in range(10):
                    (build / f"o{i}").symlink_to(outside)
            else:
                tmp = src / "build.tmp"
                tmp.unlink(missing_ok=True)
                tmp.symlink_to(outside)
                os.rename(build, src / f"old-{time.monotonic_ns()}")
                os.replace(tmp, build)
        except OSError:
            continue


def _link_dir(src: Path, outside: Path) -> list[str]:
    (src / "build").symlink_to(outside)
    return ["build", "build/*"]


def _link_inside(src: Path, outside: Path) -> list[str]:
    (src / "build").mkdir()
    (src / "build" / "escape").symlink_to(outside)
    return ["build"]


def _link_file(src: Path, outside: Path) -> list[str]:
    (src / "out").mkdir()
    (src / "out" / "x.o").symlink_to(outside / "keep0")
    return ["out/*.o"]


def _middle(src: Path, outside: Path) -> list[str]:
    (src / "third_party").symlink_to(outside)
    return ["third_party/sub", "third_party/**/keep*"]


def _dotdot(src: Path, outside: Path) -> list[str]:
    return ["../outside", "../outside/*", "build/../../outside"]


def _absolute(src: Path, outside: Path) -> list[str]:
    return [str(outside), str(outside / "*")]


def _hidden_glob(src: Path, outside: Path) -> list[str]:
    (src / ".cache").symlink_to(outside)
    return [".*", ".cache/*", "**/keep*"]


def _deep(src: Path, outside: Path) -> list[str]:
    d = src / "build"
    for i in range(30):
        d = d / f"d{i}"
    d.mkdir(parents=True)
    (d / "link").symlink_to(outside)
    return ["build"]


def _egg(src: Path, outside: Path) -> list[str]:
    (src / "pkg.egg-info").symlink_to(outside)
    return ["*.egg-info", "*.egg-info/*"]


def _mnt(src: Path, outside: Path) -> list[str]:
    (src / "build" / "mnt").mkdir(parents=True)
    (src / "build" / "obj.o").write_text("")
    return ["build", "build/mnt"]


def _scratch(src: Path, outside: Path) -> list[str]:
    (src / "build" / "scratch").mkdir(parents=True)
    return ["build"]


def _swap_setup(src: Path, outside: Path) -> list[str]:
    (src / "build").symlink_to(outside)
    return ["build", "build/*", "old-*"]


# -- secrets, repro, lock, reader, fs, recipes --------------------------------------------------------


_secret_run: dict[str, tuple[str, Path]] = {}
_cleanup: list[Path] = []  # directories shared by several cases, removed at the end


def _secrets(_case_tmp: Path) -> tuple[str, Path]:
    """One build leaking every kind of secret, shared by the secret cases (in its own directory)."""
    if "x" not in _secret_run:
        tmp = Path(tempfile.mkdtemp(prefix="atk-secrets-"))
        _cleanup.append(tmp)
        r = recipe(tmp, "false", env='PIP_EXTRA_INDEX_URL = "https://user:hunter2pw@pypi.example/simple"\n'
                                     'HF_TOKEN = "hf_tok_value"\nMY_API_KEY = "apikeyvalue"\n'
                                     'DB_PASSWORD = "dbpwvalue"\nCI_SECRET_X = "secretvalue"')
        argv = build_argv(tmp, r, "--verbose", "--json")
        argv.remove("--no-cache")
        argv += ["--cache-remote", "redis://:redispw@127.0.0.1:9"]
        proc = run(argv, env_for(tmp))
        _secret_run["x"] = (proc.stdout + proc.stderr, tmp / "run")
    return _secret_run["x"]


def secret_case(secret: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        console, run_dir = _secrets(tmp)
        where = [p.name for p in run_dir.iterdir() if not p.name.startswith("attempt-")
                 and secret in p.read_text(errors="replace")]
        if secret in console:
            where.append("console")
        return not where, f"in {', '.join(where)}" if where else ""
    return case


def secret_modes(tmp: Path) -> tuple[bool, str]:
    _, run_dir = _secrets(tmp)
    bad = [p.name for p in [run_dir, *run_dir.iterdir()] if p.stat().st_mode & 0o077]
    return not bad, f"readable by others: {bad}" if bad else ""


def repro_case(kind: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        pwned = tmp / "pwned"
        if kind == "run-dir-newline":
            r, run_name = recipe(tmp, "true"), f"run\ntouch {pwned}\n"
        elif kind == "env-value":
            r, run_name = recipe(tmp, "true", env=f'X = "$(touch {pwned})`touch {pwned}`"'), "run"
        else:  # metacharacters in an env name (refused at load is also a hold)
            r, run_name = recipe(tmp, "true", env=f'"A;touch {pwned};B" = "1"'), "run"
        proc = run(build_argv(tmp, r, run=run_name), env_for(tmp))
        script = tmp / run_name / "repro.sh"
        if not script.exists():
            return proc.returncode == 2, f"no repro.sh, exit {proc.returncode}"
        subprocess.run(["bash", str(script)], capture_output=True, timeout=30, cwd=tmp)
        return not pwned.exists(), "injected command ran" if pwned.exists() else ""
    return case


def lock_case(alias: bool, same_state: bool = False) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        r = recipe(tmp, "sleep 20")
        first_env = env_for(tmp / ("b" if same_state else "a"))
        first = subprocess.Popen(build_argv(tmp, r, run="r1"), env=first_env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while not (tmp / "r1" / "attempt-1.log").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            argv = build_argv(tmp, r, run="r2")
            if alias:
                (tmp / "alias").symlink_to(tmp / "src")
                argv[argv.index("--source") + 1] = str(tmp / "alias")
            second = run(argv, env_for(tmp / "b"), timeout=40)
            return second.returncode == 2, f"second build exit {second.returncode}"
        finally:
            first.send_signal(signal.SIGTERM)
            first.wait(timeout=30)
    return case


def reader_case(how: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        r = recipe(tmp, f"{PY} -c 'import time\nfor i in range(3000): print(i, flush=True)\ntime.sleep(0.3)'")
        cmd = " ".join(f"'{a}'" for a in build_argv(tmp, r))
        shell = f"{cmd} | head -2 >/dev/null" if how == "head" else f"{cmd} >&- 2>&-"
        proc = run(["bash", "-c", f"{shell}; echo \"rc=${{PIPESTATUS[0]}}\" >&2"
                    if how == "head" else f"{shell}; echo rc=$? >&2"], env_for(tmp))
        rc = proc.stderr.strip().rpartition("rc=")[2]
        s = summary(tmp / "run")
        return s["exit_code"] == 0 and rc == "0", f"exit {rc}, recorded {s['exit_code']} {s['outcome']}"
    return case


def fs_case(kind: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        env = env_for(tmp)
        opts = "size=1M,ro" if kind.startswith("ro") else "size=1M"
        with mounted(tmp / "m", "-t", "tmpfs", "-o", opts, "tmpfs") as m:
            build = "true"
            run_name = "m/run"
            if kind in ("full-run-dir", "full-state-dir"):
                with open(m / "filler", "wb") as f, contextlib.suppress(OSError):
                    while True:
                        f.write(b"\0" * 65536)
                        f.flush()
            if kind in ("full-state-dir", "ro-state-dir"):
                env["XDG_STATE_HOME"] = str(m)
                run_name = "run"
            if kind == "fills-during":
                build = f"{PY} -c 'for i in range(40000): print(\"x\" * 60, i)'"
            proc = run(build_argv(tmp, recipe(tmp, build), run=run_name), env)
            want = 4 if kind == "fills-during" else 2
            if kind == "full-state-dir" and proc.returncode == 0:
                want = 0  # a state dir holding only locks and a link may still work: also a hold
            ok = proc.returncode == want and "Traceback" not in proc.stderr and "internal error" not in proc.stderr
            return ok, f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[:1]}"
    return case


def recipe_case(body: str | bytes, name: str = "bad.toml") -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        path = tmp / name
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body)
        proc = run(build_argv(tmp, path), env_for(tmp))
        return proc.returncode == 2 and "Traceback" not in proc.stderr, f"exit {proc.returncode}"
    return case


def recipe_path_case(arg: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        argv = build_argv(tmp, Path("x"))
        argv[1] = arg
        proc = run(argv, env_for(tmp))
        return proc.returncode == 2 and "Traceback" not in proc.stderr, f"exit {proc.returncode}"
    return case


def option_case(*args: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        (tmp / "src").mkdir(exist_ok=True)
        r = recipe(tmp, "true")
        cache = [] if "--cache-remote" in args else ["--no-cache"]  # --no-cache would make the remote moot
        argv = [ROCMBUILD, str(r), "--source", str(tmp / "src"), "--run-dir", str(tmp / "run"), "--arch", "gfx90a",
                "--skip-preflight", *cache, *args]
        proc = run(argv, env_for(tmp))
        return proc.returncode == 2 and "Traceback" not in proc.stderr, f"exit {proc.returncode}"
    return case


def existing_run_dir(tmp: Path) -> tuple[bool, str]:
    r = recipe(tmp, "true")
    run(build_argv(tmp, r), env_for(tmp))
    proc = run(build_argv(tmp, r), env_for(tmp))
    return proc.returncode == 2, f"exit {proc.returncode}"


def two_recipes(tmp: Path) -> tuple[bool, str]:
    argv = build_argv(tmp, recipe(tmp, "true"))
    argv.insert(2, str(recipe(tmp, "true", name="other")))
    proc = run(argv, env_for(tmp))
    return proc.returncode == 2, f"exit {proc.returncode}"


def clean_cli_bind_mount(tmp: Path) -> tuple[bool, str]:
    """The issue's case 2 end to end: a clean_build (after a stale-build failure) with a bind mount in build/."""
    outside, before = _outside(tmp)
    src = tmp / "src"
    (src / "build" / "mnt").mkdir(parents=True)
    fail = (f"{PY} -c 'import sys; print(\"CMake Error: The current CMakeCache.txt directory /a/CMakeCache.txt"
            " is different than the directory /b where CMakeCache.txt was created.\"); sys.exit(1)'")
    r = recipe(tmp, fail, clean='["build"]')
    with mounted(src / "build" / "mnt", "--bind", str(outside)):
        argv = build_argv(tmp, r)
        argv[argv.index("--max-attempts") + 1] = "2"
        proc = run(argv, env_for(tmp))
        lost = before - {str(p) for p in outside.rglob("*")}
    events = (tmp / "run" / "events.jsonl").read_text() if (tmp / "run" / "events.jsonl").exists() else ""
    # The clean ran if it removed something or refused the mount (a clean that could remove nothing is not
    # counted as an applied remedy, so the refusal is the evidence).
    removed = "remedy.applied" in events or "path.refused" in events
    return removed and not lost and "Traceback" not in proc.stderr, (
        f"clean ran: {removed}; {len(lost)} deleted outside; refusal recorded: {'path.refused' in events}")


def flood_case(kind: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        code = {"binary": "import os,sys\nfor _ in range(320): sys.stdout.buffer.write(os.urandom(65536))",
                "line": "import sys\nsys.stdout.write('x' * (20 << 20) + '\\n')",
                "lines": "import sys\nfor i in range(400000): sys.stdout.write('y' * 50 + '\\n')"}[kind]
        script = tmp / "flood.py"
        script.write_text(code)
        proc = subprocess.Popen(build_argv(tmp, recipe(tmp, f"{PY} {script}"), "--quiet"), env=env_for(tmp),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peak = 0
        with contextlib.suppress(psutil.Error):
            p = psutil.Process(proc.pid)
            while proc.poll() is None:
                peak = max(peak, p.memory_info().rss)
                time.sleep(0.05)
        proc.wait(timeout=120)
        return peak < 300 << 20, f"peak RSS {peak >> 20} MiB"
    return case


def redos(tmp: Path) -> tuple[bool, str]:
    sigs = tmp / "config" / "rocmbuild" / "signatures"
    sigs.mkdir(parents=True)
    (sigs / "evil.toml").write_text(
        '[[signature]]\nid = "evil"\ncategory = "network"\ndescription = "catastrophic"\n'
        'patterns = ["^(a+)+$"]\nkeywords = ["aaaa"]\nexamples = []\nnear_misses = []\n')
    r = recipe(tmp, f"{PY} -c 'print(\"a\" * 40 + \"!\"); raise SystemExit(1)'")
    t0 = time.monotonic()
    proc = subprocess.Popen(build_argv(tmp, r, "--budget", "5s"), env=env_for(tmp), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        return False, "still running after 30s"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return True, f"ended after {time.monotonic() - t0:.1f}s"


# -- round 3: records readers, patterns, secrets, trust, terminal escapes ---------------------------


def _good_run(tmp: Path) -> Path:
    r = recipe(tmp, "true")
    proc = run(build_argv(tmp, r), env_for(tmp))
    assert proc.returncode == 0, proc.stderr
    return tmp / "run"


def _readers_exit(tmp: Path, env: dict[str, str], run_dir: Path | str) -> tuple[bool, str]:
    """report, report --json, report --diff, history, history --stats: no crash (70), no traceback."""
    codes = []
    for argv in (["report", str(run_dir)], ["report", str(run_dir), "--json"], ["report", str(run_dir), "--diff"],
                 ["history"], ["history", "--stats"], ["resume", str(run_dir)]):
        proc = run([ROCMBUILD, *argv], env, timeout=60)
        if proc.returncode == 70 or "Traceback" in proc.stderr:
            return False, f"{argv[0]} {' '.join(argv[2:])}: exit {proc.returncode} {proc.stderr[-200:]}"
        codes.append(proc.returncode)
    return True, f"exits {codes}"


def corrupt_record(kind: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        run_dir = _good_run(tmp)
        env = env_for(tmp)
        summary_path = run_dir / "summary.json"
        data = json.loads(summary_path.read_text())
        if kind == "BOM":
            summary_path.write_bytes(b"\xef\xbb\xbf" + summary_path.read_bytes())
        elif kind == "invalid UTF-8":
            summary_path.write_bytes(summary_path.read_bytes().replace(b'"atk"', b'"\xff\xfe"'))
        elif kind == "nested 100,000 deep":
            summary_path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
        elif kind == "wrong-typed fields":
            data.update(arch=5, duration_s="x", attempts=[{"number": "1", "remedies": 7, "diagnosis": 3}])
            summary_path.write_text(json.dumps(data))
        elif kind == "non-UTF-8 line in runs.index":
            with (tmp / "state" / "rocmbuild" / "runs.index").open("ab") as index:
                index.write(b"/tmp/\xff\xfe\n")
        elif kind == "run.started options of the wrong type":
            events = run_dir / "events.jsonl"
            events.write_text(events.read_text().replace('"options": {', '"options": [1], "x": {', 1))
        elif kind == "binary facts.json":
            (run_dir / "facts.json").write_bytes(b"\x00\xff\xfe binary")
        elif kind == "resume.json wrong-typed":
            data.update(outcome="running", exit_code=None)
            summary_path.write_text(json.dumps(data))
            (run_dir / "resume.json").write_text(json.dumps({"recipe": 5, "options": [], "cwd": 7}))
        elif kind == "run dir name not UTF-8":
            odd = Path(os.fsdecode(bytes(tmp) + b"/r\xffun"))
            run_dir.rename(odd)
            run_dir = odd
        return _readers_exit(tmp, env, run_dir)
    return case


def refused_pattern(pattern: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        sigs = tmp / "config" / "rocmbuild" / "signatures"
        sigs.mkdir(parents=True)
        (sigs / "evil.toml").write_text(
            '[[signature]]\nid = "evil"\ncategory = "network"\ndescription = "slow"\n'
            f"patterns = ['{pattern}']\nkeywords = [\"aaaa\"]\n")
        log = tmp / "x.log"
        log.write_text("a" * 60 + "!\n")
        proc = run([ROCMBUILD, "diagnose", str(log)], env_for(tmp), timeout=60)
        return proc.returncode == 2 and "Traceback" not in proc.stderr, f"exit {proc.returncode}"
    return case


def secret_value_in_output(tmp: Path) -> tuple[bool, str]:
    r = recipe(tmp, "echo token $MY_API_TOKEN; echo 'fatal error: x.h: No such file or directory'; exit 1")
    proc = run(build_argv(tmp, r), env_for(tmp, MY_API_TOKEN="tok-5e2b7d"))
    leaked = [p.name for p in (tmp / "run").iterdir()
              if not p.name.startswith("attempt-") and "tok-5e2b7d" in p.read_text(errors="replace")]
    return not leaked, f"exit {proc.returncode}, value in {leaked}"


def token_on_console(tmp: Path) -> tuple[bool, str]:
    proc = run([ROCMBUILD, "diagnose", "https://h/simple?token=abc123def", "--json"], env_for(tmp))
    count = (proc.stdout + proc.stderr).count("abc123def")
    return count == 0, f"printed {count} times"


def crash_log_private(tmp: Path) -> tuple[bool, str]:
    env = env_for(tmp, PYTHONPATH=str(ROOT))
    code = ("import sys; from rocmbuild import cli; "
            "sys.argv = ['rocmbuild', '--requires-from', 'https://u:pw-8821@h/s?token=t-8821']; "
            "print(cli._crash_log(RuntimeError('boom')))")
    path = Path(run([PY, "-c", code], env).stdout.strip())
    text = path.read_text()
    mode = path.stat().st_mode & 0o777
    return "8821" not in text and mode == 0o600, f"mode {mode:o}, secret {'8821' in text}"


def foreign_files(kind: str) -> Callable[[Path], tuple[bool, str]]:
    def case(tmp: Path) -> tuple[bool, str]:
        env = env_for(tmp)
        config = tmp / "config" / "rocmbuild"
        if kind == "resume a nobody-owned 0777 run dir":
            run_dir = _good_run(tmp)
            data = json.loads((run_dir / "summary.json").read_text())
            data.update(outcome="running", exit_code=None)
            (run_dir / "summary.json").write_text(json.dumps(data))
            os.chown(run_dir, 65534, 65534)
            run_dir.chmod(0o777)
            proc = run([ROCMBUILD, "resume", str(run_dir)], env)
            return proc.returncode == 2 and "refusing" in proc.stderr, f"exit {proc.returncode}"
        directory = config / ("recipes" if kind == "recipes" else "signatures")
        directory.mkdir(parents=True)
        directory.chmod(0o777)
        if kind == "recipes":
            (directory / "torch.toml").write_text('name = "torch"\n[steps]\nbuild = ["true"]\n')
            os.chown(directory / "torch.toml", 65534, 65534)
            proc = run([ROCMBUILD, "plan", "torch", "--arch", "gfx90a", "--skip-preflight"], env)
        else:
            (directory / "off.toml").write_text('[[signature]]\nid = "ld-cannot-find-library"\nenabled = false\n')
            log = tmp / "x.log"
            log.write_text("/usr/bin/ld: cannot find -lhipblas\n")
            proc = run([ROCMBUILD, "diagnose", str(log)], env)
        return proc.returncode == 2 and "refusing" in proc.stderr, f"exit {proc.returncode}"
    return case


def osc_on_terminal(tmp: Path) -> tuple[bool, str]:
    import pty
    import select

    script = tmp / "osc.py"
    script.write_text("import sys\nsys.stdout.buffer.write(b'x\\x1b]52;c;ZWNobyBwd25lZA==\\x07"
                      "\\x1b]0;title\\x1b\\\\y\\n')\n")
    argv = build_argv(tmp, recipe(tmp, f"{PY} {script}"))
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(argv, env=env_for(tmp), stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary)
    os.close(secondary)
    seen = b""
    while select.select([primary], [], [], 30)[0]:
        try:
            chunk = os.read(primary, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=30)
    os.close(primary)
    leaked = b"\x1b]" in seen
    return not leaked and b"xy" in seen, f"OSC on the terminal: {leaked}"


# -- round 3: wheels, limits in every step, containment without cgroups -------------------------------

# A private mount namespace whose cgroup mounts are gone: the run sees no cgroup v2 at all (root).
NO_CGROUP = ["unshare", "-m", "--propagation", "private", "sh", "-c",
             "for m in $(awk '$3 == \"cgroup2\" || $3 == \"cgroup\" {print $2}' /proc/self/mounts | sort -r); "
             "do umount -l \"$m\"; done; exec \"$@\"", "no-cgroup"]


def _wheel_recipe(tmp: Path, build: str = "true", wheel: str | None = None, requires: str = "") -> Path:
    path = tmp / "wl.toml"
    path.write_text(f'name = "wl"\n{requires}[steps]\nbuild = [{json.dumps(build)}]\n'
                    + (f"wheel = [{json.dumps(wheel)}]\n" if wheel is not None else ""))
    return path


def _a_wheel(tmp: Path, who: str) -> Path:
    """A real (tiny) wheel named demo-1.0-py3-none-any.whl, in a directory of its own."""
    import zipfile

    where = tmp / f"made-{uuid.uuid4().hex[:6]}"
    where.mkdir()
    wheel = where / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("demo/__init__.py", f"WHO = {who!r}\n")
        archive.writestr("demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
    return wheel


def _gone(argument: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while marked(argument):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def wheel_dir_case(kind: str) -> Callable[[Path], tuple[bool, str]]:
    """--wheel-dir a file or a read-only mount: exit 2 before the build, what/why/todo, no traceback."""
    def case(tmp: Path) -> tuple[bool, str]:
        built = tmp / "built"
        r = _wheel_recipe(tmp, build=f"touch {built}")
        with contextlib.ExitStack() as stack:
            if kind == "file":
                target = tmp / "file"
                target.write_text("x")
            else:
                target = stack.enter_context(mounted(tmp / "ro", "-t", "tmpfs", "-o", "size=1M,ro", "tmpfs")) / "w"
            proc = run(build_argv(tmp, r, "--wheel-dir", str(target)), env_for(tmp))
        ok = (proc.returncode == 2 and not built.exists() and "what to do" in proc.stderr
              and "Traceback" not in proc.stderr)
        return ok, f"exit {proc.returncode}, built first: {built.exists()}"
    return case


MANIFEST_SHAPES: dict[str, bytes] = {
    "a list": b"[]", "a string": b'"x"', "a number": b"42", "null": b"null", "wheels a list": b'{"wheels": []}',
    "wheels a string": b'{"wheels": "x"}', "entry a string": b'{"wheels": {"demo-1.0-py3-none-any.whl": "x"}}',
    "entry a list": b'{"wheels": {"demo-1.0-py3-none-any.whl": []}}',
    "recipe a number": b'{"wheels": {"demo-1.0-py3-none-any.whl": {"recipe": 7}}}',
    "path as name": b'{"wheels": {"../x.whl": {}}}', "nested 100000 deep": b"[" * 100_000 + b"]" * 100_000,
    "not JSON": b'{"wheels": {',
}


def manifest_case(shape: str) -> Callable[[Path], tuple[bool, str]]:
    """A manifest.json of the wrong shape: refused before the build (exit 2), never a traceback (exit 70)."""
    def case(tmp: Path) -> tuple[bool, str]:
        built = tmp / "built"
        wheels = tmp / "wheels"
        wheels.mkdir()
        (wheels / "manifest.json").write_bytes(MANIFEST_SHAPES[shape])
        made = _a_wheel(tmp, "mine")  # a good build and wheel step: unchecked, the manifest is read after them
        r = _wheel_recipe(tmp, build=f"touch {built}", wheel=f'cp {made} "$WHEEL_DIR"/')
        proc = run(build_argv(tmp, r, "--wheel-dir", str(wheels)), env_for(tmp))
        ok = proc.returncode == 2 and not built.exists() and "Traceback" not in proc.stderr
        return ok, f"exit {proc.returncode}, built first: {built.exists()}"
    return case


def foreign_wheel(tmp: Path) -> tuple[bool, str]:
    """A same-named wheel the manifest gives to another recipe is never replaced silently."""
    wheels = tmp / "wheels"
    wheels.mkdir()
    theirs = _a_wheel(tmp, "theirs")
    (wheels / theirs.name).write_bytes(theirs.read_bytes())
    (wheels / "manifest.json").write_text(json.dumps({"wheels": {theirs.name: {"recipe": "other"}}}))
    mine = _a_wheel(tmp, "mine")
    proc = run(build_argv(tmp, _wheel_recipe(tmp, wheel=f'cp {mine} "$WHEEL_DIR"/'), "--wheel-dir", str(wheels)),
               env_for(tmp))
    kept = (wheels / theirs.name).read_bytes() == theirs.read_bytes()
    said = "not replaced" in proc.stderr + proc.stdout
    return kept and said and proc.returncode != 0, f"exit {proc.returncode}, kept: {kept}, said: {said}"


def wheel_budget(tmp: Path) -> tuple[bool, str]:
    """--budget 10s with a wheel step that would take 61 s: exit 5, budget_exhausted, nothing left running."""
    marker = f"{random.randint(10**5, 10**6)}.61"
    r = _wheel_recipe(tmp, wheel=f"sleep {marker}")
    t0 = time.monotonic()
    try:
        proc = run(build_argv(tmp, r, "--wheel-dir", str(tmp / "w"), "--budget", "10s"), env_for(tmp), timeout=120)
        took = time.monotonic() - t0
        outcome = summary(tmp / "run").get("outcome")
        ok = proc.returncode == 5 and outcome == "budget_exhausted" and took < 40 and not marked(marker)
        return ok, f"exit {proc.returncode}, {outcome}, {took:.0f}s"
    finally:
        kill_marked(marker)


def wheel_daemon(tmp: Path) -> tuple[bool, str]:
    """A wheel step that starts `setsid sleep 1000 &`: the daemon is ended with the step."""
    marker = f"{random.randint(10**5, 10**6)}.1000"
    mine = _a_wheel(tmp, "mine")
    r = _wheel_recipe(tmp, wheel=f'setsid sleep {marker} & cp {mine} "$WHEEL_DIR"/')
    try:
        proc = run(build_argv(tmp, r, "--wheel-dir", str(tmp / "w")), env_for(tmp))
        return proc.returncode == 0 and _gone(marker, 2), f"exit {proc.returncode}, alive: {bool(marked(marker))}"
    finally:
        kill_marked(marker)


_bare: dict[str, Path] = {}


def _bare_venv() -> Path:
    """A venv without torch (the build's interpreter), shared by the --requires-from cases."""
    if "bin" not in _bare:
        where = Path(tempfile.mkdtemp(prefix="atk-venv-"))
        _cleanup.append(where)
        subprocess.run([PY, "-m", "venv", str(where / "venv")], check=True, timeout=120)
        _bare["bin"] = where / "venv" / "bin"
    return _bare["bin"]


def requires_from_hostile(kind: str) -> Callable[[Path], tuple[bool, str]]:
    """--requires-from an index on 127.0.0.1 that never answers or trickles a byte every 5 s, --budget 10s:
    exit 5 well before 300 s, pip ended with the run.  The server is this process's and stopped by it."""
    def case(tmp: Path) -> tuple[bool, str]:
        import socket

        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        server.settimeout(0.2)
        stop = threading.Event()
        conns: list[socket.socket] = []

        def trickle(conn: socket.socket) -> None:
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>" * 50:
                if stop.wait(5):
                    return
                with contextlib.suppress(OSError):
                    conn.sendall(bytes([byte]))

        def serve() -> None:
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    conn, _ = server.accept()
                    conns.append(conn)
                    if kind == "trickles":
                        threading.Thread(target=trickle, args=(conn,), daemon=True).start()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.getsockname()[1]}/simple"
        env = env_for(tmp)
        env["PATH"] = f"{_bare_venv()}:{env.get('PATH', '')}"
        t0 = time.monotonic()
        try:
            r = _wheel_recipe(tmp, requires='requires = ["torch"]\n')
            proc = run(build_argv(tmp, r, "--requires-from", url, "--budget", "10s"), env, timeout=300)
            took = time.monotonic() - t0
            left = marked(url)
            ok = proc.returncode == 5 and took < 60 and not left and "Traceback" not in proc.stderr
            return ok, f"exit {proc.returncode} after {took:.0f}s, pip left: {len(left)}"
        except subprocess.TimeoutExpired:
            return False, "still running at 300 s"
        finally:
            stop.set()
            thread.join(5)
            for conn in conns:
                conn.close()
            server.close()
            kill_marked(url)
    return case


def no_cgroup_said(tmp: Path) -> tuple[bool, str]:
    """Without cgroups the run says containment is off: summary.json's containment, and the console."""
    proc = run(NO_CGROUP + build_argv(tmp, recipe(tmp, "true")), env_for(tmp))
    kind = summary(tmp / "run").get("containment", {})
    ok = isinstance(kind, dict) and kind.get("cgroup") is False and "containment is off" in proc.stderr
    return ok, f"summary containment: {kind}, said: {'containment is off' in proc.stderr}"


def no_cgroup_daemons(tmp: Path) -> tuple[bool, str]:
    """Without cgroups, 5 runs whose build and wheel steps leave daemons: none survives any run."""
    survived = 0
    for i in range(5):
        marker = f"{random.randint(10**5, 10**6)}.{i + 1}"
        mine = _a_wheel(tmp, "mine")
        r = _wheel_recipe(tmp, build=f"setsid sleep {marker} & setsid -f sleep {marker}; true",
                          wheel=f'setsid -f sleep {marker}; cp {mine} "$WHEEL_DIR"/')
        try:
            run(NO_CGROUP + build_argv(tmp, r, "--wheel-dir", str(tmp / f"w{i}"), run=f"run{i}"), env_for(tmp))
            survived += not _gone(marker, 2)
        finally:
            kill_marked(marker)
    return survived == 0, f"daemons survived {survived} of 5 runs"


def no_cgroup_sigkill(tmp: Path) -> tuple[bool, str]:
    """Without cgroups, rocmbuild SIGKILLed while escapers.py runs: every escape kind is ended (watchdog)."""
    marker = f"atk-{uuid.uuid4().hex[:10]}"
    r = recipe(tmp, f"{PY} {CHILDREN / 'escapers.py'} {marker} stay")
    proc = start_until_ready(NO_CGROUP + build_argv(tmp, r), env_for(tmp))
    try:
        proc.kill()  # the namespace's shell exec'd rocmbuild: this is rocmbuild
        proc.communicate(timeout=30)
        deadline = time.monotonic() + 5
        while marked(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        alive = kinds_alive(marker)
        return not alive, f"survived: {sorted(alive)}" if alive else ""
    finally:
        kill_marked(marker)


# -- the table ----------------------------------------------------------------------------------------


def cases() -> list[Case]:
    table: list[Case] = []
    for path in ("normal-exit", "stall", "budget", "SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"):
        table += [(f"stop {path}: {kind}", stop_case(path, kind)) for kind in KINDS]
    table += [(f"sigkill-records after {d}s", sigkill_records(d)) for d in (0.3, 0.7, 1.2, 2.0, 3.0)]
    table.append(("leftovers of a run killed with its watchdog", leftovers))
    table += [
        ("clean: clean path is a symlink out", clean_case(_link_dir)),
        ("clean: symlink inside a clean path", clean_case(_link_inside)),
        ("clean: file symlink matched by a glob", clean_case(_link_file)),
        ("clean: symlinked directory in the middle", clean_case(_middle)),
        ("clean: .. patterns", clean_case(_dotdot)),
        ("clean: absolute patterns", clean_case(_absolute)),
        ("clean: hidden and ** globs through a link", clean_case(_hidden_glob)),
        ("clean: deep tree with a link at the bottom", clean_case(_deep)),
        ("clean: egg-info symlink", clean_case(_egg)),
        ("clean: bind mount inside a clean path", clean_case(_mnt, mount="bind")),
        ("clean: tmpfs inside a clean path", clean_case(_scratch, mount="tmpfs")),
        ("clean: concurrent dir<->symlink swapper", clean_case(_swap_setup, swapper=True)),
    ]
    table += [(f"secret: {s}", secret_case(s)) for s in
              ("redispw", "hunter2pw", "hf_tok_value", "apikeyvalue", "dbpwvalue", "secretvalue")]
    table.append(("secret: run dir 0700, files 0600", secret_modes))
    table += [(f"repro: {k}", repro_case(k)) for k in ("run-dir-newline", "env-value", "env-name")]
    table += [("lock: other state dir", lock_case(False)), ("lock: other state dir, symlinked path", lock_case(True))]
    table += [("reader: | head -2", reader_case("head")), ("reader: stdout and stderr closed", reader_case("closed"))]
    table += [(f"fs: {k}", fs_case(k)) for k in
              ("full-run-dir", "ro-run-dir", "ro-state-dir", "full-state-dir", "fills-during")]
    base = '[steps]\nbuild = ["true"]\n'
    table += [
        ("recipe: env name with =", recipe_case(f'name = "x"\n[env]\n"A=B" = "1"\n{base}')),
        ("recipe: empty env name", recipe_case(f'name = "x"\n[env]\n"" = "1"\n{base}')),
        ("recipe: NUL in env value", recipe_case(f'name = "x"\n[env]\nA = "a\\u0000b"\n{base}')),
        ("recipe: NUL in a command", recipe_case('name = "x"\n[steps]\nbuild = ["echo a\\u0000b"]\n')),
        ("recipe: non-UTF-8 file", recipe_case(b'name = "caf\xe9"\n[steps]\nbuild = ["true"]\n')),
        ("recipe: 300-character name", recipe_case(f'name = "{"n" * 300}"\n{base}')),
        ("recipe: 300-character file name", recipe_path_case("r" * 300 + ".toml")),
        ("recipe: 300-character directory", recipe_path_case("d" * 300 + "/x.toml")),
        ("recipe: bad arch variable name", recipe_case(f'name = "x"\n[arch]\nvariables = ["A B"]\n{base}')),
    ]
    bad_options = [
        ("--budget", "0s"), ("--budget", "-5m"), ("--budget", "soon"), ("--stall-timeout", "10x"),
        ("--stall-timeout", "0s"), ("--jobs", "0"), ("--jobs", "-3"), ("--jobs", "many"), ("--jobs", "1e9"),
        ("--max-attempts", "0"), ("--max-attempts", "x"), ("--backoff", "-1"), ("--backoff", "nan"),
        ("--arch", "gfx9999"), ("--arch", "sm_80"), ("--arch", ""), ("--arch", "gfx90a;bogus"), ("--arch", "auto"),
        ("--cache-remote", "not a url"), ("--cache-remote", "ftp://x"), ("--quiet", "--verbose"),
        ("--no-such-option",), ("--rocm-path", "/nonexistent/rocm"), ("--source", "/nonexistent/src"),
        ("--run-dir", "/proc/1/x"), ("--jobs", "2.5"), ("--arch", "gfx90a:bogus+"),
    ]
    table += [(f"option: {' '.join(repr(a) for a in opts)}", option_case(*opts)) for opts in bad_options]
    table += [
        ("option: --run-dir already holding a run", existing_run_dir),
        ("option: --source is a file", option_case("--source", "/etc/hostname")),
        ("option: --rocm-path is a file", option_case("--rocm-path", "/etc/hostname")),
        ("option: two recipes for one --source", two_recipes),
        ("option: unknown recipe", recipe_path_case("no-such-recipe")),
        ("option: missing recipe file", recipe_path_case("/nonexistent/r.toml")),
        ("option: --max-attempts -1", option_case("--max-attempts", "-1")),
        ("lock: same state dir", lock_case(False, same_state=True)),
        ("clean: bind mount in a clean path, through the CLI", clean_cli_bind_mount),
    ]
    table += [(f"flood: {k}", flood_case(k)) for k in ("binary", "line", "lines")]
    table.append(("redos: catastrophic user signature", redos))
    # round 3
    table += [(f"reader: summary {k}", corrupt_record(k)) for k in
              ("BOM", "invalid UTF-8", "nested 100,000 deep", "wrong-typed fields", "non-UTF-8 line in runs.index",
               "run.started options of the wrong type", "binary facts.json", "resume.json wrong-typed",
               "run dir name not UTF-8")]
    table += [(f"redos: {p} refused", refused_pattern(p)) for p in ("((a+))+$", "(\\w+\\s?)+$", "(a|aa)+$")]
    table += [("secret: a secret variable's value printed by the build", secret_value_in_output),
              ("secret: ?token= on the console", token_on_console),
              ("secret: crash log redacted and 0600", crash_log_private)]
    table += [(f"trust: {k}", foreign_files(k)) for k in ("resume a nobody-owned 0777 run dir", "recipes",
                                                          "signatures")]
    table.append(("terminal: OSC 52 and OSC 0 from the build", osc_on_terminal))
    from attack_uptodate import cases as uptodate_cases  # beside this file: a false up_to_date, special files

    table += uptodate_cases()
    # round 3: wheels, limits in every step, containment without cgroups
    table += [(f"wheels: --wheel-dir {k}", wheel_dir_case(k)) for k in ("file", "read-only mount")]
    table += [(f"wheels: manifest.json {k}", manifest_case(k)) for k in MANIFEST_SHAPES]
    table.append(("wheels: another recipe's same-named wheel", foreign_wheel))
    table += [("limits: --budget in the wheel step", wheel_budget),
              ("limits: --budget in --requires-from, index never answers", requires_from_hostile("never answers")),
              ("limits: --budget in --requires-from, index trickles", requires_from_hostile("trickles")),
              ("contain: wheel step's setsid sleep &", wheel_daemon),
              ("no-cgroup: containment off said in summary and console", no_cgroup_said),
              ("no-cgroup: daemons of 5 runs", no_cgroup_daemons),
              ("no-cgroup: SIGKILLed rocmbuild, escapers", no_cgroup_sigkill)]
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the cases")
    args = parser.parse_args()
    table = [(n, c) for n, c in cases() if args.only in n]
    if args.list:
        print("\n".join(n for n, _ in table))
        return 0
    held = 0
    random.seed(14)
    for name, case in table:
        tmp = Path(tempfile.mkdtemp(prefix="atk-"))
        try:
            ok, detail = case(tmp)
        except Exception as exc:
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        held += ok
        print(f"{'held' if ok else 'GOT THROUGH':<12} {name}" + ("" if ok else f"  ({detail})"), flush=True)
    for path in _cleanup:
        shutil.rmtree(path, ignore_errors=True)
    print(f"{held}/{len(table)} held")
    return 0 if held == len(table) else 1


if __name__ == "__main__":
    sys.exit(main())
