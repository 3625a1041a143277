"""`--wheel-dir`: the wheel dir checked before the build, the wheel step, publishing wheel + manifest.

Owns: refusing a wheel dir that cannot take a wheel (a file, a read-only mount, no permission) and a
``manifest.json`` of the wrong shape *before* the build (exit 2, what/why/todo); running the recipe's
wheel step into a staging dir as a contained step (process/sidestep.py: the --budget, the stall
timeout, an interrupt and a daemon it leaves behind are handled as in an attempt); verifying each
wheel's code objects for every requested arch; and publishing wheel + manifest entry under a lock
(nodes share the dir).  A wheel of the same file name that the manifest gives to *another* recipe,
or that is there without a manifest entry and with other content, is never replaced: the new wheel
is kept in the run dir and the step fails with a message saying both places.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import filelock

from rocmbuild.errors import Outcome, UsageError
from rocmbuild.options import BuildOptions
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process.sidestep import Bounds, ended_why, run_step, tail
from rocmbuild.records.recorder import RunRecorder
from rocmbuild.services import Streams
from rocmbuild.verification.artifacts import Lister, verify_artifacts

if TYPE_CHECKING:  # fingerprint.py imports this module's names
    from rocmbuild.provisioning.fingerprint import Fingerprint

MANIFEST = "manifest.json"
MANIFEST_MAX_BYTES = 64 << 20  # a manifest of 100,000 wheels is ~30 MB; anything larger is not one
_STR_FIELDS = ("recipe", "fingerprint", "sha256", "compiler")


class WheelDirError(UsageError):
    """The wheel dir or its manifest cannot be used (exit 2)."""


def _say(streams: Streams, options: BuildOptions, text: str) -> None:
    if options.verbosity != "quiet":
        streams.err.write(f"rocmbuild: {text}\n")
        streams.err.flush()


# -- the manifest -----------------------------------------------------------------------------------


def manifest_problem(data: object) -> str | None:
    """What is wrong with a parsed manifest's shape, or None. Pure.

    The shape: an object whose ``wheels`` (absent = none yet) maps plain ``*.whl`` file names to
    objects, whose ``recipe``/``fingerprint``/``sha256``/``compiler`` are strings when present.
    Other top-level keys are kept as they are.
    """
    if not isinstance(data, dict):
        return f"it is a JSON {type(data).__name__}, not an object"
    wheels = data.get("wheels", {})
    if not isinstance(wheels, dict):
        return f"its \"wheels\" is a JSON {type(wheels).__name__}, not an object of file name -> entry"
    for name, entry in wheels.items():
        if not name.endswith(".whl") or "/" in name or name.startswith(".") or "\0" in name:
            return f"its wheel name {name[:80]!r} is not a plain *.whl file name"
        if not isinstance(entry, dict):
            return f"the entry of {name[:80]} is a JSON {type(entry).__name__}, not an object"
        for key in _STR_FIELDS:
            if key in entry and entry[key] is not None and not isinstance(entry[key], str):
                return f"the entry of {name[:80]} has a {key} that is not a string"
    return None


def load_manifest(wheel_dir: Path) -> dict[str, Any]:
    """The wheel dir's manifest ({} when there is none); WheelDirError for one that is not a manifest."""
    path = wheel_dir / MANIFEST
    todo = (f"move {path} aside (it is rebuilt from the wheels published from now on), or pass another "
            "--wheel-dir")
    try:
        if path.exists() and not path.is_file():  # a FIFO or device would block or never end
            raise WheelDirError(f"the wheel dir's manifest {path} is not a regular file", todo=todo)
        with path.open("rb") as handle:
            raw = handle.read(MANIFEST_MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise WheelDirError(f"cannot read the wheel dir's manifest {path}", why=exc.strerror or str(exc),
                            todo=todo) from None
    if len(raw) > MANIFEST_MAX_BYTES:
        raise WheelDirError(f"the wheel dir's manifest {path} is not a rocmbuild manifest",
                            why=f"it is larger than {MANIFEST_MAX_BYTES >> 20} MiB", todo=todo)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        why = "it is nested too deeply" if isinstance(exc, RecursionError) else f"it is not JSON: {exc}"[:200]
        raise WheelDirError(f"the wheel dir's manifest {path} is not a rocmbuild manifest", why=why,
                            todo=todo) from None
    problem = manifest_problem(data)
    if problem is not None:
        raise WheelDirError(f"the wheel dir's manifest {path} is not a rocmbuild manifest", why=problem, todo=todo)
    assert isinstance(data, dict)
    return data


def check_wheel_dir(wheel_dir: Path) -> None:
    """Before the build: the wheel dir exists (created now if missing) as a directory this process can
    write, and its manifest, if any, has the right shape.  WheelDirError (exit 2) otherwise."""
    todo = "pass a writable directory as --wheel-dir (or create this one writable: `mkdir -p DIR`)"
    if wheel_dir.exists() and not wheel_dir.is_dir():
        raise WheelDirError(f"--wheel-dir {wheel_dir} is not a directory",
                            why="wheels and their manifest.json are written into it", todo=todo)
    try:
        wheel_dir.mkdir(parents=True, exist_ok=True)
        # A real write, not os.access: root passes access() on any mode, and a full disk passes it too.
        fd, probe = tempfile.mkstemp(prefix=".rocmbuild-probe-", dir=wheel_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise WheelDirError(f"cannot write wheels into --wheel-dir {wheel_dir}",
                            why=f"{exc.strerror or exc} (checked before the build, so that hours of build "
                                "are not lost at the end)", todo=todo) from None
    load_manifest(wheel_dir)


def published(wheel_dir: Path, recipe: str, digest: str) -> bool:
    """The wheel dir's manifest already lists a present wheel of this recipe with this fingerprint."""
    try:
        entries = load_manifest(wheel_dir).get("wheels", {})
    except WheelDirError:
        return False
    return any(e.get("recipe") == recipe and e.get("fingerprint") == digest and (wheel_dir / name).is_file()
               for name, e in entries.items())


def clash(name: str, sha: str, recipe: str, entries: Mapping[str, Any], wheel_dir: Path) -> str | None:
    """Why publishing wheel ``name`` of ``recipe`` would replace someone else's wheel, or None."""
    existing = wheel_dir / name
    entry = entries.get(name)
    if entry is not None and entry.get("recipe") not in (None, recipe):
        return f"{existing} is recipe '{entry.get('recipe')}''s wheel (manifest.json says so)"
    if entry is None and existing.exists():
        if existing.is_file() and not existing.is_symlink() and _sha256(existing) == sha:
            return None  # the same bytes: publishing them again changes nothing
        return f"{existing} is already there, not listed in manifest.json, with other content"
    return None


# -- the wheel step -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WheelResult:
    """What --wheel-dir produced: wheel file names with their sha256, or why not (and the outcome)."""

    ok: bool
    detail: str
    wheels: tuple[tuple[str, str], ...] = ()
    log: str = ""
    outcome: Outcome = Outcome.SUCCEEDED  # FAILED, or BUDGET_EXHAUSTED / INTERRUPTED when stopped
    todo: str = ""  # what to do, when the failure's cause is known (wheel_hint)

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "detail": self.detail, "log": self.log,
                "wheels": [{"file": name, "sha256": sha} for name, sha in self.wheels]}


def wheel_hint(log_text: str, python: str = "python3") -> str:
    """What to do about a wheel step failure whose cause the log names. Pure."""
    if "invalid command 'bdist_wheel'" in log_text:
        return ("; the build's interpreter has no `wheel` package (setuptools before 70.1 needs it for "
                f"--no-build-isolation): `{shlex.quote(python)} -m pip install wheel` there, then rerun")
    return ""


def wheel_todo(result: WheelResult) -> str:
    """summary.json's todo for a failed wheel step: as precise as its detail (never vaguer). Pure."""
    if result.ok:
        return ""
    if result.todo:
        return result.todo
    return f"The build succeeded but the wheel step failed ({result.detail}): fix that, then rerun"


def wheel_commands(plan: BuildPlan) -> tuple[str, ...]:
    """The recipe's wheel step, else a pip wheel of the tree with the build's own interpreter."""
    return plan.recipe.steps.wheel or (
        f"{shlex.quote(plan.python)} -m pip wheel --no-build-isolation --no-deps -w \"$WHEEL_DIR\" .",)


def verify_wheel(wheel: Path, plan: BuildPlan) -> tuple[bool, str]:
    """Unpack the wheel and check the recipe's artifact globs inside it for every arch."""
    if not plan.recipe.verify_artifacts:
        return True, "the recipe names no artifacts to verify"
    import zipfile  # only for --wheel-dir, after a success

    with tempfile.TemporaryDirectory(prefix="rocmbuild-wheel-") as tmp:
        try:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(tmp)
        except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError, ValueError) as exc:
            # unsupported compression, an encrypted member, a damaged header: a bad wheel, not a crash
            return False, f"{wheel.name} is not a readable wheel: {exc}"
        report = verify_artifacts(Path(tmp), plan.recipe.verify_artifacts, plan.targets, Lister(
                                  env=plan.env, llvm_bin=Path(plan.tools_llvm_bin) if plan.tools_llvm_bin else None))
        return report.ok, report.describe()


def _sha256(path: Path) -> str:
    import hashlib  # OpenSSL's, streamed: a wheel is bulk data (not loaded on the way to an attempt)

    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


_STOPPED = {"budget": Outcome.BUDGET_EXHAUSTED, "interrupted": Outcome.INTERRUPTED}


def _run_wheel_step(plan: BuildPlan, staging: str, log: Path, bounds: Bounds, rec: RunRecorder) -> WheelResult | None:
    """The wheel commands, each a contained step; None when all exited 0, else why not."""
    env = {**plan.env, "WHEEL_DIR": staging, "PIP_PROGRESS_BAR": "off"}
    for command in wheel_commands(plan):
        outcome = run_step("wheel", command, cwd=plan.source, env=env, log=log, bounds=bounds)
        if outcome.succeeded:
            continue
        why = ended_why(outcome, bounds)
        detail = f"`{command}` {why if outcome.ended == 'exited' else 'stopped: ' + why} (see {log})"
        hint = wheel_hint(tail(log, 1 << 20), plan.python or "python3") if outcome.ended == "exited" else ""
        detail += hint
        rec.event("wheel.failed", detail=detail, ended=outcome.ended)
        todo = hint.removeprefix("; ")
        return WheelResult(False, detail, log=str(log), outcome=_STOPPED.get(outcome.ended, Outcome.FAILED),
                           todo=todo[:1].upper() + todo[1:])
    return None


def _keep_in_run_dir(wheel: Path, rec: RunRecorder) -> Path:
    kept = rec.run_dir / "wheels"
    kept.mkdir(exist_ok=True)
    shutil.move(str(wheel), kept / wheel.name)
    return kept / wheel.name


def publish_wheels(plan: BuildPlan, options: BuildOptions, rec: RunRecorder, streams: Streams,
                   current: Fingerprint, bounds: Bounds | None = None) -> WheelResult:
    """Run the wheel step, verify, and publish into --wheel-dir; ``current`` is the build's fingerprint."""
    assert options.wheel_dir is not None
    target = options.wheel_dir
    bounds = bounds or Bounds()
    log = rec.run_dir / "wheel.log"
    try:
        target.mkdir(parents=True, exist_ok=True)
        staging_dir = tempfile.TemporaryDirectory(prefix=".staging-", dir=target)
    except OSError as exc:  # checked before the build; changed since (a remount, a full disk)
        return WheelResult(False, f"cannot write into {target}: {exc.strerror or exc}", log=str(log))
    with staging_dir as staging:
        failed = _run_wheel_step(plan, staging, log, bounds, rec)
        if failed is not None:
            return failed
        wheels = sorted(Path(staging).glob("*.whl"))
        if not wheels:
            return WheelResult(False, f"the wheel step wrote no .whl into $WHEEL_DIR (see {log})", log=str(log))
        verified = []
        for wheel in wheels:
            ok, detail = verify_wheel(wheel, plan)
            rec.event("wheel.verified", wheel=wheel.name, ok=ok, detail=detail)
            if not ok:
                return WheelResult(False, f"{wheel.name}: {detail}", log=str(log))
            verified.append((wheel, _sha256(wheel)))
        return _publish(plan, options, rec, streams, _Verified(current=current, wheels=tuple(verified), log=log))


@dataclass(frozen=True, kw_only=True)
class _Verified:
    """The wheel step's verified wheels (each with its sha256), the build's fingerprint, the step's log."""

    current: Fingerprint
    wheels: tuple[tuple[Path, str], ...]
    log: Path


def _publish(plan: BuildPlan, options: BuildOptions, rec: RunRecorder, streams: Streams,
             made: _Verified) -> WheelResult:
    current, verified, log = made.current, made.wheels, made.log
    target = options.wheel_dir
    assert target is not None
    try:
        with filelock.FileLock(str(target / ".manifest.lock")):
            # Read again under the lock: another node may have published (or broken it) since the check.
            manifest = load_manifest(target)
            entries = manifest.setdefault("wheels", {})
            clashes = [(wheel, why) for wheel, sha in verified
                       if (why := clash(wheel.name, sha, plan.recipe.name, entries, target)) is not None]
            if clashes:
                kept = [_keep_in_run_dir(wheel, rec) for wheel, _ in clashes]
                detail = (f"not replaced: {'; '.join(why for _, why in clashes)}; the new wheel is kept in "
                          f"{', '.join(str(k) for k in kept)} (give each recipe its own --wheel-dir, or remove "
                          "the other wheel and its manifest entry if it is to be replaced)")
                rec.event("wheel.refused", detail=detail)
                return WheelResult(False, detail, log=str(log))
            for wheel, sha in verified:
                os.replace(wheel, target / wheel.name)
                entries[wheel.name] = {
                    "recipe": plan.recipe.name, "arch": list(plan.archs),
                    "rocm": {"root": plan.rocm_root, "version": plan.rocm_version},
                    "compiler": current.parts.get("hip_compiler"), "fingerprint": current.digest,
                    "sha256": sha,
                }
            manifest_path = target / MANIFEST
            tmp = manifest_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(manifest_path)
    except WheelDirError as exc:
        return WheelResult(False, f"{exc.what}: {exc.why}; {exc.todo}", log=str(log))
    except OSError as exc:
        with contextlib.suppress(OSError):
            (target / MANIFEST).with_suffix(".tmp").unlink()
        return WheelResult(False, f"cannot publish into {target}: {exc.strerror or exc}", log=str(log))
    names = tuple((wheel.name, sha) for wheel, sha in verified)
    _say(streams, options, f"wheel(s) verified and left in {target}: {', '.join(n for n, _ in names)}")
    return WheelResult(True, f"{len(names)} wheel(s) verified for {';'.join(plan.archs)}", names, str(log))
