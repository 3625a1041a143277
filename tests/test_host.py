"""host.py: ROCm discovery on fake trees, versions, cgroup-aware CPUs and memory, disk."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from rocmbuild.errors import ExitCode, RocmRootError
from rocmbuild.host import facts as host
from rocmbuild.process.command import CommandResult

GiB = 1 << 30


def touch(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_opt_rocm(root: Path, version: str, *, soname: str = "6") -> Path:
    """A /opt/rocm-X.Y.Z tree the way the ROCm 6/7 packages lay it out."""
    touch(root / ".info" / "version", f"{version}-120\n")
    touch(root / "bin" / "hipcc")
    touch(root / "lib" / f"libamdhip64.so.{soname}")
    touch(root / "lib" / "llvm" / "bin" / "clang")
    touch(root / "lib" / "llvm" / "lib" / "libLLVM.so")
    (root / "amdgcn" / "bitcode").mkdir(parents=True)
    return root


class FakeRun:
    """Stands in for proc.capture, keyed by program name; records argv and env."""

    def __init__(self, outputs: Mapping[str, CommandResult] | None = None) -> None:
        self.outputs = dict(outputs or {})
        self.calls: list[tuple[list[str], dict[str, str] | None]] = []

    def __call__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 **_: Any) -> CommandResult:
        self.calls.append((list(argv), dict(env) if env is not None else None))
        name = os.path.basename(argv[0])
        return self.outputs.get(name, CommandResult(None, f"{argv[0]}: not found", missing=True))


# ---------------------------------------------------------------- discovery


def test_rocm6_symlink_layout(tmp_path: Path) -> None:
    real = make_opt_rocm(tmp_path / "opt" / "rocm-6.2.4", "6.2.4")
    (real / "llvm" / "bin").mkdir(parents=True)          # the compatibility link, also present
    (real / "hip" / "lib").mkdir(parents=True)           # gone since 6.0: must never be used
    (tmp_path / "opt" / "rocm").symlink_to("rocm-6.2.4")
    run = FakeRun()
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=run)
    assert found is not None
    assert found.root == real
    assert found.origin == "/opt/rocm -> /opt/rocm-6.2.4"
    assert (found.version, found.version_source, found.layout) == ("6.2.4", ".info/version", "opt")
    assert found.version_tuple == (6, 2, 4)
    assert found.llvm_bin == real / "lib" / "llvm" / "bin"
    assert found.lib_dirs == (real / "lib", real / "lib" / "llvm" / "lib")
    assert found.bin_dirs == (real / "bin",)
    assert found.hipcc == real / "bin" / "hipcc"
    assert found.device_lib_dir == real / "amdgcn" / "bitcode"
    assert run.calls == []                                # the files answered everything


def test_absolute_symlink_is_followed_inside_the_fake_root(tmp_path: Path) -> None:
    real = make_opt_rocm(tmp_path / "opt" / "rocm-7.0.2", "7.0.2", soname="7")
    (tmp_path / "opt" / "rocm").symlink_to("/opt/rocm-7.0.2")
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=FakeRun())
    assert found is not None and found.root == real
    assert found.origin == "/opt/rocm -> /opt/rocm-7.0.2"


def test_llvm_bin_falls_back_to_compat_link(tmp_path: Path) -> None:
    root = tmp_path / "opt" / "rocm-5.7.1"
    touch(root / ".info" / "version", "5.7.1\n")
    touch(root / "bin" / "hipcc")
    (root / "llvm" / "bin").mkdir(parents=True)
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=FakeRun())
    assert found is not None and found.llvm_bin == root / "llvm" / "bin"
    assert found.origin == "newest /opt/rocm-5.7.1"


def test_sdk_preview_under_opt_rocm_core(tmp_path: Path) -> None:
    make_opt_rocm(tmp_path / "opt" / "rocm" / "core-7.9", "7.9.0", soname="7")
    core = make_opt_rocm(tmp_path / "opt" / "rocm" / "core-7.13", "7.13.0", soname="7")
    make_opt_rocm(tmp_path / "opt" / "rocm-6.4.1", "6.4.1")   # an older release next to it
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=FakeRun())
    assert found is not None
    assert found.root == core                                 # 7.13 > 7.9 numerically
    assert (found.layout, found.origin, found.version) == ("core", "/opt/rocm/core-7.13", "7.13.0")


def test_newest_versioned_install_by_number(tmp_path: Path) -> None:
    for version in ("6.4.1", "6.10.0", "7.0.2"):
        make_opt_rocm(tmp_path / "opt" / f"rocm-{version}", version)
    touch(tmp_path / "opt" / "rocm-9.9.9" / "README")        # not ROCm: skipped
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=FakeRun())
    assert found is not None
    assert found.root == tmp_path / "opt" / "rocm-7.0.2"
    assert found.origin == "newest /opt/rocm-7.0.2 (of 3 installed)"
    assert found.layout == "opt"

    shutil.rmtree(tmp_path / "opt" / "rocm-7.0.2")
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=FakeRun())
    assert found is not None and found.root == tmp_path / "opt" / "rocm-6.10.0"   # not "6.4.1"


DEBIAN_HIP_VERSION_H = """\
// Auto-generated by cmake
#define HIP_VERSION_MAJOR 5
#define HIP_VERSION_MINOR 2
#define HIP_VERSION_PATCH 21153
"""


def make_debian(fs: Path) -> Path:
    usr = fs / "usr"
    touch(usr / "bin" / "hipcc")
    touch(usr / "lib" / "x86_64-linux-gnu" / "libamdhip64.so.5")
    (usr / "lib" / "x86_64-linux-gnu" / "amdgcn" / "bitcode").mkdir(parents=True)
    touch(usr / "lib" / "llvm-15" / "bin" / "clang")
    (usr / "lib" / "llvm-14" / "bin").mkdir(parents=True)     # no clang: not a candidate
    (usr / "lib" / "llvm-9" / "bin").mkdir(parents=True)
    touch(usr / "lib" / "llvm-9" / "bin" / "clang")           # has clang but older than 15
    touch(usr / "include" / "hip" / "hip_version.h", DEBIAN_HIP_VERSION_H)
    return usr


def test_debian_system_layout(tmp_path: Path) -> None:
    usr = make_debian(tmp_path)
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=FakeRun())
    assert found is not None
    assert (found.root, found.layout, found.origin) == (usr, "system", "system layout (/usr)")
    assert found.hipcc == usr / "bin" / "hipcc"
    assert found.lib_dirs == (usr / "lib" / "x86_64-linux-gnu",)
    assert found.llvm_bin == usr / "lib" / "llvm-15" / "bin"
    assert found.device_lib_dir == usr / "lib" / "x86_64-linux-gnu" / "amdgcn" / "bitcode"
    assert (found.version, found.version_source) == ("5.2", "hip_version.h (HIP version)")


def test_rocm_path_env_beats_opt_rocm_and_flag_beats_env(tmp_path: Path) -> None:
    make_opt_rocm(tmp_path / "opt" / "rocm-7.0.2", "7.0.2")
    (tmp_path / "opt" / "rocm").symlink_to("rocm-7.0.2")
    older = make_opt_rocm(tmp_path / "opt" / "rocm-6.4.1", "6.4.1")
    other = make_opt_rocm(tmp_path / "srv" / "rocm", "6.3.0")
    env = {"ROCM_PATH": "/opt/rocm-6.4.1"}
    found = host.discover_rocm(None, env, fs_root=tmp_path, run=FakeRun())
    assert found is not None
    assert (found.root, found.origin, found.version) == (older, "$ROCM_PATH", "6.4.1")
    found = host.discover_rocm(str(other), env, fs_root=tmp_path, run=FakeRun())
    assert found is not None
    assert (found.root, found.origin, found.layout) == (other, "--rocm-path", "custom")


def test_explicit_path_that_is_not_rocm(tmp_path: Path) -> None:
    bogus = tmp_path / "home" / "me" / "rocm"
    touch(bogus / "share" / "doc" / "README")
    make_opt_rocm(tmp_path / "opt" / "rocm-6.2.4", "6.2.4")
    with pytest.raises(RocmRootError) as info:
        host.discover_rocm(str(bogus), {}, fs_root=tmp_path, run=FakeRun())
    err = info.value
    assert err.exit_code == ExitCode.USAGE
    assert "does not look like a ROCm installation" in str(err)
    assert err.why == ("no bin/hipcc, no lib/libamdhip64.so*, no .info/version, "
                       "no include/hip/hip_version.h, no lib/llvm/bin")
    assert "/opt/rocm-6.2.4" in err.todo                      # points at what does exist


def test_explicit_path_missing_and_bad_env(tmp_path: Path) -> None:
    with pytest.raises(RocmRootError, match="does not exist"):
        host.discover_rocm(str(tmp_path / "nope"), {}, fs_root=tmp_path, run=FakeRun())
    (tmp_path / "empty").mkdir()
    with pytest.raises(RocmRootError) as info:
        host.discover_rocm(None, {"ROCM_PATH": str(tmp_path / "empty")}, fs_root=tmp_path, run=FakeRun())
    assert str(info.value).startswith("$ROCM_PATH ")
    assert "ROCM_PATH" in info.value.todo


def test_explicit_parent_of_sdk_preview_uses_the_sdk(tmp_path: Path) -> None:
    core = make_opt_rocm(tmp_path / "opt" / "rocm" / "core-7.13", "7.13.0")
    found = host.discover_rocm("/opt/rocm", {}, fs_root=tmp_path, run=FakeRun())
    assert found is not None and found.root == core and found.layout == "core"


def test_version_from_rocm_version_h(tmp_path: Path) -> None:
    root = tmp_path / "opt" / "rocm-6.3.1"
    touch(root / "bin" / "hipcc")
    touch(root / "include" / "rocm-core" / "rocm_version.h",
          "#define ROCM_VERSION_MAJOR   6\n#define ROCM_VERSION_MINOR   3\n#define ROCM_VERSION_PATCH   1\n")
    touch(root / "include" / "hip" / "hip_version.h",
          "#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 3\n#define HIP_VERSION_PATCH 42131\n")
    run = FakeRun()
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=run)
    assert found is not None
    assert (found.version, found.version_source) == ("6.3.1", "rocm_version.h")
    assert run.calls == []


def test_version_from_hip_version_h_keeps_hip_patch_out(tmp_path: Path) -> None:
    root = tmp_path / "opt" / "rocm-6.2.0"
    touch(root / "include" / "hip" / "hip_version.h",
          "#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 2\n#define HIP_VERSION_PATCH 41133\n")
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=FakeRun())
    assert found is not None
    assert (found.version, found.version_source) == ("6.2", "hip_version.h (HIP version)")


def test_version_from_hipcc_runs_it_for_the_amd_platform(tmp_path: Path) -> None:
    root = tmp_path / "opt" / "rocm"
    touch(root / "bin" / "hipcc")
    run = FakeRun({"hipcc": CommandResult(0, "HIP version: 5.2.21153-0\nclang version 15.0.6\n")})
    found = host.discover_rocm(None, {"PATH": "/usr/bin"}, fs_root=tmp_path, run=run)
    assert found is not None
    assert (found.version, found.version_source) == ("5.2", "hipcc --version (HIP version)")
    argv, env = run.calls[0]
    assert argv == [str(root / "bin" / "hipcc"), "--version"]
    assert env is not None and env["HIP_PLATFORM"] == "amd"


def test_pip_installed_rocm(tmp_path: Path) -> None:
    sdk = make_opt_rocm(tmp_path / "venv" / "lib" / "site-packages" / "_rocm_sdk_core", "7.0.0")
    run = FakeRun({"rocm-sdk": CommandResult(0, f"{sdk}\n")})
    found = host.discover_rocm(None, {}, fs_root=tmp_path, run=run)
    assert found is not None
    assert (found.root, found.layout) == (sdk, "pip")
    assert found.origin.startswith("pip rocm-sdk")
    assert run.calls[0][0] == ["rocm-sdk", "path", "--root"]


def test_nothing_found_is_none(tmp_path: Path) -> None:
    (tmp_path / "opt").mkdir()
    run = FakeRun()
    assert host.discover_rocm(None, {}, fs_root=tmp_path, run=run) is None
    assert [argv for argv, _ in run.calls] == [["rocm-sdk", "path", "--root"]]


def test_newest_sorts_numerically() -> None:
    dirs = [Path(f"/opt/rocm-{v}") for v in ("6.4.1", "6.10.0", "7.0.2", "6.9")]
    assert [d.name for d in host._newest([*dirs, Path("/opt/rocm-x")])] == [
        "rocm-7.0.2", "rocm-6.10.0", "rocm-6.9", "rocm-6.4.1",
    ]


@pytest.mark.hip
@pytest.mark.skipif(not Path("/usr/bin/hipcc").exists() and not os.environ.get("CI"),
                    reason="needs Debian's hipcc in /usr/bin (apt-get install hipcc)")
# CI's image has no /opt/rocm (.ci/run installs Debian's HIP): there the test runs, and fails if one appears.
@pytest.mark.skipif(any(Path("/opt").glob("rocm*")) and not os.environ.get("CI"),
                    reason="an /opt/rocm install takes precedence here")
def test_this_machine_finds_debian_hip() -> None:
    found = host.discover_rocm(None, {}, run=FakeRun())
    assert found is not None
    assert found.layout == "system"
    assert found.root == Path("/usr")
    assert found.hipcc == Path("/usr/bin/hipcc")
    assert found.version is not None and found.version.startswith("5.2")
    assert found.llvm_bin is not None and (found.llvm_bin / "clang").exists()
    assert any(d.glob("libamdhip64.so*") for d in found.lib_dirs)


# ---------------------------------------------------------------- CPUs


def test_cgroup_v2_quota_caps_cpus(tmp_path: Path) -> None:
    touch(tmp_path / "cpu.max", "200000 100000\n")
    result = host.cpu_count(cgroup_root=tmp_path, proc_cgroup=tmp_path / "absent", affinity=lambda: 8)
    assert result == (2, "2 CPUs (cgroup quota 200000/100000)")


def test_cgroup_v2_quota_rounds_up(tmp_path: Path) -> None:
    touch(tmp_path / "cpu.max", "150000 100000\n")
    assert host.cpu_count(cgroup_root=tmp_path, proc_cgroup=tmp_path / "x", affinity=lambda: 8)[0] == 2


def test_cgroup_v2_no_quota_uses_affinity(tmp_path: Path) -> None:
    touch(tmp_path / "cpu.max", "max 100000\n")
    expected = len(os.sched_getaffinity(0))
    count, reason = host.cpu_count(cgroup_root=tmp_path, proc_cgroup=tmp_path / "absent")
    assert count == expected
    assert reason == f"{expected} CPU{'s' if expected != 1 else ''} (affinity)"


def test_quota_above_affinity_does_not_raise_the_count(tmp_path: Path) -> None:
    touch(tmp_path / "cpu.max", "1600000 100000\n")
    assert host.cpu_count(cgroup_root=tmp_path, proc_cgroup=tmp_path / "x", affinity=lambda: 3) == (
        3, "3 CPUs (affinity)")


def test_cgroup_v2_nested_parent_is_tighter(tmp_path: Path) -> None:
    proc = touch(tmp_path / "proc-cgroup", "0::/build.slice/job-1\n")
    touch(tmp_path / "cg" / "build.slice" / "cpu.max", "300000 100000\n")
    touch(tmp_path / "cg" / "build.slice" / "job-1" / "cpu.max", "max 100000\n")
    assert host.cpu_count(cgroup_root=tmp_path / "cg", proc_cgroup=proc, affinity=lambda: 16) == (
        3, "3 CPUs (cgroup quota 300000/100000)")


def test_cgroup_v1_quota(tmp_path: Path) -> None:
    proc = touch(tmp_path / "proc-cgroup", "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n")
    group = tmp_path / "cg" / "cpu,cpuacct" / "docker" / "abc"
    touch(group / "cpu.cfs_quota_us", "400000\n")
    touch(group / "cpu.cfs_period_us", "100000\n")
    touch(tmp_path / "cg" / "cpu,cpuacct" / "cpu.cfs_quota_us", "-1\n")
    touch(tmp_path / "cg" / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n")
    assert host.cpu_count(cgroup_root=tmp_path / "cg", proc_cgroup=proc, affinity=lambda: 64) == (
        4, "4 CPUs (cgroup quota 400000/100000)")
    touch(group / "cpu.cfs_quota_us", "-1\n")
    assert host.cpu_count(cgroup_root=tmp_path / "cg", proc_cgroup=proc, affinity=lambda: 64) == (
        64, "64 CPUs (affinity)")


# ---------------------------------------------------------------- memory


def meminfo(tmp_path: Path, available_gib: int) -> Path:
    return touch(tmp_path / "meminfo",
                 f"MemTotal:       {64 * 1024 * 1024} kB\nMemFree:         1000 kB\n"
                 f"MemAvailable:   {available_gib * 1024 * 1024} kB\n")


def test_memory_without_cgroup_limit(tmp_path: Path) -> None:
    cg = tmp_path / "cg"
    touch(cg / "memory.max", "max\n")
    touch(cg / "memory.current", str(2 * GiB))
    mem, reason = host.memory_available(meminfo=meminfo(tmp_path, 16), cgroup_root=cg,
                                        proc_cgroup=tmp_path / "absent")
    assert mem == 16 * GiB
    assert reason == "16.0 GiB available (MemAvailable)"


def test_memory_capped_by_cgroup_v2(tmp_path: Path) -> None:
    cg = tmp_path / "cg"
    touch(cg / "memory.max", str(8 * GiB))
    touch(cg / "memory.current", str(2 * GiB))
    mem, reason = host.memory_available(meminfo=meminfo(tmp_path, 16), cgroup_root=cg,
                                        proc_cgroup=tmp_path / "absent")
    assert mem == 6 * GiB
    assert reason == "6.0 GiB available (cgroup memory.max 8.0 GiB, 2.0 GiB in use; MemAvailable 16.0 GiB)"


def test_reclaimable_page_cache_is_not_in_use(tmp_path: Path) -> None:
    cg = tmp_path / "cg"
    touch(cg / "memory.max", str(8 * GiB))
    touch(cg / "memory.current", str(3 * GiB))
    touch(cg / "memory.stat", f"anon {2 * GiB}\nfile {GiB}\nactive_file 0\ninactive_file {GiB}\n")
    mem, _ = host.memory_available(meminfo=meminfo(tmp_path, 16), cgroup_root=cg, proc_cgroup=tmp_path / "x")
    assert mem == 6 * GiB


def test_memory_limit_above_mem_available_changes_nothing(tmp_path: Path) -> None:
    cg = tmp_path / "cg"
    touch(cg / "memory.max", str(32 * GiB))
    touch(cg / "memory.current", str(GiB))
    mem, _ = host.memory_available(meminfo=meminfo(tmp_path, 10), cgroup_root=cg, proc_cgroup=tmp_path / "x")
    assert mem == 10 * GiB


def test_memory_cgroup_v1(tmp_path: Path) -> None:
    proc = touch(tmp_path / "proc-cgroup", "4:memory:/process_api/abc\n")
    group = tmp_path / "cg" / "memory" / "process_api" / "abc"
    touch(group / "memory.limit_in_bytes", str(4 * GiB))
    touch(group / "memory.usage_in_bytes", str(GiB))
    touch(tmp_path / "cg" / "memory" / "memory.limit_in_bytes", "9223372036854771712\n")   # unlimited
    mem, reason = host.memory_available(meminfo=meminfo(tmp_path, 16), cgroup_root=tmp_path / "cg",
                                        proc_cgroup=proc)
    assert mem == 3 * GiB
    assert "memory.limit_in_bytes 4.0 GiB" in reason
    touch(group / "memory.limit_in_bytes", "9223372036854771712\n")
    assert host.memory_available(meminfo=meminfo(tmp_path, 16), cgroup_root=tmp_path / "cg",
                                 proc_cgroup=proc)[0] == 16 * GiB


# ---------------------------------------------------------------- disk, bundle


def test_disk_free_uses_nearest_existing_ancestor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Path] = []
    real = shutil.disk_usage

    def spy(path: Any) -> Any:
        seen.append(Path(path))
        return real(path)

    monkeypatch.setattr(host.shutil, "disk_usage", spy)
    free = host.disk_free(tmp_path / "not" / "yet" / "made")
    assert seen == [tmp_path]
    assert free > 0


def test_gather_host_measures_every_time(tmp_path: Path) -> None:
    make_debian(tmp_path)
    cg = tmp_path / "cg"
    touch(cg / "cpu.max", "100000 100000\n")
    touch(cg / "memory.max", str(4 * GiB))
    touch(cg / "memory.current", "0")
    run = FakeRun()
    files = host.HostFiles(fs_root=tmp_path, cgroup_root=cg, proc_cgroup=tmp_path / "x", meminfo=meminfo(tmp_path, 16))
    kwargs: dict[str, Any] = dict(files=files, run=run, python="/venv/bin/python")
    facts = host.gather_host(None, {}, **kwargs)
    assert facts.rocm is not None and facts.rocm.layout == "system"
    assert (facts.cpus, facts.cpus_reason) == (1, "1 CPU (cgroup quota 100000/100000)")
    assert facts.mem_available == 4 * GiB
    assert facts.python == "/venv/bin/python"
    touch(cg / "cpu.max", "max 100000\n")
    fresh = host.gather_host(None, {}, **kwargs)                         # no cache: measured again
    assert fresh is not facts and fresh.cpus_reason.endswith("(affinity)")


def test_loader_dirs_are_gathered_with_the_host_facts_each_time(tmp_path: Path) -> None:
    """No module-global cache: what ldconfig says is measured by gather_host and carried by its facts."""
    calls: list[list[str]] = []

    def ldconfig(builtin: str) -> Any:
        def run(argv: Sequence[str], **_: Any) -> CommandResult:
            calls.append(list(argv))
            return CommandResult(0, "/opt/site/lib: (from /etc/ld.so.conf.d/site.conf:1)\n"
                                    f"{builtin}: (from <builtin>:0)\n")
        return run

    kwargs: dict[str, Any] = dict(files=host.HostFiles(fs_root=tmp_path, cgroup_root=tmp_path / "cg",
                                                       proc_cgroup=tmp_path / "x", meminfo=meminfo(tmp_path, 16)),
                                  run=FakeRun())
    if not (shutil.which("ldconfig") or shutil.which("ldconfig", path="/sbin:/usr/sbin")):
        pytest.fail("this machine has no ldconfig (libc-bin)")
    first = host.gather_host(None, {}, ldconfig_run=ldconfig("/usr/lib/builtin-a"), **kwargs)
    second = host.gather_host(None, {}, ldconfig_run=ldconfig("/usr/lib/builtin-b"), **kwargs)
    assert len(calls) == 2 and all("-N" in argv and "-X" in argv for argv in calls)
    assert "/usr/lib/builtin-a" in first.loader_dirs and "/usr/lib/builtin-a" not in second.loader_dirs
    assert "/usr/lib/builtin-b" in second.loader_dirs
    assert "/opt/site/lib" not in first.loader_dirs       # ld.so.conf dirs still need LIBRARY_PATH
    assert set(host.STATIC_LOADER_DIRS) <= set(first.loader_dirs)
    assert {os.path.realpath(d) for d in host.STATIC_LOADER_DIRS} <= set(first.loader_dirs)
