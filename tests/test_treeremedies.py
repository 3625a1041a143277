"""sync_submodules and narrow_archs: a real git superproject with file:// remotes; end to end through the
command in this process (tests/inprocess.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from inprocess import isolate, run_cli

from rocmbuild.diagnosis.classifier import Diagnosis
from rocmbuild.host import arch as archmod
from rocmbuild.host.arch import Targets
from rocmbuild.loop.effects import RunCommands, carry_out
from rocmbuild.loop.remedies import REMEDIES, RemedyContext
from rocmbuild.loop.treeremedies import narrower_archs
from rocmbuild.process.command import CommandResult, capture
from tests.planfactory import RECIPE, make_plan

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid",
           # git >= 2.38.1 refuses file:// submodules unless allowed (CVE-2022-39253).
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow", "GIT_CONFIG_VALUE_0": "always"}


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "HEAD")


def stale_submodule_tree(tmp: Path) -> tuple[Path, str]:
    """A clone whose submodule now points at a commit only the submodule's *new* URL has.

    Upstream moved the submodule (new URL in .gitmodules) and advanced it there; the clone's
    .git/config still names the old URL, so `git submodule update` fails until `git submodule sync`.
    """
    old = tmp / "lib-old"
    old.mkdir()
    git(old, "init", "-q", "-b", "main")
    commit(old, "a.txt", "one\n")
    new = tmp / "lib-new"
    git(tmp, "clone", "-q", str(old), str(new))
    sha = commit(new, "b.txt", "two\n")              # exists only on the new remote
    upstream = tmp / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "submodule", "add", "-q", f"file://{old}", "third_party/lib")
    git(upstream, "commit", "-q", "-m", "add lib")
    clone = tmp / "src"
    git(tmp, "clone", "-q", "--recurse-submodules", str(upstream), str(clone))
    git(upstream, "config", "-f", ".gitmodules", "submodule.third_party/lib.url", f"file://{new}")
    git(upstream / "third_party" / "lib", "fetch", "-q", f"file://{new}", "main")
    git(upstream / "third_party" / "lib", "checkout", "-q", sha)
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "move lib and advance it")
    git(clone, "pull", "-q", "--no-rebase", "--no-recurse-submodules")
    return clone, sha


def diagnosis(**fields: str) -> Diagnosis:
    return Diagnosis(category="stale_build", signature="submodule-ref-missing", line=1, text="", fields=fields,
                     retryable=True)


def test_sync_submodules_fetches_the_commit_from_the_moved_url(tmp_path: Path) -> None:
    clone, sha = stale_submodule_tree(tmp_path)
    failed = subprocess.run(["git", "submodule", "update", "--init", "--recursive"], cwd=clone,
                            env={**os.environ, **GIT_ENV}, capture_output=True, text=True, timeout=60)
    assert failed.returncode != 0 and sha in failed.stderr       # the shape the signature matches
    plan = make_plan(clone, caller={**os.environ, **GIT_ENV})
    decided = REMEDIES["sync_submodules"](plan, diagnosis(path="third_party/lib"), RemedyContext())
    assert git(clone / "third_party" / "lib", "rev-parse", "HEAD") != sha, "deciding runs nothing"
    result = carry_out(decided, source=plan.source, run=capture)
    assert result.applied, result.detail
    assert git(clone / "third_party" / "lib", "rev-parse", "HEAD") == sha
    assert (clone / "third_party" / "lib" / "b.txt").read_text() == "two\n"


def test_sync_submodules_outside_a_git_tree_spends_nothing(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    result = REMEDIES["sync_submodules"](plan, diagnosis(), RemedyContext())
    assert not result.applied and "not a git checkout" in result.detail


def test_a_sync_command_that_fails_makes_the_remedy_not_apply(tmp_path: Path) -> None:
    """Whether sync_submodules applied depends on its effect: git missing or failing = not applied."""
    (tmp_path / ".git").mkdir()
    plan = make_plan(tmp_path)
    decided = REMEDIES["sync_submodules"](plan, diagnosis(), RemedyContext())
    assert decided.applied and isinstance(decided.effects[0], RunCommands)
    ran: list[list[str]] = []

    def failing_git(argv: list[str], **_: object) -> CommandResult:
        ran.append(list(argv))
        return CommandResult(1, "fatal: remote error: upload-pack: not our ref 0123abcd")

    failed = carry_out(decided, source=plan.source, run=failing_git)
    assert not failed.applied and "not our ref" in failed.detail and failed.warning and "re-clone" in failed.warning
    assert len(ran) == 1, "the first failing command ends them"
    missing = carry_out(decided, source=plan.source,
                        run=lambda argv, **_: CommandResult(None, "git: not found", missing=True))
    assert not missing.applied and missing.detail == "git is not installed"


@pytest.mark.integration
def test_stale_submodule_is_cured_end_to_end(tmp_path: Path, probes_once: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build's own `git submodule update` fails; rocmbuild syncs the URLs and the retry succeeds."""
    clone, sha = stale_submodule_tree(tmp_path)
    recipe = tmp_path / "withsub.toml"
    recipe.write_text('name = "withsub"\n[steps]\n'
                      'build = ["git submodule update --init --recursive && test -f third_party/lib/b.txt"]\n')
    isolate(monkeypatch, tmp_path, **GIT_ENV)
    proc = run_cli(monkeypatch, ["build", str(recipe), "--source", str(clone), "--run-dir", str(tmp_path / "run"),
                                 "--arch", "gfx90a", "--skip-preflight", "--no-cache", "--json"], tmp_path / "run")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    first = summary["attempts"][0]
    assert first["diagnosis"]["signature"] == "submodule-ref-missing" and first["remedies"] == ["sync_submodules"]
    assert len(summary["attempts"]) == 2 and summary["attempts"][1]["diagnosis"] is None
    # Provenance (item 5): each attempt records the submodule SHAs it built with; the sync moved one.
    before, after = (a["provenance"]["submodules"]["third_party/lib"] for a in summary["attempts"])
    assert after == sha and before != sha


# --- narrow_archs ---------------------------------------------------------------------------

@pytest.mark.parametrize(("requested", "local", "expected"), [
    (("gfx90a", "gfx942", "gfx1100"), ("gfx942",), ("gfx942",)),
    (("gfx90a", "gfx942"), ("gfx942", "gfx90a"), None),         # the local GPUs need them all
    (("gfx90a", "gfx942"), (), None),                          # no GPU here
    (("gfx90a", "gfx942"), ("gfx1030",), None),                # nothing requested is local
    (("gfx942",), ("gfx942",), None),                          # one arch already
    (("gfx90a", "gfx942"), ("gfx942:sramecc+:xnack-",), ("gfx942",)),
])
def test_narrower_archs(requested: tuple[str, ...], local: tuple[str, ...], expected: tuple[str, ...] | None) -> None:
    narrowed = narrower_archs(Targets.parse(",".join(requested)), local)
    assert (narrowed.names if narrowed is not None else None) == expected


def write_node(nodes: Path, name: str, version: int) -> None:
    (nodes / name).mkdir(parents=True)
    (nodes / name / "properties").write_text(f"cpu_cores_count 0\ngfx_target_version {version}\n")


def test_narrow_archs_uses_the_gpus_sysfs_reports(tmp_path: Path) -> None:
    """A GPU can't be had here: the KFD topology is written as the kernel would (sysfs), the rest is real."""
    nodes = tmp_path / "nodes"
    write_node(nodes, "0", 0)
    write_node(nodes, "1", 90402)
    recipe = RECIPE + '[arch]\nvariables = ["PYTORCH_ROCM_ARCH"]\nseparator = ";"\n'
    plan = replace(make_plan(tmp_path, recipe_text=recipe), targets=Targets.parse("gfx90a,gfx942"))
    (tmp_path / "build").mkdir(exist_ok=True)
    (tmp_path / "build" / "CMakeCache.txt").write_text("PYTORCH_ROCM_ARCH=gfx90a;gfx942\n")
    ctx = RemedyContext(detect_archs=lambda: archmod.detect_local_archs(sysfs_root=nodes, environ={}))
    result = carry_out(REMEDIES["narrow_archs"](plan, diagnosis(), ctx), source=plan.source, run=capture)
    assert result.applied, result.detail
    assert result.plan.archs == ("gfx942",) and result.plan.env["PYTORCH_ROCM_ARCH"] == "gfx942"
    assert "build/CMakeCache.txt" in result.removed
    none = RemedyContext(detect_archs=lambda: None)
    stop = REMEDIES["narrow_archs"](plan, diagnosis(), none)
    assert not stop.applied and "no local GPU" in stop.detail and stop.warning and "--arch" in stop.warning


def test_relocation_overflow_without_a_narrower_list_stops_with_the_advice(
        tmp_path: Path, probes_once: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU on this host: nothing narrower, so one attempt, no retry, and the advice to build fewer targets."""
    script = tmp_path / "link.sh"
    script.write_text('#!/bin/sh\necho "archs: $PYTORCH_ROCM_ARCH"\n'
                      'echo "ld.lld: error: libbig.so: relocation R_X86_64_PC32 out of range: 2165245440 is not '
                      'in [-2147483648, 2147483647]"\nexit 1\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    recipe = tmp_path / "big.toml"
    recipe.write_text(f'name = "big"\n[arch]\nvariables = ["PYTORCH_ROCM_ARCH"]\nseparator = ";"\n'
                      f'[steps]\nbuild = ["{script}"]\n')
    isolate(monkeypatch, tmp_path)
    (tmp_path / "src").mkdir()
    proc = run_cli(monkeypatch, ["build", str(recipe), "--source", str(tmp_path / "src"),
                                 "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a,gfx942", "--skip-preflight",
                                 "--no-cache", "--json"], tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    # unsupported_arch, and its one remedy had nothing to do: recognised, no remedy can help (exit 4)
    assert proc.returncode == 4, proc.stderr
    assert len(summary["attempts"]) == 1
    assert summary["attempts"][0]["diagnosis"]["signature"] == "relocation-overflow"
    assert "nothing to do for narrow_archs" in summary["stop_reason"]
    assert "--arch" in summary["todo"]


def test_relocation_overflow_is_cured_by_building_for_the_local_gpu(
        tmp_path: Path, probes_once: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a GPU reported (a GPU can't be had here: `amdgpu-arch` on PATH says gfx942, as it would on an
    MI300X), the second attempt builds gfx942 only and links."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "amdgpu-arch").write_text("#!/bin/sh\necho gfx942\n")
    (tools / "amdgpu-arch").chmod(0o755)
    script = tmp_path / "link.sh"
    script.write_text('#!/bin/sh\necho "archs: $PYTORCH_ROCM_ARCH"\ncase "$PYTORCH_ROCM_ARCH" in *";"*)\n'
                      'echo "/usr/bin/ld: libtorch_hip.so: relocation truncated to fit: R_X86_64_PC32 against '
                      '\\`.bss\'"\nexit 1;;\nesac\necho linked\n')
    script.chmod(0o755)
    recipe = tmp_path / "big.toml"
    recipe.write_text(f'name = "big"\n[arch]\nvariables = ["PYTORCH_ROCM_ARCH"]\nseparator = ";"\n'
                      f'[steps]\nbuild = ["{script}"]\n')
    isolate(monkeypatch, tmp_path)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    (tmp_path / "src").mkdir()
    proc = run_cli(monkeypatch, ["build", str(recipe), "--source", str(tmp_path / "src"),
                                 "--run-dir", str(tmp_path / "run"), "--arch", "gfx90a,gfx942", "--skip-preflight",
                                 "--no-cache", "--json"], tmp_path / "run")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    first, second = summary["attempts"]
    assert first["diagnosis"]["signature"] == "relocation-overflow" and first["remedies"] == ["narrow_archs"]
    assert first["env"]["PYTORCH_ROCM_ARCH"] == "gfx90a;gfx942" and second["env"]["PYTORCH_ROCM_ARCH"] == "gfx942"
