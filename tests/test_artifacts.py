"""Artifact arch verification: synthetic ELF files (anywhere) and real tools/binaries (marked hip)."""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import ExampleTree

from rocmbuild.host.arch import Targets
from rocmbuild.process.command import CommandResult
from rocmbuild.verification.artifacts import (
    CodeObjectListing,
    Lister,
    Tools,
    arch_of_entry,
    find_tools,
    list_code_objects,
    verify_artifacts,
)

BUILTIN_ONLY = Tools()


def bundle(*ids: str) -> bytes:
    """An uncompressed clang offload bundle with one small fake code object per ID."""
    header_size = 32 + sum(24 + len(i) for i in ids)
    entries, blobs, offset = b"", b"", header_size
    for entry_id in ids:
        code = b"" if entry_id.startswith("host") else b"\x7fELF-code-object-for-" + entry_id.encode()
        entries += struct.pack("<QQQ", offset, len(code), len(entry_id)) + entry_id.encode()
        blobs += code
        offset += len(code)
    return b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(ids)) + entries + blobs


def compressed(data: bytes) -> bytes:
    """A CCOB v2 (zlib) compressed bundle, as clang-offload-bundler --compress writes it."""
    payload = zlib.compress(data)
    return b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + len(payload), len(data), 0) + payload


def fatbin(*bundles: bytes) -> bytes:
    """Bundles laid out like a linked binary's .hip_fatbin section (each on a 4 KiB boundary)."""
    out = b""
    for b in bundles:
        out += b"\0" * (-len(out) % 4096) + b
    return out


def elf(sections: dict[str, bytes]) -> bytes:
    """A minimal little-endian ELF64 file holding the given sections (enough for objdump -h)."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [".shstrtab", *sections])
    body = bytearray(b"\0" * 64)
    placed: list[tuple[int, int, int, int]] = []   # name offset, type, offset, size
    name_offset = 1
    for name, data in [(".shstrtab", names), *sections.items()]:
        body += b"\0" * (-len(body) % 4096 if name != ".shstrtab" else 0)
        placed.append((name_offset, 3 if name == ".shstrtab" else 1, len(body), len(data)))
        body += data
        name_offset += len(name) + 1
    body += b"\0" * (-len(body) % 8)
    shoff = len(body)
    headers = b"\0" * 64
    for name_off, sh_type, offset, size in placed:
        headers += struct.pack("<IIQQQQIIQQ", name_off, sh_type, 0, 0, offset, size, 0, 0, 1, 0)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64,
                                 len(placed) + 1, 1)
    body[:64] = header
    return bytes(body) + headers


def write_elf(path: Path, *bundles: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(elf({".text": b"\x90" * 16, ".hip_fatbin": fatbin(*bundles)}))
    return path


HOST = "host-x86_64-unknown-linux"
GFX90A = "hipv4-amdgcn-amd-amdhsa--gfx90a"
GFX908 = "hipv4-amdgcn-amd-amdhsa--gfx908:xnack-"


def test_arch_of_entry_strips_features_and_skips_host() -> None:
    assert arch_of_entry("hipv4-amdgcn-amd-amdhsa--gfx90a") == "gfx90a"
    assert arch_of_entry("hip-amdgcn-amd-amdhsa-gfx908:xnack-") == "gfx908"
    assert arch_of_entry("hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-") == "gfx942"
    assert arch_of_entry("hipv4-amdgcn-amd-amdhsa--gfx1100") == "gfx1100"
    assert arch_of_entry("hipv4-amdgcn-amd-amdhsa--gfx9-4-generic") == "gfx9-4-generic"
    assert arch_of_entry(HOST) is None


def test_builtin_reader_lists_one_bundle(tmp_path: Path) -> None:
    so = write_elf(tmp_path / "a.so", bundle(HOST, GFX90A, GFX908))
    listing = list_code_objects(so, tools=BUILTIN_ONLY)
    assert listing.tool == "builtin"
    assert listing.archs == ("gfx908", "gfx90a")
    assert listing.entries == (GFX90A, GFX908)
    assert listing.readable and listing.partial == ()


def test_arch_must_be_in_every_bundle(tmp_path: Path) -> None:
    """One stale translation unit (gfx908 only) breaks gfx90a for the whole library."""
    so = write_elf(tmp_path / "lib" / "libx.so", bundle(HOST, GFX90A, GFX908), bundle(HOST, GFX908))
    listing = list_code_objects(so, tools=BUILTIN_ONLY)
    assert listing.bundles == (("gfx908", "gfx90a"), ("gfx908",))
    assert listing.partial == ("gfx90a",)
    assert listing.complete("gfx908") and not listing.complete("gfx90a")
    report = verify_artifacts(tmp_path, ["lib/*.so"], Targets.parse("gfx90a,gfx908"), Lister(tools=BUILTIN_ONLY))
    assert report.missing == ("gfx90a",)
    assert report.problem_line() == (
        "lib/libx.so has no code object for gfx90a in 1 of 2 bundles (found: gfx908, gfx90a)")


def test_host_only_binary_has_no_device_code(tmp_path: Path) -> None:
    so = tmp_path / "host.so"
    so.write_bytes(elf({".text": b"\x90" * 16}))
    listing = list_code_objects(so, tools=BUILTIN_ONLY)
    assert listing.archs == () and listing.readable
    assert "no .hip_fatbin section" in listing.note
    report = verify_artifacts(tmp_path, ["*.so"], Targets.parse("gfx942"), Lister(tools=BUILTIN_ONLY))
    assert report.problem_line() == "host.so has no code object for gfx942 (found: none)"


def test_not_an_elf_file_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "x.so").write_text("not a binary")
    listing = list_code_objects(tmp_path / "x.so", tools=BUILTIN_ONLY)
    assert not listing.readable and listing.note == "not an ELF file"


def test_compressed_bundle_is_not_guessed(tmp_path: Path) -> None:
    so = write_elf(tmp_path / "c.so", compressed(bundle(HOST, GFX90A)))
    listing = list_code_objects(so, tools=BUILTIN_ONLY)
    assert not listing.readable and listing.archs == ()
    assert "compressed bundle (CCOB v2, zlib)" in listing.note
    report = verify_artifacts(tmp_path, ["*.so"], Targets.parse("gfx90a"), Lister(tools=BUILTIN_ONLY))
    # Unverifiable is a warning for the caller, not a missing arch.
    assert report.missing == () and [c.name for c in report.unreadable] == ["c.so"]


class FakeRun:
    """Records calls; answers from a function of argv."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def __call__(self, argv: Sequence[str], **kwargs: Any) -> CommandResult:
        self.calls.append((list(argv), kwargs))
        return self.answer(list(argv), kwargs)


def test_new_llvm_objdump_output_is_parsed_in_a_scratch_dir(tmp_path: Path) -> None:
    so = write_elf(tmp_path / "x.so", bundle(HOST, GFX90A), bundle(HOST, GFX90A))

    def answer(argv: list[str], kwargs: dict[str, Any]) -> CommandResult:
        cwd = Path(kwargs["cwd"])
        assert argv[1:] == ["--offloading", "artifact"]
        assert cwd != tmp_path and (cwd / "artifact").resolve() == so.resolve()
        (cwd / "artifact.0.hipv4-amdgcn-amd-amdhsa--gfx942").write_bytes(b"extracted")
        return CommandResult(0, "artifact:\tfile format elf64-x86-64\n"
                                "Extracting offload bundle: artifact.0.host-x86_64-unknown-linux-gnu-\n"
                                "Extracting offload bundle: artifact.0.hipv4-amdgcn-amd-amdhsa--gfx942\n"
                                "Extracting offload bundle: artifact.1.hipv4-amdgcn-amd-amdhsa--gfx942\n")

    run = FakeRun(answer)
    rocm_objdump = "/opt/rocm/lib/llvm/bin/llvm-objdump"
    listing = list_code_objects(so, run=run, tools=Tools(rocm_objdump=(rocm_objdump,)))
    assert listing.tool == "/opt/rocm/lib/llvm/bin/llvm-objdump"
    assert listing.archs == ("gfx942",) and len(listing.bundles) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.so"]   # nothing extracted next to it


def test_silent_tool_falls_through_to_the_next(tmp_path: Path) -> None:
    """llvm-objdump-15 prints only the file format for HIP fat binaries: that proves nothing."""
    so = write_elf(tmp_path / "x.so", bundle(HOST, GFX90A))
    run = FakeRun(lambda argv, kw: CommandResult(0, "artifact:\tfile format elf64-x86-64\n"))
    listing = list_code_objects(so, run=run, tools=Tools(other_objdump=("/usr/bin/llvm-objdump-15",)))
    assert listing.tool == "builtin" and listing.archs == ("gfx90a",)
    assert "llvm-objdump-15: printed no code objects" in listing.note
    run = FakeRun(lambda argv, kw: CommandResult(0, ""))
    listing = list_code_objects(so, run=run, tools=Tools(other_objdump=("llvm-objdump-15",), builtin=False))
    assert not listing.readable and listing.archs == ()


def test_roc_obj_ls_output_is_parsed(tmp_path: Path) -> None:
    so = write_elf(tmp_path / "x.so", bundle(HOST, GFX908), bundle(HOST, GFX90A))
    out = (f"1       {HOST:<60}file://x.so#offset=8192&size=0\n"
           f"1       {GFX908:<60}file://x.so#offset=8192&size=10\n"
           f"2       {HOST:<60}file://x.so#offset=12288&size=0\n"
           f"2       {GFX90A:<60}file://x.so#offset=12288&size=10\n")
    listing = list_code_objects(so, run=FakeRun(lambda a, k: CommandResult(0, out)),
                                tools=Tools(roc_obj_ls=("roc-obj-ls",), builtin=False))
    assert listing.tool == "roc-obj-ls"
    assert listing.bundles == (("gfx908",), ("gfx90a",)) and listing.partial == ("gfx908", "gfx90a")


def test_globs_stay_inside_the_source_tree(tmp_path: Path) -> None:
    source = tmp_path / "src"
    outside = write_elf(tmp_path / "outside" / "evil.so", bundle(HOST, GFX90A))
    write_elf(source / "build" / "lib" / "ok.so", bundle(HOST, GFX90A))
    (source / "build" / "link.so").symlink_to(outside)
    report = verify_artifacts(source, ["build/**/*.so", "../outside/*.so", str(outside), "dist/*.whl"],
                              Targets.parse("gfx90a"), Lister(tools=BUILTIN_ONLY))
    assert [c.name for c in report.artifacts] == ["build/lib/ok.so"]
    assert report.unmatched == ("dist/*.whl",)
    assert set(report.rejected) == {"build/link.so", "../outside/*.so", str(outside)}
    assert not report.ok
    assert "no artifact matched dist/*.whl" in [p.text for p in report.problems()]


def test_describe_summarises_in_one_line(tmp_path: Path) -> None:
    write_elf(tmp_path / "a.so", bundle(HOST, GFX908))
    write_elf(tmp_path / "c.so", compressed(bundle(HOST, GFX90A)))
    report = verify_artifacts(tmp_path, ["*.so", "b/*.so"], Targets.parse("gfx90a"), Lister(tools=BUILTIN_ONLY))
    text = report.describe()
    assert "\n" not in text
    assert text.startswith("FAILED: wanted gfx90a; a.so: gfx908 (builtin), missing gfx90a; "
                           "c.so: not verified (")
    assert text.endswith("; no artifact matched b/*.so")
    ok = verify_artifacts(tmp_path, ["a.so"], Targets.parse("gfx908"), Lister(tools=BUILTIN_ONLY))
    assert ok.describe() == "ok: wanted gfx908; a.so: gfx908 (builtin)"


def test_tools_come_from_the_build_env_and_llvm_bin(tmp_path: Path) -> None:
    """verify_artifacts(Lister(env=, llvm_bin=)) looks for tools there and runs them with that env."""
    llvm_bin = tmp_path / "llvm" / "bin"
    llvm_bin.mkdir(parents=True)
    objdump = llvm_bin / "llvm-objdump"
    objdump.write_text("#!/bin/sh\n")
    objdump.chmod(0o755)
    write_elf(tmp_path / "src" / "a.so", bundle(HOST, GFX90A))
    seen: list[tuple[list[str], Any]] = []

    def run(argv: Sequence[str], **kwargs: Any) -> CommandResult:
        seen.append((list(argv), kwargs.get("env")))
        return CommandResult(0, "Extracting offload bundle: artifact.0.hipv4-amdgcn-amd-amdhsa--gfx90a\n")

    env = {"PATH": str(tmp_path / "empty"), "MARK": "1"}
    report = verify_artifacts(tmp_path / "src", ["*.so"], Targets.parse("gfx90a"),
                              Lister(run=run, env=env, llvm_bin=llvm_bin))
    assert report.ok and report.artifacts[0].listing.tool == str(objdump)
    assert seen == [([str(objdump), "--offloading", "artifact"], env)]


def test_no_match_is_a_problem(tmp_path: Path) -> None:
    report = verify_artifacts(tmp_path, ["build/**/*.so"], Targets.parse("gfx90a"), Lister(tools=BUILTIN_ONLY))
    assert report.problem_line() == "no artifact matched build/**/*.so"
    assert report.problem_fields() == {"target": "build/**/*.so"}


def test_requested_features_are_ignored(tmp_path: Path) -> None:
    write_elf(tmp_path / "a.so", bundle(HOST, GFX908))
    report = verify_artifacts(tmp_path, ["a.so"], Targets.parse("gfx908:xnack+"), Lister(tools=BUILTIN_ONLY))
    assert report.ok and report.archs == ("gfx908",)


def test_find_tools_prefers_rocm_llvm_and_versioned_names(tmp_path: Path) -> None:
    def tool(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        return path

    rocm = tmp_path / "rocm"
    tool(rocm / "lib" / "llvm" / "bin" / "llvm-objdump")
    tool(rocm / "lib" / "llvm" / "bin" / "clang-offload-bundler")
    tool(rocm / "bin" / "roc-obj-ls")
    bindir = tmp_path / "bin"
    tool(bindir / "llvm-objdump")
    tool(bindir / "llvm-objdump-15")
    tool(bindir / "llvm-objdump-18")
    tool(bindir / "clang-offload-bundler-15")
    found = find_tools(rocm, path=str(bindir))
    assert found.rocm_objdump == (str(rocm / "lib/llvm/bin/llvm-objdump"),)
    assert find_tools(None, path="", llvm_bin=rocm / "lib/llvm/bin").rocm_objdump == found.rocm_objdump
    assert found.other_objdump == tuple(str(bindir / n) for n in ("llvm-objdump", "llvm-objdump-18",
                                                                  "llvm-objdump-15"))
    assert found.bundler == (str(rocm / "lib/llvm/bin/clang-offload-bundler"),
                             str(bindir / "clang-offload-bundler-15"))
    assert found.roc_obj_ls == (str(rocm / "bin/roc-obj-ls"),)


# --- real tools (Debian's HIP packages) ---------------------------------------------------


def _real_tools() -> Tools:
    return find_tools(None)


def _need(available: object, what: str) -> None:
    """A missing tool skips locally but fails in CI, which installs Debian's HIP toolchain."""
    if not available:
        if os.environ.get("CI"):
            pytest.fail(f"{what} missing in CI: .ci/run installs hipcc rocminfo libamdhip64-dev rocm-device-libs")
        pytest.skip(f"{what} not installed")


@pytest.mark.hip
@pytest.mark.parametrize("which", ["roc_obj_ls", "bundler", "builtin"])
def test_real_tools_agree_on_the_multi_arch_build(hipvec_multi: ExampleTree, which: str) -> None:
    found = _real_tools()
    if which != "builtin":
        _need(getattr(found, which), which)
    tools = Tools() if which == "builtin" else Tools(**{which: getattr(found, which)}, builtin=False)
    so = next(hipvec_multi.root.glob("hipvec/_hipvec*.so"))
    listing = list_code_objects(so, tools=tools)
    assert listing.readable, listing.note
    assert listing.archs == ("gfx908", "gfx90a")
    assert listing.bundles == (("gfx908", "gfx90a"),)
    expected = {"roc_obj_ls": "roc-obj-ls", "bundler": "clang-offload-bundler", "builtin": "builtin"}[which]
    assert expected in Path(listing.tool).name


@pytest.mark.hip
def test_real_tools_on_a_two_bundle_library(tmp_path: Path) -> None:
    """roc-obj-ls and the bundler (one call per bundle) both see the second bundle."""
    so = write_elf(tmp_path / "two.so", bundle(HOST, GFX90A, GFX908), bundle(HOST, GFX908))
    found = _real_tools()
    for tools in (Tools(roc_obj_ls=found.roc_obj_ls, builtin=False),
                  Tools(bundler=found.bundler, builtin=False)):
        if not (tools.roc_obj_ls or tools.bundler):
            continue
        listing = list_code_objects(so, tools=tools)
        assert listing.bundles == (("gfx908", "gfx90a"), ("gfx908",)), (tools, listing)


@pytest.mark.hip
def test_old_bundler_says_it_cannot_list_a_compressed_bundle(tmp_path: Path) -> None:
    found = _real_tools()
    # Picked by name: with clang-19 installed (gfx942 tests) the newest bundler on PATH is -19.
    old = tuple(b for b in found.bundler if b.endswith("-15"))
    _need(old, "Debian's clang-offload-bundler-15")
    so = write_elf(tmp_path / "c.so", compressed(bundle(HOST, GFX90A)))
    listing = list_code_objects(so, tools=Tools(roc_obj_ls=found.roc_obj_ls, bundler=old))
    assert not listing.readable
    assert "compressed bundle (CCOB v2, zlib), cannot list with clang-offload-bundler-15" in listing.note
    assert "roc-obj-ls: printed no code objects" in listing.note


@pytest.mark.hip
@pytest.mark.integration
def test_debian_llvm_objdump_does_not_list_hip_bundles(hipvec_gfx90a: ExampleTree) -> None:
    objdump = shutil.which("llvm-objdump-15")
    _need(objdump, "llvm-objdump-15")
    assert objdump is not None
    so = next(hipvec_gfx90a.root.glob("hipvec/_hipvec*.so"))
    listing = list_code_objects(so, tools=Tools(other_objdump=(objdump,), builtin=False))
    assert isinstance(listing, CodeObjectListing) and not listing.readable
    assert "llvm-objdump-15: printed no code objects" in listing.note
