"""``rocmbuild doctor``: the preflight checks as a table, plus what this machine has.

Versions (ROCm, hipcc, clang, Python, torch, cmake, ninja, ccache), GPUs and
how they were detected, the ROCm entries in the loader config, the compiler
cache, and the MAX_JOBS rocmbuild would choose and why.  Exit 0 when no check
failed, 1 when one did, 2 on usage errors.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from rocmbuild.checks import preflight
from rocmbuild.checks.checklist import find_hipcc, toolchain_checks
from rocmbuild.commands import fleet
from rocmbuild.errors import UsageError
from rocmbuild.host import arch as archmod
from rocmbuild.host import facts as hostmod
from rocmbuild.host import hipcompiler, ldcache
from rocmbuild.options import DoctorOptions
from rocmbuild.planning.environment import choose_jobs
from rocmbuild.process import command as proc
from rocmbuild.process.containment import mode as containment_mode
from rocmbuild.toolchain import cache
from rocmbuild.toolchain.cache import REMOTE_ENV

DEFAULT_GB_PER_JOB = 4.0


def _first_line(result: proc.CommandResult) -> str | None:
    if result.missing or result.returncode is None:
        return None
    lines = [line for line in result.output.splitlines() if line.strip()]
    return lines[0].strip() if lines else None


def tool_versions(env: Mapping[str, str], hipcc: str | None, llvm_bin: str | None, python: str,
                  run: proc.Run, probes: preflight.ProbeCache | None = None) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    if hipcc:
        parsed = preflight.hipcc_version(hipcc, env, run, probes)
        versions["hipcc"] = parsed.describe(hipcc)
    else:
        versions["hipcc"] = None
    clang = str(Path(llvm_bin) / "clang") if llvm_bin and (Path(llvm_bin) / "clang").exists() else "clang"
    versions["clang"] = _first_line(run([clang, "--version"], env=env))
    versions["python"] = _first_line(run([python, "--version"], env=env))
    for tool in ("cmake", "ninja", "ccache", "sccache"):
        versions[tool] = _first_line(run([tool, "--version"], env=env))
    return versions


def loader_config(run: proc.Run, conf_dir: Path = Path("/etc/ld.so.conf.d")) -> dict[str, Any]:
    """ROCm entries in the loader config: what load-time lookups will find without LD_LIBRARY_PATH."""
    files: dict[str, list[str]] = {}
    if conf_dir.is_dir():
        for conf in sorted(conf_dir.glob("*.conf")):
            try:
                lines = [ln.strip() for ln in conf.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
            except OSError:
                continue
            rocm_lines = [ln for ln in lines if "rocm" in ln.lower() or "rocm" in conf.name.lower()]
            if rocm_lines:
                files[str(conf)] = rocm_lines
    amdhip = [entry.line for entry in ldcache.lookup(run) if entry.soname.startswith("libamdhip64.so")]
    return {"files": files, "ldconfig_amdhip64": amdhip}


def gather(arch: str | None, rocm_path: str | None, environ: Mapping[str, str], run: proc.Run = proc.capture,
           detect: Callable[[], archmod.Detection | None] = archmod.detect_local_archs,
           hip_compiler: str | None = None) -> dict[str, Any]:
    facts = hostmod.gather_host(rocm_path, environ, run=run)
    rocm = facts.rocm
    env = dict(environ)
    env.setdefault("HIP_PLATFORM", "amd")
    detection = detect()
    if arch:
        archs = archmod.plain_targets(archmod.Targets.parse(arch))[0]
    else:
        archs = detection.as_targets() if detection else archmod.Targets()
    hipcc = find_hipcc(str(rocm.hipcc) if rocm and rocm.hipcc else None, env)
    python = shutil.which("python3", path=env.get("PATH")) or "python3"
    # The HIP compiler builds would use (--hip-compiler, $HIPCXX, else hipcc): the checks judge it.
    bad: preflight.Check | None = None
    try:
        compiler = hipcompiler.resolve(hip_compiler, env, hipcc)
    except UsageError as exc:
        # doctor reports a broken HIPCXX as a failed check (a build refuses it with exit 2).
        compiler = None
        bad = preflight.Check("HIP compiler", "fail", exc.what, exc.todo, "toolchain_missing")
    libs = hipcompiler.default_device_libs(compiler, rocm.layout if rocm else None, env)
    if libs is not None:    # as builds get it (planning.py)
        env["HIP_DEVICE_LIB_PATH"] = str(libs)
    probes = preflight.ProbeCache()  # hipcc is asked once for its version
    checks = toolchain_checks(rocm=rocm, hipcc=hipcc, archs=archs,
                              probing=preflight.Probing(env=env, run=run, cache=probes), compiler=compiler)
    if bad is not None:
        checks.insert(1, bad)
    checks.append(preflight.check_memory(facts.mem_available, DEFAULT_GB_PER_JOB))
    checks.append(preflight.check_disk(Path.cwd(), 0))
    torch = preflight.check_torch_rocm(python, env, run)
    # Without torch nothing is broken yet; only torch-based recipes (vllm) need it.
    checks.append(torch if torch.status == "ok" else preflight.Check(
        torch.name, "warn", torch.detail, torch.todo, torch.category, fatal=False))

    contained = containment_mode()  # how a build's processes are kept and stopped
    checks.append(preflight.Check(
        "containment", "ok" if contained.kind == "cgroup" else "warn", f"{contained.kind}: {contained.detail}",
        "" if contained.kind == "cgroup" else "run as root or in a delegated cgroup v2 subtree for cgroup containment",
        fatal=False))
    cache_info = _cache_info(env, run)
    jobs, jobs_reason = choose_jobs(facts.cpus, facts.mem_available, DEFAULT_GB_PER_JOB)
    return {
        "rocm": {"root": str(rocm.root) if rocm else None, "version": rocm.version if rocm else None,
                 "origin": rocm.origin if rocm else None, "layout": rocm.layout if rocm else None,
                 "lib_dirs": [str(d) for d in rocm.lib_dirs] if rocm else [],
                 "llvm_bin": str(rocm.llvm_bin) if rocm and rocm.llvm_bin else None},
        "checks": [{"name": c.name, "status": c.status, "detail": c.detail, "todo": c.todo,
                    "category": c.category} for c in checks],
        "versions": {**tool_versions(env, hipcc, compiler.llvm_bin if compiler and compiler.llvm_bin else
                                     str(rocm.llvm_bin) if rocm and rocm.llvm_bin else None,
                                     python, run, probes), "torch": torch.detail},
        "gpus": {"detected": list(detection.targets) if detection else [],
                 "source": detection.source if detection else None,
                 "warnings": list(detection.warnings) if detection else [],
                 "note": None if detection else "no AMD GPU detected (normal on a build host): pass --arch"},
        "arch_checked": list(archs.names),
        "hip_compiler": {**compiler.to_json(), "why": _compiler_why(compiler)} if compiler else None,
        "hip_device_lib_path": hipcompiler.device_lib_path(env),
        "hip_device_lib_path_origin": None if not hipcompiler.device_lib_path(env) else
        "built by `make toolchain`; HIP_DEVICE_LIB_PATH was unset" if libs is not None else "$HIP_DEVICE_LIB_PATH",
        "loader": loader_config(run),
        "cache": cache_info,
        "jobs": {"max_jobs": jobs, "why": jobs_reason, "cpus": facts.cpus_reason, "memory": facts.mem_reason},
    }


def _cache_info(env: Mapping[str, str], run: proc.Run) -> dict[str, Any]:

    tool = cache.detect_cache(env, run)
    config = cache.make_config(tool, env) if tool is not None else None
    return cache.doctor_info(tool, config, env, run).to_json()


def render(report: Mapping[str, Any], width: int = 120) -> str:
    import io

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, no_color=True, highlight=False)
    rocm = report["rocm"]
    console.print(f"ROCm: {rocm['root'] or 'not found'} version {rocm['version'] or 'unknown'} ({rocm['origin']})")
    compiler = report.get("hip_compiler")
    console.print(f"HIP compiler: {compiler['path']} ({compiler['why']})" if compiler
                  else "HIP compiler: none (no $HIPCXX, no hipcc)")
    libs = report.get("hip_device_lib_path")
    shown = f"{libs} ({report.get('hip_device_lib_path_origin')})" if libs else "unset (the compiler searches its ROCm)"
    console.print(f"HIP_DEVICE_LIB_PATH: {shown}")
    table = Table(title="checks", title_justify="left")
    for column in ("check", "status", "detail", "what to do"):
        table.add_column(column, overflow="fold")
    for check in report["checks"]:
        table.add_row(check["name"], check["status"], check["detail"], check["todo"] or "")
    console.print(table)
    versions = Table(title="versions", title_justify="left")
    versions.add_column("tool")
    versions.add_column("version", overflow="fold")
    for tool, version in report["versions"].items():
        versions.add_row(tool, version or "not found")
    console.print(versions)
    gpus = report["gpus"]
    console.print(f"GPUs: {', '.join(gpus['detected']) or 'none'}"
                  + (f" (from {gpus['source']})" if gpus["source"] else f" ({gpus['note']})"))
    for warning in gpus["warnings"]:
        console.print(f"  warning: {warning}")
    loader = report["loader"]
    console.print("loader config ROCm entries: " + (", ".join(
        f"{f}: {' '.join(v)}" for f, v in loader["files"].items()) or "none in /etc/ld.so.conf.d"))
    console.print("ldconfig knows: " + (", ".join(loader["ldconfig_amdhip64"]) or "no libamdhip64"))
    cache = report["cache"]
    console.print("compiler cache: " + (", ".join(f"{k}={v}" for k, v in cache.items() if v not in (None, [], ()))
                                        or "none (install ccache to make retries cheap)"))
    jobs = report["jobs"]
    console.print(f"MAX_JOBS rocmbuild would choose: {jobs['max_jobs']} ({jobs['why']}; {jobs['cpus']}; "
                  f"{jobs['memory']})")
    return buffer.getvalue()


def _compiler_why(compiler: hipcompiler.HipCompiler) -> str:
    if compiler.origin == "--hip-compiler":
        return "--hip-compiler; builds get it as HIPCXX"
    if compiler.origin == "$HIPCXX":
        return "$HIPCXX, CMake's HIP compiler variable, is set"
    return compiler.origin


def run_doctor(options: DoctorOptions, *, environ: Mapping[str, str], out: TextIO,
               run: proc.Run = proc.capture) -> int:
    """``rocmbuild doctor``: the checks and facts, written to ``out``; 1 when a check failed, else 0."""
    environ = dict(environ or os.environ)
    if options.cache_remote:  # --cache-remote: what a build with it would use (cache.doctor_info reports it)
        environ[REMOTE_ENV] = options.cache_remote
    report = gather(options.arch, options.rocm_path, environ, run=run, hip_compiler=options.hip_compiler)
    wheel_info, wheel_check = fleet.wheel_dir_info(options.wheel_dir, environ)
    req_info, req_check = fleet.requires_from_info(options.requires_from, environ)
    report["fleet"] = {"wheel_dir": wheel_info, "requires_from": req_info,
                       "cache_remote": report["cache"].get("remote")}
    report["checks"] += [{"name": c.name, "status": c.status, "detail": c.detail, "todo": c.todo,
                          "category": c.category} for c in (wheel_check, req_check) if c is not None]
    if options.as_json:
        out.write(json.dumps(report) + "\n")
    else:
        out.write(render(report))
        remote = report["fleet"]["cache_remote"]
        out.write("\n".join([*fleet.render(report["fleet"]), "shared compiler cache: " + (
            remote or "none (--cache-remote redis://host:6379 shares compiles across nodes)")]) + "\n")
    return 1 if any(c["status"] == "fail" for c in report["checks"]) else 0
