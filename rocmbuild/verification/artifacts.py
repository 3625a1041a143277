"""Artifact verification: which GPU targets a built binary really carries code objects for.

A build can succeed and still be useless on the target GPU: a stale object
compiled for another arch (the build system considered it up to date), an arch
list that never reached the compiler.  This module lists the code objects in
each artifact of ``[verify] artifacts`` and reports requested archs that are
missing, before the user finds out with ``hipErrorNoBinaryForGpu``.

Listing uses whichever tool works (docs/rocm-facts.md, "Checking a built binary"), in order:
ROCm's ``llvm-objdump --offloading``, ``roc-obj-ls``, ``clang-offload-bundler
--list`` on each bundle of the ``.hip_fatbin`` section, any other
``llvm-objdump``, and last a built-in reader of the (uncompressed) bundle
format.  A tool that prints nothing proves nothing (Debian's llvm-objdump-15
prints nothing for HIP fat binaries, old bundlers print nothing for a
compressed bundle), so only positive listings count.

A linked library holds one bundle per translation unit: an arch counts as
present only when every bundle has it (one stale object is enough to break a
kernel launch).
"""

from __future__ import annotations

import mmap
import os
import re
import struct
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rocmbuild.host.arch import Targets, processors_in
from rocmbuild.process import command as proc

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
FATBIN_SECTION = ".hip_fatbin"
# The new offload driver (--offload-new-driver) embeds images here instead.
OFFLOADING_SECTION = ".llvm.offloading"
# Bundles of a linked binary start on 4 KiB boundaries (clang's HIP object generator).
BUNDLE_ALIGNMENT = 4096

_COMPRESSION_METHODS = {0: "zlib", 1: "zstd"}


def arch_of_entry(entry_id: str) -> str | None:
    """The plain gfx name in a bundle entry ID, None for host entries.

    ``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`` -> gfx90a, ``hip-amdgcn-amd-amdhsa-gfx908`` -> gfx908.
    """
    if "amdgcn" not in entry_id:
        return None
    found = processors_in(entry_id.split("amdgcn", 1)[1])
    return found[0] if found else None


# --- values -------------------------------------------------------------------


@dataclass(frozen=True)
class CodeObjectListing:
    """The GPU code objects found in one file."""

    archs: tuple[str, ...]                 # plain gfx names found anywhere, sorted
    tool: str                              # what listed them ("roc-obj-ls", a path, "builtin", "elf")
    raw: str                               # the tool's output, for the record
    bundles: tuple[tuple[str, ...], ...] = ()   # archs per bundle (one bundle per translation unit)
    entries: tuple[str, ...] = ()          # full entry IDs, features included
    note: str = ""                         # why nothing could be listed, or what was tried first
    readable: bool = True                  # False: no tool could list this file; archs means nothing

    def complete(self, processor: str) -> bool:
        """True when every bundle carries a code object for ``processor`` (a plain gfx name)."""
        want = processor
        if not self.bundles:
            return want in self.archs
        return all(want in bundle for bundle in self.bundles)

    @property
    def partial(self) -> tuple[str, ...]:
        """Archs present in some bundles but not all."""
        return tuple(a for a in self.archs if not self.complete(a))


@dataclass(frozen=True)
class Tools:
    """Candidate programs, each tuple in preference order; builtin = use the built-in reader last."""

    rocm_objdump: tuple[str, ...] = ()     # ROCm's own llvm-objdump (new enough for --offloading)
    roc_obj_ls: tuple[str, ...] = ()
    bundler: tuple[str, ...] = ()
    other_objdump: tuple[str, ...] = ()    # llvm-objdump from PATH / versioned names: may be too old
    builtin: bool = True
    # The bundler of the HIP compiler's own LLVM (llvm_bin): it knows the bundle format that
    # compiler wrote (e.g. a newer clang's compressed bundles), so it goes before roc-obj-ls.
    compiler_bundler: tuple[str, ...] = ()


def _versioned(directory: Path, stem: str) -> list[Path]:
    """``stem-NN`` programs in a directory, newest first."""
    found = []
    try:
        for entry in directory.glob(f"{stem}-[0-9]*"):
            suffix = entry.name[len(stem) + 1:]
            if suffix.isdigit() and os.access(entry, os.X_OK):
                found.append((int(suffix), entry))
    except OSError:
        return []
    return [p for _, p in sorted(found, reverse=True)]


def find_tools(rocm_root: Path | str | None = None, path: str | None = None,
               llvm_bin: Path | str | None = None) -> Tools:
    """Locate listing tools: ``llvm_bin`` and the ROCm root's LLVM and bin dirs first, then PATH
    (``path``, default $PATH), then versioned names (llvm-objdump-15...)."""
    rocm_dirs: list[Path] = [Path(llvm_bin)] if llvm_bin else []
    if rocm_root:
        root = Path(rocm_root)
        rocm_dirs += [root / "lib" / "llvm" / "bin", root / "llvm" / "bin", root / "bin"]
    search = path if path is not None else os.environ.get("PATH", "")
    path_dirs = [Path(p) for p in search.split(os.pathsep) if p]

    def executables(dirs: Sequence[Path], name: str, versioned: bool = False) -> list[str]:
        out: list[str] = []
        for d in dirs:
            candidate = d / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                out.append(str(candidate))
        if versioned:
            for d in dirs:
                out.extend(str(p) for p in _versioned(d, name))
        # Merged /usr (/bin -> /usr/bin) and llvm-objdump -> llvm-objdump-14 links: one entry per program.
        unique: dict[str, str] = {}
        for program in out:
            unique.setdefault(os.path.realpath(program), program)
        return list(unique.values())

    rocm_objdump = executables(rocm_dirs, "llvm-objdump")
    rocm_real = {os.path.realpath(p) for p in rocm_objdump}
    other = [p for p in executables(path_dirs, "llvm-objdump", versioned=True)
             if os.path.realpath(p) not in rocm_real]
    return Tools(
        rocm_objdump=tuple(rocm_objdump),
        roc_obj_ls=tuple(executables([*rocm_dirs, *path_dirs], "roc-obj-ls")),
        bundler=tuple(executables([*rocm_dirs, *path_dirs], "clang-offload-bundler", versioned=True)),
        other_objdump=tuple(other),
        compiler_bundler=tuple(executables([Path(llvm_bin)], "clang-offload-bundler")) if llvm_bin else (),
    )


# --- reading the file ourselves: ELF sections and bundle boundaries --------------


@dataclass(frozen=True)
class _Bundle:
    offset: int          # within the section
    data: bytes
    compressed: str | None    # "CCOB v2, zlib" for a compressed bundle, None otherwise


def _elf_sections(blob: bytes | mmap.mmap) -> dict[str, tuple[int, int]] | None:
    """Section name -> (file offset, size) of a little-endian ELF64 file; None if not one."""
    if len(blob) < 64 or blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    if shoff == 0 or shnum == 0 or shoff + shnum * shentsize > len(blob) or shstrndx >= shnum:
        return {}
    headers = [struct.unpack_from("<IIQQQQ", blob, shoff + i * shentsize) for i in range(shnum)]
    str_off, str_size = headers[shstrndx][4], headers[shstrndx][5]
    names = blob[str_off:str_off + str_size]
    sections: dict[str, tuple[int, int]] = {}
    for name_off, sh_type, _flags, _addr, offset, size in headers:
        end = names.find(b"\0", name_off)
        name = names[name_off:end if end >= 0 else None].decode("ascii", "replace")
        # SHT_NOBITS (8) has no bytes in the file.
        sections[name] = (offset, 0 if sh_type == 8 else size)
    return sections


def _read_fatbin(path: Path) -> tuple[dict[str, tuple[int, int]] | None, bytes]:
    """The ELF section table and the .hip_fatbin bytes, without reading the whole (maybe huge) file."""
    with path.open("rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None, b""
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as blob:
            sections = _elf_sections(blob)
            if not sections or FATBIN_SECTION not in sections:
                return sections, b""
            offset, size = sections[FATBIN_SECTION]
            return sections, bytes(blob[offset:offset + size])


def _bundle_end(section: bytes, start: int) -> tuple[int | None, str | None]:
    """Where the bundle at ``start`` ends (None if unknown) and its compression description."""
    if section.startswith(BUNDLE_MAGIC, start):
        count, = struct.unpack_from("<Q", section, start + 24)
        pos, end = start + 32, start + 32
        for _ in range(min(count, 4096)):
            offset, size, id_len = struct.unpack_from("<QQQ", section, pos)
            pos += 24 + id_len
            end = max(end, pos, start + offset + size)
        return end, None
    version, method = struct.unpack_from("<HH", section, start + 4)
    how = f"CCOB v{version}, {_COMPRESSION_METHODS.get(method, f'method {method}')}"
    if version == 2:
        return start + struct.unpack_from("<I", section, start + 8)[0], how
    if version >= 3:
        return start + struct.unpack_from("<Q", section, start + 8)[0], how
    return None, how      # v1 does not record its size


def _split_bundles(section: bytes) -> list[_Bundle]:
    """The bundles of a .hip_fatbin section, in order (a linked binary has one per object)."""
    def magic_at(pos: int) -> bool:
        return section.startswith(BUNDLE_MAGIC, pos) or section.startswith(COMPRESSED_MAGIC, pos)

    starts: list[tuple[int, str | None, int | None]] = []
    pos = 0
    while pos < len(section):
        if not magic_at(pos):
            break
        try:
            end, how = _bundle_end(section, pos)
        except struct.error:
            end, how = None, None
        starts.append((pos, how, end))
        nxt = (end if end is not None else pos + 1)
        nxt = -(-nxt // BUNDLE_ALIGNMENT) * BUNDLE_ALIGNMENT
        while nxt < len(section) and not magic_at(nxt):
            nxt += BUNDLE_ALIGNMENT
        pos = nxt
    bundles = []
    for i, (start, how, end) in enumerate(starts):
        stop = starts[i + 1][0] if i + 1 < len(starts) else len(section)
        bundles.append(_Bundle(start, section[start:min(stop, end) if end else stop], how))
    return bundles


def _builtin_entries(bundle: _Bundle) -> list[str] | None:
    """Entry IDs of an uncompressed bundle; None when it cannot be read."""
    if bundle.compressed is not None:
        return None
    data = bundle.data
    try:
        count, = struct.unpack_from("<Q", data, 24)
        pos, ids = 32, []
        for _ in range(count):
            _offset, _size, id_len = struct.unpack_from("<QQQ", data, pos)
            ids.append(data[pos + 24:pos + 24 + id_len].decode("utf-8", "replace"))
            pos += 24 + id_len
    except struct.error:
        return None
    return ids


# --- the tools -------------------------------------------------------------------


def _listing(tool: str, raw: str, per_bundle: Sequence[Sequence[str]], note: str = "") -> CodeObjectListing:
    bundles = tuple(tuple(sorted({a for e in ids if (a := arch_of_entry(e))})) for ids in per_bundle)
    entries = tuple(dict.fromkeys(e for ids in per_bundle for e in ids if arch_of_entry(e)))
    archs = tuple(sorted({a for b in bundles for a in b}))
    return CodeObjectListing(archs=archs, tool=tool, raw=raw, bundles=bundles, entries=entries, note=note)


Found = tuple[list[list[str]] | None, str, str]   # (entry IDs per bundle, raw output, why not)


def _failed(result: proc.CommandResult) -> str:
    lines = result.output.strip().splitlines()
    return lines[-1] if lines else f"exit status {result.returncode}"


def _with_objdump(tool: str, path: Path, run: proc.Run, env: Mapping[str, str] | None) -> Found:
    """``llvm-objdump --offloading``; newer versions extract each entry to a file, so run it in a
    scratch dir on a symlink (never next to the artifact)."""
    with tempfile.TemporaryDirectory(prefix="rocmbuild-objdump-") as scratch:
        link = Path(scratch) / "artifact"
        link.symlink_to(path.resolve())
        result = run([tool, "--offloading", link.name], cwd=Path(scratch), env=env)
    if result.missing or not result.ok:
        return None, result.output, _failed(result)
    bundles: dict[str, list[str]] = {}
    # "Extracting offload bundle: artifact.0.hipv4-amdgcn-amd-amdhsa--gfx90a" (LLVM 20+)
    for m in re.finditer(r"Extracting offload bundle: artifact\.(\d+)\.(\S+)", result.output):
        bundles.setdefault(m.group(1), []).append(m.group(2))
    # "OFFLOADING IMAGE [0]: ... arch gfx90a ... triple amdgcn-amd-amdhsa" (new offload driver)
    images = re.findall(r"^arch\s+(\S+)\s*\n\s*triple\s+(\S+)", result.output, re.M)
    if images:
        bundles["images"] = [f"{triple}--{arch}" for arch, triple in images]
    if not bundles:
        # LLVM 15-19 accept --offloading but only know the new driver's images.
        return None, result.output, "printed no code objects (too old for HIP fat binaries?)"
    return list(bundles.values()), result.output, ""


def _with_roc_obj_ls(tool: str, path: Path, run: proc.Run, env: Mapping[str, str] | None) -> Found:
    # A Perl script that calls objdump: needs PATH.
    result = run([tool, str(path)], env=env)
    if result.missing or not result.ok:
        return None, result.output, _failed(result)
    bundles: dict[str, list[str]] = {}
    # "1       hipv4-amdgcn-amd-amdhsa--gfx90a        file://x.so#offset=20480&size=4472"
    for m in re.finditer(r"^\s*(\d+)\s+(\S+)\s+file://", result.output, re.M):
        bundles.setdefault(m.group(1), []).append(m.group(2))
    if not bundles:
        # Old roc-obj-ls stops at the first bundle it does not understand (a compressed one).
        return None, result.output, "printed no code objects"
    return list(bundles.values()), result.output, ""


def _with_bundler(tool: str, bundles: Sequence[_Bundle], run: proc.Run, env: Mapping[str, str] | None) -> Found:
    out: list[list[str]] = []
    raw: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rocmbuild-bundle-") as scratch:
        for index, bundle in enumerate(bundles):
            file = Path(scratch) / f"bundle-{index}.hipfb"
            file.write_bytes(bundle.data)
            result = run([tool, "--list", "--type=o", f"--input={file}"], env=env)
            if not result.missing and "nknown command line argument" in result.output:
                # Bundlers before LLVM 15 only know --inputs.
                result = run([tool, "--list", "--type=o", f"--inputs={file}"], env=env)
            raw.append(f"# bundle {index}\n{result.output}")
            # One entry ID per line; warnings ("...: warning: -inputs is deprecated") have spaces.
            ids = [s for line in result.output.splitlines() if "-" in (s := line.strip()) and " " not in s]
            if result.missing or not result.ok or not ids:
                if bundle.compressed:
                    why = f"compressed bundle ({bundle.compressed}), cannot list with {Path(tool).name}"
                else:
                    why = _failed(result) if not result.ok else f"listed nothing for bundle {index}"
                return None, "\n".join(raw), why
            out.append(ids)
    return out, "\n".join(raw), ""


def _tools_for(env: Mapping[str, str] | None, llvm_bin: Path | str | None) -> Tools:
    environ = os.environ if env is None else env
    return find_tools(environ.get("ROCM_PATH"), environ.get("PATH", ""), llvm_bin)


def list_code_objects(
    path: Path, *, run: proc.Run = proc.capture, tools: Tools | None = None,
    env: Mapping[str, str] | None = None, llvm_bin: Path | str | None = None,
) -> CodeObjectListing:
    """List the GPU code objects in ``path`` with the first tool that gives a positive answer.

    Without ``tools``, they are looked up in ``llvm_bin``, ``env``'s ROCM_PATH and PATH
    (default: this process's environment); ``env`` is also what the tools run with.
    """
    path = Path(path)
    tools = tools if tools is not None else _tools_for(env, llvm_bin)
    try:
        sections, section = _read_fatbin(path)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return CodeObjectListing((), "none", "", note=f"cannot read {path}: {why}", readable=False)
    if sections is None:
        return CodeObjectListing((), "elf", "", note="not an ELF file", readable=False)
    if FATBIN_SECTION not in sections and OFFLOADING_SECTION not in sections:
        # Host-only code: conclusively no device code at all.
        return CodeObjectListing((), "elf", "", note=f"no {FATBIN_SECTION} section: no device code")
    bundles = _split_bundles(section)

    tried: list[str] = []

    def attempt(name: str, found: Found) -> CodeObjectListing | None:
        per_bundle, raw, why = found
        if per_bundle is not None and (not bundles or len(per_bundle) >= len(bundles)):
            return _listing(name, raw, per_bundle, note="; ".join(tried))
        tried.append(f"{Path(name).name}: {why}" if per_bundle is None
                     else f"{Path(name).name}: listed {len(per_bundle)} of {len(bundles)} bundles")
        return None

    for tool in tools.rocm_objdump:
        if (got := attempt(tool, _with_objdump(tool, path, run, env))) is not None:
            return got
    if bundles:
        for tool in tools.compiler_bundler:
            if (got := attempt(tool, _with_bundler(tool, bundles, run, env))) is not None:
                return got
    for tool in tools.roc_obj_ls:
        if (got := attempt(tool, _with_roc_obj_ls(tool, path, run, env))) is not None:
            return got
    if bundles:
        for tool in tools.bundler:
            if (got := attempt(tool, _with_bundler(tool, bundles, run, env))) is not None:
                return got
    for tool in tools.other_objdump:
        if (got := attempt(tool, _with_objdump(tool, path, run, env))) is not None:
            return got
    if tools.builtin and bundles:
        per = [_builtin_entries(b) for b in bundles]
        if all(ids is not None for ids in per):
            return _listing("builtin", "", [ids for ids in per if ids is not None], note="; ".join(tried))
        compressed = next(b.compressed for b in bundles if b.compressed)
        tried.append(f"builtin: compressed bundle ({compressed}), cannot list without a newer "
                     "clang-offload-bundler (ROCm's lib/llvm/bin)")
    if not tried:
        tried.append("no listing tool found (llvm-objdump, roc-obj-ls, clang-offload-bundler)")
    return CodeObjectListing((), "none", "", note="; ".join(tried), readable=False)


# --- verification -----------------------------------------------------------------


@dataclass(frozen=True)
class ArtifactCheck:
    """One artifact: what it carries and which requested archs it lacks."""

    path: Path             # absolute
    name: str              # relative to the source tree, for messages
    listing: CodeObjectListing
    missing: tuple[str, ...]   # requested (plain) archs without a code object in every bundle

    @property
    def archs(self) -> tuple[str, ...]:
        return self.listing.archs


@dataclass(frozen=True)
class ArtifactProblem:
    kind: str                      # "missing_arch" | "no_match" | "outside_source"
    text: str
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ArtifactReport:
    source: Path
    archs: tuple[str, ...]                     # requested, plain
    artifacts: tuple[ArtifactCheck, ...]
    unmatched: tuple[str, ...] = ()            # globs that matched no file
    rejected: tuple[str, ...] = ()             # globs or matches pointing outside the source tree

    @property
    def missing(self) -> tuple[str, ...]:
        """Requested archs missing from at least one artifact."""
        return tuple(a for a in self.archs if any(a in c.missing for c in self.artifacts))

    @property
    def unreadable(self) -> tuple[ArtifactCheck, ...]:
        """Artifacts no tool could list: not verified either way (a warning, not a failure)."""
        return tuple(c for c in self.artifacts if not c.listing.readable)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.unmatched and not self.rejected

    def problems(self) -> list[ArtifactProblem]:
        out: list[ArtifactProblem] = []
        for check in self.artifacts:
            for arch in check.missing:
                found = ", ".join(check.archs) or "none"
                if arch in check.listing.archs:   # present in some bundles only
                    n = sum(1 for b in check.listing.bundles if arch not in b)
                    text = (f"{check.name} has no code object for {arch} in {n} of "
                            f"{len(check.listing.bundles)} bundles (found: {found})")
                else:
                    text = f"{check.name} has no code object for {arch} (found: {found})"
                out.append(ArtifactProblem("missing_arch", text, {"arch": arch, "target": check.name}))
        out.extend(ArtifactProblem("no_match", f"no artifact matched {g}", {"target": g})
                   for g in self.unmatched)
        out.extend(ArtifactProblem("outside_source", f"artifact pattern {g} points outside the source tree",
                                   {"target": g}) for g in self.rejected)
        return out

    def problem_line(self) -> str | None:
        """The first problem as one line (for a Diagnosis text), None when verification passed."""
        problems = self.problems()
        return problems[0].text if problems else None

    def problem_fields(self) -> dict[str, str]:
        """Fields for the Diagnosis: {"arch", "target"} for a missing arch, {"target"} otherwise."""
        problems = self.problems()
        return dict(problems[0].fields) if problems else {}

    def describe(self) -> str:
        """One line for logs and events: what was found where, and what is wrong."""
        parts = []
        for check in self.artifacts:
            if not check.listing.readable:
                parts.append(f"{check.name}: not verified ({check.listing.note})")
                continue
            found = ", ".join(check.archs) or "no code objects"
            missing = f", missing {', '.join(check.missing)}" if check.missing else ""
            parts.append(f"{check.name}: {found} ({Path(check.listing.tool).name}){missing}")
        parts += [f"no artifact matched {g}" for g in self.unmatched]
        parts += [f"{g} is outside the source tree" for g in self.rejected]
        verdict = "ok" if self.ok else "FAILED"
        wanted = ", ".join(self.archs) or "nothing"
        return f"{verdict}: wanted {wanted}; " + ("; ".join(parts) or "no artifacts")


def _matches(source: Path, pattern: str) -> Iterator[Path] | None:
    """Files matching a glob relative to the source tree; None when the pattern escapes it."""
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        return None
    return (p for p in sorted(source.glob(pattern)) if p.is_file())


@dataclass(frozen=True, kw_only=True)
class Lister:
    """How code objects are listed, as in list_code_objects: through ``run``, with ``tools`` (None: looked
    up in ``llvm_bin``, the ROCm install's LLVM bin dir, then ``env``'s ROCM_PATH and PATH), run with
    ``env`` (the build's environment; default this process's)."""

    run: proc.Run = proc.capture
    tools: Tools | None = None
    env: Mapping[str, str] | None = None
    llvm_bin: Path | str | None = None


def verify_artifacts(source: Path, globs: Sequence[str], targets: Targets, lister: Lister = Lister()) -> ArtifactReport:
    """Check that every artifact matched by ``globs`` (relative to ``source``) has code for every
    target's processor (a code object for ``gfx90a`` runs on ``gfx90a:xnack+`` too)."""
    run, tools, env, llvm_bin = lister.run, lister.tools, lister.env, lister.llvm_bin
    source = Path(source).resolve()
    wanted = targets.processors
    tools = tools if tools is not None else _tools_for(env, llvm_bin)
    checks: list[ArtifactCheck] = []
    unmatched: list[str] = []
    rejected: list[str] = []
    seen: set[Path] = set()
    for pattern in globs:
        matches = _matches(source, pattern)
        if matches is None:
            rejected.append(pattern)
            continue
        any_match = False
        for match in matches:
            real = match.resolve()
            if not real.is_relative_to(source):
                # A symlink out of the tree: not this build's artifact.
                rejected.append(str(match.relative_to(source)))
                continue
            any_match = True
            if real in seen:
                continue
            seen.add(real)
            listing = list_code_objects(match, run=run, tools=tools, env=env)
            missing = () if not listing.readable else tuple(a for a in wanted if not listing.complete(a))
            checks.append(ArtifactCheck(match, str(match.relative_to(source)), listing, missing))
        if not any_match and pattern not in rejected:
            unmatched.append(pattern)
    return ArtifactReport(source, wanted, tuple(checks), tuple(unmatched), tuple(rejected))
