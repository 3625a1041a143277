"""Attacks on ``up_to_date`` and on the fingerprint's walk: one function per case, ``(tmp) -> (held, detail)``.

A false ``up_to_date`` case builds a tiny recipe for real, changes one thing the build depends on,
and runs the same command again: it holds when the second run builds (``succeeded``) instead of
claiming ``up_to_date``.  A special-file case holds when the run ends on its own, within its
limits, with bounded memory (the child's peak RSS from ``wait4``).  Used by benchmarks/attack.py
and by tests/test_uptodate_attacks.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
Case = tuple[str, Callable[[Path], tuple[bool, str]]]


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    env.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"), HIP_PLATFORM="amd")
    env.pop("USE_FLASH_ATTENTION", None)
    env.update(extra)
    return env


def write_recipe(tmp: Path, build: str, *, verify: str = "", clean: str = '["build"]', env: str = "",
                 artifacts: str = "") -> Path:
    path = tmp / "atk.toml"
    text = f'name = "atk"\n[env]\n{env}\n[steps]\nbuild = [{json.dumps(build)}]\n'
    if verify:
        text += f"verify = [{json.dumps(verify)}]\n"
    if clean:
        text += f"[clean]\npaths = {clean}\n"
    if artifacts:
        text += f"[verify]\nartifacts = {artifacts}\n"
    path.write_text(text)
    return path


@dataclass
class Ran:
    code: int
    summary: dict[str, object]
    err: str
    seconds: float
    max_rss_mb: float


def rocmbuild(tmp: Path, recipe: Path, env: dict[str, str], *extra: str, name: str = "run",
              timeout: float = 120, on_start: Callable[[subprocess.Popen[bytes]], None] | None = None) -> Ran:
    """One real run; the peak RSS of rocmbuild itself from wait4 (its children are not counted)."""
    run_dir = tmp / f"{name}-{time.monotonic_ns()}"
    argv = [ROCMBUILD, str(recipe), "--source", str(tmp / "src"), "--run-dir", str(run_dir), "--arch", "gfx90a",
            "--skip-preflight", "--no-cache", "--max-attempts", "1", *extra]
    err_path = tmp / "stderr.txt"
    started = time.monotonic()
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        if on_start is not None:
            on_start(proc)
        deadline = started + timeout
        status, rusage = 0, None
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.kill(proc.pid, signal.SIGKILL)
                _, status, rusage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        summary = {}
    return Ran(proc.returncode, summary, err_path.read_text(errors="replace"), seconds,
               (rusage.ru_maxrss / 1024) if rusage is not None else 0.0)


def second_run_builds(setup: Callable[[Path, Path], None], change: Callable[[Path, Path], dict[str, str] | None],
                      build: str = "mkdir -p build && cat *.txt > build/out", **recipe_kw: str
                      ) -> Callable[[Path], tuple[bool, str]]:
    """Build, ``change`` something (it may return the second run's extra env), build again: held = it built."""
    def case(tmp: Path) -> tuple[bool, str]:
        src = tmp / "src"
        src.mkdir(parents=True, exist_ok=True)
        (src / "in.txt").write_text("v1\n")
        setup(tmp, src)
        recipe = write_recipe(tmp, build, **recipe_kw)
        env = env_for(tmp)
        first = rocmbuild(tmp, recipe, env, name="r1")
        if first.summary.get("outcome") != "succeeded":
            return False, f"the first build did not succeed: {first.summary.get('outcome')} {first.err[-300:]}"
        extra = change(tmp, src) or {}
        second = rocmbuild(tmp, recipe, {**env, **extra}, name="r2")
        outcome = second.summary.get("outcome")
        up = second.summary.get("up_to_date")
        differs = up.get("differs") if isinstance(up, dict) else None
        return outcome == "succeeded", f"second run: {outcome}, differs {differs}"
    return case


# -- the changes ------------------------------------------------------------------------------------------

def _nothing(tmp: Path, src: Path) -> None:
    return None


def _git(src: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t",
                    "-c", "protocol.file.allow=always", *args], check=True, capture_output=True)


def _git_tree(tmp: Path, src: Path) -> None:
    (src / ".gitignore").write_text("build/\nconfig.local\n")
    (src / "config.local").write_text("opt=1\n")
    _git(src, "init", "-q")
    _git(src, "add", ".")
    _git(src, "commit", "-q", "-m", "one")


def _submodule(tmp: Path, src: Path) -> None:
    sub = tmp / "subrepo"
    sub.mkdir()
    (sub / "k.txt").write_text("kernel v1\n")
    _git(sub, "init", "-q")
    _git(sub, "add", ".")
    _git(sub, "commit", "-q", "-m", "sub")
    _git_tree(tmp, src)
    _git(src, "submodule", "add", "-q", str(sub), "third_party/sub")
    _git(src, "commit", "-q", "-m", "with sub")
    (src / "third_party" / "sub" / "k.txt").write_text("kernel dirty 1\n")  # already dirty before the build


def _links(tmp: Path, src: Path) -> None:
    outside = tmp / "outside"
    (outside / "inc").mkdir(parents=True)
    (outside / "inc" / "x.h").write_text("int x = 1;\n")
    (outside / "cfg.h").write_text("#define CFG 1\n")
    (src / "inc").symlink_to(outside / "inc")
    (src / "cfg.h").symlink_to(outside / "cfg.h")


def _vendored(tmp: Path, src: Path) -> None:
    for rel in ("vendor/libfoo.a", "vendor/libfoo.so", "vendor/foo.o", "vendor/foo.d"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(b"\x7fELF v1")
    for rel in ("tools/build/gen.sh", "tools/dist/pack.sh", "tools/.deps/dep.sh"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("echo v1\n")


def _edit(rel: str, text: str = "changed\n") -> Callable[[Path, Path], None]:
    def change(tmp: Path, src: Path) -> None:
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return change


def _edit_bytes(rel: str) -> Callable[[Path, Path], None]:
    def change(tmp: Path, src: Path) -> None:
        (src / rel).write_bytes(b"\x7fELF v2, another build")
    return change


def _env(**values: str) -> Callable[[Path, Path], dict[str, str]]:
    def change(tmp: Path, src: Path) -> dict[str, str]:
        return dict(values)
    return change


def _torch_setup(tmp: Path, src: Path) -> None:
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "torch-2.3.0.dist-info").mkdir()
    (site / "torch-2.3.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.3.0\n")
    (tmp / "path").write_text(str(venv / "bin"))


def _torch_upgrade(tmp: Path, src: Path) -> None:
    site = next((tmp / "venv").glob("lib/python3*/site-packages"))
    shutil.rmtree(site / "torch-2.3.0.dist-info")
    (site / "torch-2.4.0.dist-info").mkdir()
    (site / "torch-2.4.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0\n")


def _shim_setup(tmp: Path, src: Path) -> None:
    shims = tmp / "shims"
    shims.mkdir()
    (tmp / "pyenv-version").write_text(sys.executable)
    shim = shims / "python3"
    shim.write_text(f'#!/bin/sh\nexec "$(cat {tmp / "pyenv-version"})" "$@"\n')
    shim.chmod(0o755)
    (tmp / "path").write_text(str(shims))


def _shim_switch(tmp: Path, src: Path) -> None:
    other = "/usr/bin/python3" if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") \
        else shutil.which("python3.12") or shutil.which("python3.10") or "/usr/bin/python3"
    (tmp / "pyenv-version").write_text(other)


def _other_cc(tmp: Path, src: Path) -> dict[str, str]:
    bin_dir = tmp / "otherbin"
    bin_dir.mkdir()
    cc = bin_dir / "cc"
    cc.write_text(f'#!/bin/sh\nexec {shutil.which("gcc") or "/usr/bin/cc"} "$@"\n')
    cc.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}


def _path_case(setup: Callable[[Path, Path], None], change: Callable[[Path, Path], None]
               ) -> Callable[[Path], tuple[bool, str]]:
    """Both runs with the setup's directory first on PATH (the venv, the shims)."""
    def case(tmp: Path) -> tuple[bool, str]:
        src = tmp / "src"
        src.mkdir(parents=True)
        (src / "in.txt").write_text("v1\n")
        setup(tmp, src)
        recipe = write_recipe(tmp, "mkdir -p build && python3 -c 'import sys; print(sys.prefix)' > build/out")
        env = env_for(tmp, PATH=f"{(tmp / 'path').read_text()}:{os.environ.get('PATH', '')}")
        first = rocmbuild(tmp, recipe, env, name="r1")
        if first.summary.get("outcome") != "succeeded":
            return False, f"the first build did not succeed: {first.err[-300:]}"
        change(tmp, src)
        second = rocmbuild(tmp, recipe, env, name="r2")
        up = second.summary.get("up_to_date")
        return second.summary.get("outcome") == "succeeded", \
            f"second run: {second.summary.get('outcome')}, differs {up.get('differs') if isinstance(up, dict) else up}"
    return case


def _removed_module(tmp: Path) -> tuple[bool, str]:
    site = tmp / "site"
    src = tmp / "src"
    src.mkdir()
    (src / "atkmod.in").write_text("VALUE = 1\n")  # not importable from the tree itself
    recipe = write_recipe(tmp, f"mkdir -p {site} && cp atkmod.in {site}/atkmod.py", verify="python3 -c 'import atkmod'",
                          clean="", env=f'PYTHONPATH = "{site}"')
    env = env_for(tmp)
    first = rocmbuild(tmp, recipe, env, name="r1")
    if first.summary.get("outcome") != "succeeded":
        return False, f"the first build did not succeed: {first.err[-300:]}"
    (site / "atkmod.py").unlink()
    second = rocmbuild(tmp, recipe, env, name="r2")
    up = second.summary.get("up_to_date")
    return second.summary.get("outcome") == "succeeded" and (site / "atkmod.py").exists(), \
        f"second run: {second.summary.get('outcome')}, {up.get('artifacts') if isinstance(up, dict) else up}"


def _edited_during_build(tmp: Path) -> tuple[bool, str]:
    """The build reads in.txt, then the user edits it while the build still runs: the next run builds."""
    src = tmp / "src"
    src.mkdir()
    (src / "in.txt").write_text("v1\n")
    build = ("mkdir -p build && cat in.txt > build/out && touch ../started && "
             "for i in $(seq 200); do [ -f ../edited ] && break; sleep 0.05; done")
    recipe = write_recipe(tmp, build)
    env = env_for(tmp)

    def edit_when_started(proc: subprocess.Popen[bytes]) -> None:
        def edit() -> None:
            for _ in range(400):
                if (tmp / "started").exists():
                    (src / "in.txt").write_text("v2, edited during the build\n")
                    (tmp / "edited").touch()
                    return
                time.sleep(0.025)
        threading.Thread(target=edit, daemon=True).start()

    first = rocmbuild(tmp, recipe, env, name="r1", on_start=edit_when_started)
    if first.summary.get("outcome") != "succeeded":
        return False, f"the first build did not succeed: {first.err[-300:]}"
    (tmp / "started").unlink()
    second = rocmbuild(tmp, recipe, env, name="r2")
    built = (src / "build" / "out").read_text()
    return second.summary.get("outcome") == "succeeded" and "v2" in built, \
        f"second run: {second.summary.get('outcome')}; build/out holds {built.strip()!r}"


def _force(tmp: Path) -> tuple[bool, str]:
    """--force against a build system that skips what it considers up to date: the output is made again,
    and the run says what --force did (console, events, summary)."""
    src = tmp / "src"
    src.mkdir()
    (src / "in.txt").write_text("v1\n")
    recipe = write_recipe(tmp, "[ -f build/out ] || { mkdir -p build && cat in.txt > build/out; }")
    env = env_for(tmp)
    first = rocmbuild(tmp, recipe, env, name="r1")
    if first.summary.get("outcome") != "succeeded":
        return False, f"the first build did not succeed: {first.err[-300:]}"
    (src / "build" / "out").write_text("left by an older build\n")  # what a stale incremental build keeps
    forced = rocmbuild(tmp, recipe, env, "--force", name="r2")
    out = (src / "build" / "out").read_text()
    force = forced.summary.get("force")
    said = "--force: removed build" in forced.err
    return (forced.summary.get("outcome") == "succeeded" and out == "v1\n" and said
            and isinstance(force, dict) and force.get("removed") == ["build"],
            f"{forced.summary.get('outcome')}; build/out {out.strip()!r}; console says it: {said}; summary {force}")


# -- special files ------------------------------------------------------------------------------------------

def _special(make: Callable[[Path], None], rss_mb: float = 400) -> Callable[[Path], tuple[bool, str]]:
    """The run ends by itself, builds, says once that the tree is not cacheable, and never claims up_to_date."""
    def case(tmp: Path) -> tuple[bool, str]:
        src = tmp / "src"
        src.mkdir()
        (src / "in.txt").write_text("v1\n")
        make(src)
        recipe = write_recipe(tmp, "mkdir -p build && cat in.txt > build/out")
        env = env_for(tmp)
        first = rocmbuild(tmp, recipe, env, "--budget", "60s", name="r1", timeout=60)
        second = rocmbuild(tmp, recipe, env, "--budget", "60s", name="r2", timeout=60)
        said = first.err.count("not cacheable")
        ok = (first.summary.get("outcome") == second.summary.get("outcome") == "succeeded" and said == 1
              and max(first.max_rss_mb, second.max_rss_mb) < rss_mb)
        return ok, (f"outcomes {first.summary.get('outcome')}/{second.summary.get('outcome')} "
                    f"({first.seconds:.1f}s/{second.seconds:.1f}s), 'not cacheable' said {said}x, "
                    f"peak RSS {max(first.max_rss_mb, second.max_rss_mb):.0f} MB")
    return case


def _fifo(src: Path) -> None:
    os.mkfifo(src / "pipe")


def _chardev(src: Path) -> None:
    os.mknod(src / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))


def _slow_tree(src: Path) -> None:
    """32 GB to read: one dense 256 MB file under 128 names (hard links: no disk space, no holes to skip)."""
    src.mkdir()
    block = os.urandom(1 << 20)
    with open(src / "big-0.bin", "wb") as f:
        for _ in range(256):
            f.write(block)
    for i in range(1, 128):
        os.link(src / "big-0.bin", src / f"big-{i}.bin")


def _reading(pid: int, marker: str, timeout: float = 60) -> bool:
    """Wait until the process has a file whose path holds ``marker`` open: the walk is reading the tree."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if marker in os.readlink(f"/proc/{pid}/fd/{fd}"):
                    return True
        except OSError:
            pass
        time.sleep(0.02)
    return False


def _signal_during_walk(sig: int) -> Callable[[Path], tuple[bool, str]]:
    """A signal while the fingerprint reads a big tree: the run stops within seconds, recorded interrupted."""
    def case(tmp: Path) -> tuple[bool, str]:
        _slow_tree(tmp / "src")
        recipe = write_recipe(tmp, "true")
        sent: list[float] = []

        def send(proc: subprocess.Popen[bytes]) -> None:
            def when_reading() -> None:
                if _reading(proc.pid, "/src/big-"):
                    sent.append(time.monotonic())
                    proc.send_signal(sig)
            threading.Thread(target=when_reading, daemon=True).start()

        ran = rocmbuild(tmp, recipe, env_for(tmp), name="r1", timeout=120, on_start=send)
        ended = time.monotonic()
        after = ended - sent[0] if sent else float("nan")
        return (bool(sent) and ran.code == 130 and ran.summary.get("outcome") == "interrupted" and after < 5,
                f"exit {ran.code}, {ran.summary.get('outcome')}, ended {after:.1f}s after the signal "
                f"(sent while reading: {bool(sent)})")
    return case


def _budget_during_walk(tmp: Path) -> tuple[bool, str]:
    _slow_tree(tmp / "src")
    ran = rocmbuild(tmp, write_recipe(tmp, "true"), env_for(tmp), "--budget", "3s", name="r1", timeout=120)
    return (ran.summary.get("outcome") == "budget_exhausted" and ran.seconds < 20,
            f"exit {ran.code}, {ran.summary.get('outcome')}, {ran.seconds:.1f}s with --budget 3s")


def _sparse(tmp: Path) -> tuple[bool, str]:
    """A 6 GB sparse file: bounded memory on the first run, and a rerun that reads nothing (stat cache)."""
    src = tmp / "src"
    src.mkdir()
    (src / "in.txt").write_text("v1\n")
    with open(src / "sparse.img", "wb") as f:
        f.truncate(6 << 30)
    past = time.time() - 60  # older than the racy window: trusted by the stat cache
    os.utime(src / "sparse.img", (past, past))
    recipe = write_recipe(tmp, "mkdir -p build && cat in.txt > build/out")
    env = env_for(tmp)
    first = rocmbuild(tmp, recipe, env, name="r1", timeout=300)
    second = rocmbuild(tmp, recipe, env, name="r2", timeout=300)
    ok = (first.summary.get("outcome") == "succeeded" and second.summary.get("outcome") == "up_to_date"
          and max(first.max_rss_mb, second.max_rss_mb) < 400 and second.seconds < first.seconds)
    return ok, (f"first {first.seconds:.1f}s {first.max_rss_mb:.0f} MB, rerun {second.seconds:.1f}s "
                f"{second.max_rss_mb:.0f} MB ({second.summary.get('outcome')})")


def cases() -> list[Case]:
    b = second_run_builds
    return [
        ("uptodate: env var the recipe does not list (USE_FLASH_ATTENTION 0 -> 1)",
         b(_nothing, _env(USE_FLASH_ATTENTION="1"))),
        ("uptodate: file under a symlinked directory", b(_links, _edit("../outside/inc/x.h"))),
        ("uptodate: target of a symlinked file", b(_links, _edit("../outside/cfg.h"))),
        ("uptodate: new untracked source in a git tree", b(_git_tree, _edit("new.txt", "new source\n"))),
        ("uptodate: gitignored input changed (config.local)", b(_git_tree, _edit("config.local", "opt=2\n"))),
        ("uptodate: edit inside an already-dirty submodule",
         b(_submodule, _edit("third_party/sub/k.txt", "kernel dirty 2\n"))),
        ("uptodate: vendored libfoo.a changed", b(_vendored, _edit_bytes("vendor/libfoo.a"))),
        ("uptodate: vendored libfoo.so changed", b(_vendored, _edit_bytes("vendor/libfoo.so"))),
        ("uptodate: vendored foo.o changed", b(_vendored, _edit_bytes("vendor/foo.o"))),
        ("uptodate: tools/build/gen.sh changed", b(_vendored, _edit("tools/build/gen.sh", "echo v2\n"))),
        ("uptodate: tools/dist/pack.sh changed", b(_vendored, _edit("tools/dist/pack.sh", "echo v2\n"))),
        ("uptodate: tools/.deps/dep.sh changed", b(_vendored, _edit("tools/.deps/dep.sh", "echo v2\n"))),
        ("uptodate: source edited during the build", _edited_during_build),
        ("uptodate: torch in the build venv upgraded", _path_case(_torch_setup, _torch_upgrade)),
        ("uptodate: pyenv version behind a python3 shim changed", _path_case(_shim_setup, _shim_switch)),
        ("uptodate: another cc first on PATH, CC unset", b(_nothing, _other_cc)),
        ("uptodate: build output deleted (no declared artifacts)",
         b(_nothing, lambda tmp, src: shutil.rmtree(src / "build"))),
        ("uptodate: output edited by hand", b(_nothing, _edit("build/out", "hand edit\n"))),
        ("uptodate: declared artifact deleted",
         b(_nothing, lambda tmp, src: (src / "build" / "out").unlink(), artifacts='["build/out"]')),
        ("uptodate: module the build installed removed (verify runs again)", _removed_module),
        ("uptodate: --force makes the build system rebuild and says so", _force),
        ("special: FIFO in a non-git tree", _special(_fifo)),
        ("special: character device (mknod c 1 5)", _special(_chardev)),
        ("special: SIGTERM while fingerprinting a 32 GB tree", _signal_during_walk(signal.SIGTERM)),
        ("special: SIGINT while fingerprinting a 32 GB tree", _signal_during_walk(signal.SIGINT)),
        ("special: SIGHUP while fingerprinting a 32 GB tree", _signal_during_walk(signal.SIGHUP)),
        ("special: --budget while fingerprinting a 32 GB tree", _budget_during_walk),
        ("special: 6 GB sparse file (bounded memory, fast rerun)", _sparse),
    ]
