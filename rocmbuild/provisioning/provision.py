"""Fleet provisioning around one recipe's build.

Owns: the `up_to_date` short cut before any attempt (fingerprint.py decides, this records), storing
the fingerprint after a success, and `--wheel-dir`: running the recipe's wheel step into a staging
dir, verifying each wheel's code objects for every requested arch (unpacked; artifacts.py reads the
.so files), and publishing wheel + manifest entry into the wheel dir under a lock (nodes share it).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import filelock

from rocmbuild.errors import Outcome
from rocmbuild.options import BuildOptions
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.provisioning import fingerprint, outputs, treehash
from rocmbuild.records.recorder import RunRecorder
from rocmbuild.services import Streams
from rocmbuild.verification.artifacts import verify_artifacts

MANIFEST = "manifest.json"


def _say(streams: Streams, options: BuildOptions, text: str) -> None:
    if options.verbosity != "quiet":
        streams.err.write(f"rocmbuild: {text}\n")
        streams.err.flush()


def up_to_date(plan: BuildPlan, options: BuildOptions, rec: RunRecorder, streams: Streams,
               stop: fingerprint.Stop = fingerprint.never_stop) -> fingerprint.UpToDate:
    """``.ok`` = nothing to build: the tree's last success has this fingerprint and still verifies.

    Otherwise the stored fingerprint is dropped before the build starts: a build that then fails
    (or is interrupted half way) must not leave the claim that the tree is built.  The verdict's
    fingerprint is the inputs *before* the build, which ``after_success`` compares again.
    Raises ``treehash.Stopped`` when ``stop`` says so during the walk (a Ctrl-C, the budget).
    """
    verdict = fingerprint.check(plan, stop=stop, verify_again=not options.force)
    data = verdict.to_json()
    if options.force:
        data.update(up_to_date=False, differs=["--force"])
    rec.extra["up_to_date"] = data
    rec.event("fingerprint.compared", **data)
    tree = verdict.fingerprint.tree
    if tree is not None and not tree.cacheable:  # said once: after the build it is not walked again
        _say(streams, options, f"the tree is not cacheable ({'; '.join(tree.special[:3])}"
                               f"{' ...' if len(tree.special) > 3 else ''}): such files are never opened, "
                               "and up_to_date is never claimed for this tree")
    if verdict.ok and not options.force:
        _say(streams, options, f"up to date: same fingerprint ({verdict.fingerprint.digest[:12]}) as the last "
                               f"success in {plan.source}; {verdict.artifacts}")
        if options.wheel_dir is not None and not published(options.wheel_dir, plan.recipe.name,
                                                            verdict.fingerprint.digest):
            # A node re-run with --wheel-dir still makes sure its wheel is there.
            result = publish_wheels(plan, options, rec, streams, verdict.fingerprint)
            rec.extra["wheels"] = result.to_json()
            return verdict if result.ok else replace(verdict, ok=False)
        return verdict
    fingerprint.forget(plan.source)
    return replace(verdict, ok=False)


def after_success(base_plan: BuildPlan, final_plan: BuildPlan, options: BuildOptions, rec: RunRecorder,
                  streams: Streams, reason: str, before: fingerprint.Fingerprint | None = None,
                  stop: fingerprint.Stop = fingerprint.never_stop) -> tuple[Outcome, str]:
    """Store the fingerprint of the command's plan (not the remedied one: the next run of the same
    command must match) if the tree's inputs did not change during the build; then the wheels; an
    unverified wheel turns the outcome into `failed`."""
    current = _record_success(base_plan, final_plan, options, rec, streams, before, stop)
    if options.wheel_dir is None:
        return Outcome.SUCCEEDED, reason
    result = publish_wheels(final_plan, options, rec, streams, current)
    rec.extra["wheels"] = {**result.to_json(), **({"todo": wheel_todo(result)} if not result.ok else {})}
    if not result.ok:
        return Outcome.FAILED, f"built, but the wheel step failed: {result.detail}"
    return Outcome.SUCCEEDED, f"{reason}; wheel(s) in {options.wheel_dir}"


def _record_success(base_plan: BuildPlan, final_plan: BuildPlan, options: BuildOptions, rec: RunRecorder,
                    streams: Streams, before: fingerprint.Fingerprint | None,
                    stop: fingerprint.Stop) -> fingerprint.Fingerprint:
    """The fingerprint after the build; saved only when the tree's inputs are what they were before it."""
    def not_saved(why: str) -> None:
        fingerprint.forget(base_plan.source)
        rec.event("fingerprint.not_saved", reason=why)
        rec.extra["fingerprint_saved"] = False

    try:
        current = fingerprint.compute(base_plan, stop=stop)
    except treehash.Stopped as exc:
        not_saved(f"stopped ({exc.reason}) while fingerprinting the tree after the build")
        return before or fingerprint.Fingerprint({})
    if before is not None and before.tree is not None and not before.tree.cacheable:
        not_saved("the tree is not cacheable")
        return current
    changed = treehash.changed_between(before.tree, current.tree) if (
        before is not None and before.tree is not None and current.tree is not None) else []
    if before is not None:  # the rest of what the build saw: a torch upgraded while it ran, another cc
        changed += [f"({part})" for part in fingerprint.differences(before.parts, current) if part != "source"]
    if changed:
        shown = ", ".join(changed[:5]) + (f" (+{len(changed) - 5} more)" if len(changed) > 5 else "")
        not_saved(f"changed during the build: {shown}")
        _say(streams, options, f"the tree changed during the build ({shown}): no up_to_date record, the next "
                               "run builds again (files the build itself rewrites belong in the recipe's "
                               "[clean] paths)")
        return current
    built = outputs.collect(base_plan.source, base_plan.recipe.verify_artifacts, base_plan.recipe.clean_paths)
    base_env, final_env = base_plan.env, final_plan.env
    verify_env = {k: v for k, v in final_env.items() if base_env.get(k) != v}
    where = fingerprint.save(base_plan.source, current, base_plan.recipe.name, built, verify_env)
    rec.event("fingerprint.saved", digest=current.digest, parts=dict(current.parts), path=str(where),
              outputs=built.kind, output_files=len(built.files))
    rec.extra["fingerprint_saved"] = True
    return current


@dataclass(frozen=True)
class WheelResult:
    """What --wheel-dir produced: wheel file names with their sha256, or why not."""

    ok: bool
    detail: str
    wheels: tuple[tuple[str, str], ...] = ()
    log: str = ""
    todo: str = ""  # what to do, when the failure's cause is known (wheel_hint)

    def to_json(self) -> dict[str, Any]:
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


def published(wheel_dir: Path, recipe: str, digest: str) -> bool:
    """The wheel dir's manifest already lists a present wheel of this recipe with this fingerprint."""
    try:
        entries = json.loads((wheel_dir / MANIFEST).read_text(encoding="utf-8")).get("wheels", {})
    except (OSError, ValueError, AttributeError):
        return False
    return any(isinstance(e, dict) and e.get("recipe") == recipe and e.get("fingerprint") == digest
               and (wheel_dir / name).is_file() for name, e in entries.items())


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
        except (zipfile.BadZipFile, OSError) as exc:
            return False, f"{wheel.name} is not a readable wheel: {exc}"
        report = verify_artifacts(Path(tmp), plan.recipe.verify_artifacts, plan.targets, env=plan.env,
                                  llvm_bin=Path(plan.tools_llvm_bin) if plan.tools_llvm_bin else None)
        return report.ok, report.describe()


def _sha256(path: Path) -> str:
    import hashlib  # OpenSSL's, streamed: a wheel is bulk data (not loaded on the way to an attempt)

    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def publish_wheels(plan: BuildPlan, options: BuildOptions, rec: RunRecorder, streams: Streams,
                   current: fingerprint.Fingerprint) -> WheelResult:
    assert options.wheel_dir is not None
    target = options.wheel_dir
    target.mkdir(parents=True, exist_ok=True)
    log = rec.run_dir / "wheel.log"
    with tempfile.TemporaryDirectory(prefix=".staging-", dir=target) as staging:
        env = {**plan.env, "WHEEL_DIR": staging, "PIP_PROGRESS_BAR": "off"}
        with os.fdopen(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600), "ab") as handle:
            for command in wheel_commands(plan):
                handle.write(f"==> rocmbuild wheel: {command}\n".encode())
                handle.flush()
                code = subprocess.call(["/bin/sh", "-c", command], cwd=plan.source, env=env, stdout=handle,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
                if code != 0:
                    hint = wheel_hint(log.read_text(encoding="utf-8", errors="replace"), plan.python or "python3")
                    detail = f"`{command}` exited {code} (see {log})" + hint
                    rec.event("wheel.failed", detail=detail)
                    todo = hint.removeprefix("; ")
                    return WheelResult(False, detail, log=str(log), todo=todo[:1].upper() + todo[1:])
        wheels = sorted(Path(staging).glob("*.whl"))
        if not wheels:
            return WheelResult(False, f"the wheel step wrote no .whl into $WHEEL_DIR (see {log})", log=str(log))
        published = []
        for wheel in wheels:
            ok, detail = verify_wheel(wheel, plan)
            rec.event("wheel.verified", wheel=wheel.name, ok=ok, detail=detail)
            if not ok:
                return WheelResult(False, f"{wheel.name}: {detail}", log=str(log))
            published.append((wheel, _sha256(wheel)))
        with filelock.FileLock(str(target / ".manifest.lock")):
            manifest_path = target / MANIFEST
            try:
                manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                manifest = {}
            entries = manifest.setdefault("wheels", {})
            for wheel, sha in published:
                os.replace(wheel, target / wheel.name)
                entries[wheel.name] = {
                    "recipe": plan.recipe.name, "arch": list(plan.archs),
                    "rocm": {"root": plan.rocm_root, "version": plan.rocm_version},
                    "compiler": current.parts.get("hip_compiler"), "fingerprint": current.digest,
                    "sha256": sha,
                }
            tmp = manifest_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(manifest_path)
    names = tuple((wheel.name, sha) for wheel, sha in published)
    _say(streams, options, f"wheel(s) verified and left in {target}: {', '.join(n for n, _ in names)}")
    return WheelResult(True, f"{len(names)} wheel(s) verified for {';'.join(plan.archs)}", names, str(log))
