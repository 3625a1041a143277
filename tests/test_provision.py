"""Fleet provisioning: up_to_date re-runs, verified wheels, requires from a wheelhouse.

The example is built for real with hipcc (its first attempt fails on purpose: missing -lhipvecmath),
its wheel is made by a real `pip wheel` in a real venv, unpacked and verified, then installed with
`pip install --no-index --find-links` into another fresh venv and imported there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from wheels import build_wheel

from rocmbuild.provisioning import fingerprint, provision, treehash

ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "hipvec"


def env_for(tmp: Path, python_bin: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMBUILD_")}
    bin_dir = python_bin or Path(sys.executable).parent
    env.update(PATH=f"{bin_dir}:{env.get('PATH', '')}", HIP_PLATFORM="amd",
               XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"))
    for var in ("LIBRARY_PATH", "LD_LIBRARY_PATH", "HIPVEC_ARCHS", "VIRTUAL_ENV"):
        env.pop(var, None)
    return env


def rocmbuild(tmp: Path, *args: str, python_bin: Path | None = None) -> tuple[int, str, dict[str, Any], float]:
    started = time.monotonic()
    proc = subprocess.run([ROCMBUILD, *args, "--json"], env=env_for(tmp, python_bin), capture_output=True,
                          text=True, timeout=600)
    elapsed = time.monotonic() - started
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    summary = json.loads(lines[-1]) if lines else {}
    return proc.returncode, proc.stderr, summary, elapsed


@pytest.fixture
def source(tmp_path: Path) -> Path:
    tree = tmp_path / "hipvec"
    shutil.copytree(EXAMPLE, tree, ignore=shutil.ignore_patterns("build", "*.so", "lib", "__pycache__"))
    return tree


def fresh_venv(path: Path, *packages: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    if packages:
        subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "-q", *packages], check=True,
                       timeout=300, capture_output=True)
    return path / "bin"


# --- pure parts -------------------------------------------------------------------

def test_differences_names_the_parts_that_changed() -> None:
    current = fingerprint.Fingerprint({"arch": "gfx90a", "recipe": "r1", "source": "tree:a"})
    assert fingerprint.differences({"arch": "gfx908", "recipe": "r1", "source": "tree:a"}, current) == ["arch"]
    assert fingerprint.differences(dict(current.parts), current) == []
    assert fingerprint.differences(None, current) == ["no earlier success recorded for this tree"]


def test_tree_digest_leaves_out_only_the_clean_paths_and_vcs_metadata(tmp_path: Path) -> None:
    def digest() -> str:
        return treehash.snapshot(tmp_path, ("out", "vendor/lib")).digest

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.hip").write_text("kernel v1")
    (tmp_path / ".git").mkdir()
    (tmp_path / "vendor").mkdir()
    before = digest()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x.txt").write_text("generated")
    (tmp_path / "vendor" / "lib").mkdir(parents=True)
    (tmp_path / "vendor" / "lib" / "libm.so.1").write_text("generated")
    (tmp_path / ".git" / "index").write_text("vcs")
    assert digest() == before
    for rel in ("src/k.o", "src/build/gen.sh", "dist/x", "vendor/libfoo.a", "src/out/x.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("an input too")
        assert digest() != before, f"{rel} is an input: only the root's clean paths are left out"
        before = digest()
    (tmp_path / "src" / "k.hip").write_text("kernel v2")
    assert digest() != before


def test_wheel_hint_names_the_missing_wheel_package() -> None:
    assert "pip install wheel" in provision.wheel_hint("error: invalid command 'bdist_wheel'\n")
    assert provision.wheel_hint("error: something else") == ""


# --- item 1: up to date in seconds ------------------------------------------------

@pytest.mark.hip
@pytest.mark.timeout(360)  # four real builds, the --force one from a clean tree
@pytest.mark.integration
def test_second_run_is_up_to_date_and_arch_change_or_force_rebuilds(tmp_path: Path, source: Path) -> None:
    common = ["example", "--source", str(source)]
    code, err, first, _ = rocmbuild(tmp_path, *common, "--arch", "gfx90a", "--run-dir", str(tmp_path / "r1"))
    assert code == 0, err
    assert first["outcome"] == "succeeded" and len(first["attempts"]) == 2  # the example's deliberate failure
    assert first["up_to_date"]["up_to_date"] is False

    code, err, second, elapsed = rocmbuild(tmp_path, *common, "--arch", "gfx90a", "--run-dir", str(tmp_path / "r2"))
    assert code == 0, err
    assert second["outcome"] == "up_to_date" and second["exit_code"] == 0
    assert second["attempts"] == []
    compared = second["up_to_date"]
    assert compared["differs"] == [] and compared["compared"]["arch"] == "gfx90a"
    assert set(compared["compared"]) >= {"recipe", "source", "arch", "rocm", "hip_compiler", "env"}
    assert "as the last success left them" in compared["artifacts"] and "verify passed again" in compared["artifacts"]
    assert elapsed < 10, f"up_to_date took {elapsed:.1f}s"
    assert "up_to_date" in err and "compared:" in err
    assert not list((tmp_path / "r2").glob("attempt-*.log"))

    code, err, forced, _ = rocmbuild(tmp_path, *common, "--arch", "gfx90a", "--force", "--run-dir",
                                     str(tmp_path / "r3"))
    assert code == 0, err
    assert forced["outcome"] == "succeeded" and forced["attempts"]
    assert forced["up_to_date"]["differs"] == ["--force"]

    code, err, other, _ = rocmbuild(tmp_path, *common, "--arch", "gfx908", "--run-dir", str(tmp_path / "r4"))
    assert code == 0, err
    assert other["outcome"] == "succeeded" and other["attempts"]
    assert other["up_to_date"]["differs"] == ["arch"]


@pytest.mark.hip
@pytest.mark.integration
def test_changed_source_or_missing_artifacts_rebuild(tmp_path: Path, source: Path) -> None:
    common = ["example", "--source", str(source), "--arch", "gfx90a"]
    code, err, _, _ = rocmbuild(tmp_path, *common, "--run-dir", str(tmp_path / "r1"))
    assert code == 0, err
    kernel = source / "src" / "hipvec_kernels.hip"
    kernel.write_text(kernel.read_text() + "\n// changed\n")
    code, err, changed, _ = rocmbuild(tmp_path, *common, "--run-dir", str(tmp_path / "r2"))
    assert code == 0, err
    assert changed["outcome"] == "succeeded" and changed["up_to_date"]["differs"] == ["source"]
    for built in (source / "hipvec").glob("_hipvec*.so"):
        built.unlink()
    code, err, gone, _ = rocmbuild(tmp_path, *common, "--run-dir", str(tmp_path / "r3"))
    assert code == 0, err
    assert gone["outcome"] == "succeeded" and gone["up_to_date"]["differs"] == ["outputs"]


# --- item 2: verified wheels for other nodes -------------------------------------

@pytest.mark.hip
@pytest.mark.integration
def test_wheel_dir_leaves_a_verified_wheel_that_installs_and_imports_elsewhere(tmp_path: Path,
                                                                               source: Path) -> None:
    build_bin = fresh_venv(tmp_path / "buildenv", "setuptools", "wheel")
    wheels = tmp_path / "wheelhouse"
    code, err, summary, _ = rocmbuild(tmp_path, "example", "--source", str(source), "--arch", "gfx90a,gfx908",
                                      "--wheel-dir", str(wheels), "--run-dir", str(tmp_path / "r1"),
                                      python_bin=build_bin)
    assert code == 0, err
    assert summary["outcome"] == "succeeded" and summary["wheels"]["ok"] is True
    [wheel] = wheels.glob("hipvec-*.whl")
    manifest = json.loads((wheels / "manifest.json").read_text())
    entry = manifest["wheels"][wheel.name]
    assert entry["recipe"] == "example" and entry["arch"] == ["gfx90a", "gfx908"]
    assert entry["rocm"]["version"] and "hipcc" in entry["compiler"]
    assert entry["fingerprint"] == summary["up_to_date"]["digest"] or len(entry["fingerprint"]) == 64
    import hashlib

    assert entry["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    names = zipfile.ZipFile(wheel).namelist()
    assert "hipvec/libhipvecmath.so.1" in names and any(n.startswith("hipvec/_hipvec") for n in names)
    events = [json.loads(line) for line in (tmp_path / "r1" / "events.jsonl").read_text().splitlines()]
    verified = [e for e in events if e["event"] == "wheel.verified"]
    assert verified and verified[0]["ok"] and "gfx90a" in verified[0]["detail"] and "gfx908" in verified[0]["detail"]

    node_bin = fresh_venv(tmp_path / "node")
    clean_env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LIBRARY_PATH", "PYTHONPATH")}
    subprocess.run([str(node_bin / "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                    str(wheels), "hipvec"], check=True, timeout=120, env=clean_env, capture_output=True)
    probe = subprocess.run([str(node_bin / "python"), "-c",
                            "import hipvec; print(';'.join(hipvec.built_archs()), hipvec.math_version())"],
                           cwd=tmp_path, env=clean_env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split()[0] == "gfx90a;gfx908"

    # The same command again: up to date, and the wheel already published is not rebuilt.
    mtime = wheel.stat().st_mtime_ns
    code, err, again, _ = rocmbuild(tmp_path, "example", "--source", str(source), "--arch", "gfx90a,gfx908",
                                    "--wheel-dir", str(wheels), "--run-dir", str(tmp_path / "r2"),
                                    python_bin=build_bin)
    assert code == 0, err
    assert again["outcome"] == "up_to_date" and wheel.stat().st_mtime_ns == mtime


def test_wheel_without_code_objects_for_the_arch_does_not_verify(tmp_path: Path) -> None:
    """A wheel whose extension is a real host-only ELF (no offload bundle) is refused, as is a wheel
    where the recipe's artifact is missing altogether."""
    import sysconfig

    from tests.planfactory import RECIPE, make_plan

    host_only = next(Path(sysconfig.get_paths()["platlib"]).parent.parent.glob("lib-dynload/_json*.so"), None) \
        or next(Path(sys.base_prefix).glob("lib/python3*/lib-dynload/_json*.so"))
    plan = make_plan(tmp_path, recipe_text=RECIPE + '[verify]\nartifacts = ["demo/_ext*.so"]\n')
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(host_only, "demo/_ext.so")
    ok, detail = provision.verify_wheel(wheel, plan)
    assert not ok and "gfx90a" in detail
    empty = tmp_path / "empty-1.0-py3-none-any.whl"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("demo/__init__.py", "")
    ok, detail = provision.verify_wheel(empty, plan)
    assert not ok and "demo/_ext*.so" in detail


# --- item 3: requires from a wheel index or wheelhouse ----------------------------

def stand_in_torch(wheelhouse: Path, hip: str | None, version: str) -> Path:
    """A real wheel named torch (pure Python) whose torch.version.hip says which ROCm it was built for."""
    wheelhouse.mkdir(parents=True, exist_ok=True)
    return build_wheel(wheelhouse, "torch", version, {
        "torch/__init__.py": f"from torch import version\n__version__ = {version!r}\n",
        "torch/version.py": f"__version__ = {version!r}\nhip = {hip!r}\ncuda = None\n",
    })


def host_rocm() -> str:
    from rocmbuild.host.facts import gather_host

    facts = gather_host(None, dict(os.environ))
    assert facts.rocm is not None and facts.rocm.version, "this test needs a ROCm/HIP install with a version"
    return str(facts.rocm.version)


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv without torch, used as the build's interpreter (first python3 on PATH)."""
    return fresh_venv(tmp_path_factory.mktemp("bare") / "venv")


@pytest.mark.integration
def test_requires_from_lets_the_vllm_plan_past_its_torch_requirement(tmp_path: Path, bare_venv: Path) -> None:
    rocm = host_rocm()
    wheelhouse = tmp_path / "wheelhouse"
    stand_in_torch(wheelhouse, f"{rocm}.41134-0", f"2.5.1+rocm{rocm}")
    args = ["plan", "vllm", "--arch", "gfx90a", "--source", str(tmp_path)]
    code, err, _, _ = rocmbuild(tmp_path, *args, python_bin=bare_venv)
    assert code == 2 and "requires 'torch'" in err  # without it: refused, as before

    code, err, data, _ = rocmbuild(tmp_path, *args, "--requires-from", str(wheelhouse), python_bin=bare_venv)
    assert code != 2, err
    assert "requires 'torch'" not in err and "would install torch 2.5.1+rocm" in err
    [item] = data["requires_from"]
    assert item["package"] == "torch" and item["installed"] is False and item["hip"] == rocm
    torch_checks = [c for c in data["preflight"] if c["check"] == "torch (ROCm)"]
    assert torch_checks and all(c["ok"] is not False or "checked again" in c["detail"] for c in torch_checks)
    # a plan installs nothing
    probe = subprocess.run([str(bare_venv / "python"), "-c", "import torch"], capture_output=True)
    assert probe.returncode != 0


def test_requires_from_refuses_a_torch_for_another_rocm_major(tmp_path: Path, bare_venv: Path) -> None:
    other = str(int(host_rocm().split(".")[0]) + 1) + ".2"
    wheelhouse = tmp_path / "wheelhouse"
    stand_in_torch(wheelhouse, f"{other}.41134-0", f"2.5.1+rocm{other}")
    code, err, data, _ = rocmbuild(tmp_path, "plan", "vllm", "--arch", "gfx90a", "--source", str(tmp_path),
                                   "--requires-from", str(wheelhouse), python_bin=bare_venv)
    assert code == 2, err
    assert "major versions differ" in err and data["exit_code"] == 2 and "--requires-from" in data["todo"]


def test_requires_from_a_missing_directory_is_a_usage_error(tmp_path: Path, bare_venv: Path) -> None:
    code, err, data, _ = rocmbuild(tmp_path, "plan", "vllm", "--arch", "gfx90a", "--source", str(tmp_path),
                                   "--requires-from", str(tmp_path / "nope"), python_bin=bare_venv)
    assert code == 2 and "no such directory" in err and "Traceback" not in err
    assert data["exit_code"] == 2 and "--requires-from" in data["todo"]


NEEDS_TORCH = """
name = "needs-torch"
requires = ["torch"]
[steps]
build = ["python3 -c 'import torch; print(\\"built against torch\\", torch.__version__, \\"hip\\", torch.version.hip)'"]
"""


@pytest.mark.hip
@pytest.mark.integration
def test_build_installs_torch_from_the_wheelhouse_then_checks_it(tmp_path: Path) -> None:
    rocm = host_rocm()
    build_bin = fresh_venv(tmp_path / "buildenv")
    recipe = tmp_path / "needs-torch.toml"
    recipe.write_text(NEEDS_TORCH)
    (tmp_path / "src").mkdir()
    cpu = tmp_path / "cpu"
    stand_in_torch(cpu, None, "2.5.1+cpu")
    args = [str(recipe), "--arch", "gfx90a", "--source", str(tmp_path / "src"), "--no-cache"]
    code, err, _, _ = rocmbuild(tmp_path, *args, "--requires-from", str(cpu), "--run-dir", str(tmp_path / "r0"),
                                   python_bin=build_bin)
    assert code == 2 and "not a ROCm build" in err, err
    probe = subprocess.run([str(build_bin / "python"), "-c", "import torch"], capture_output=True)
    assert probe.returncode != 0, "the refused CPU torch must not stay installed"

    rocm_wheels = tmp_path / "rocm"
    stand_in_torch(rocm_wheels, f"{rocm}.41134-0", f"2.5.1+rocm{rocm}")
    code, err, summary, _ = rocmbuild(tmp_path, *args, "--requires-from", str(rocm_wheels), "--run-dir",
                                      str(tmp_path / "r1"), python_bin=build_bin)
    assert code == 0, err
    assert f"installed torch 2.5.1+rocm{rocm} (HIP {rocm}.41134-0)" in err
    assert summary["outcome"] == "succeeded"
    [item] = summary["requires_from"]
    assert item["installed"] is True and item["hip"] == f"{rocm}.41134-0" and item["from"] == str(rocm_wheels)
    log = (tmp_path / "r1" / "attempt-1.log").read_text()
    assert f"built against torch 2.5.1+rocm{rocm} hip {rocm}.41134-0" in log


# --- item 4: doctor reports the fleet settings ------------------------------------

@pytest.mark.integration
def test_doctor_reports_wheel_dir_requires_from_and_cache_remote(tmp_path: Path) -> None:
    wheelhouse = tmp_path / "wheelhouse"
    stand_in_torch(wheelhouse, "6.2.41134-0", "2.5.1+rocm6.2")
    env = {**env_for(tmp_path), "ROCMBUILD_WHEEL_DIR": str(tmp_path / "wheels")}
    proc = subprocess.run([ROCMBUILD, "doctor", "--json", "--requires-from", str(wheelhouse),
                           "--cache-remote", "redis://127.0.0.1:1"], env=env, capture_output=True, text=True,
                          timeout=120)
    report = json.loads(proc.stdout)
    fleet = report["fleet"]
    assert fleet["wheel_dir"]["path"] == str(tmp_path / "wheels")
    assert fleet["wheel_dir"]["origin"] == "$ROCMBUILD_WHEEL_DIR" and fleet["wheel_dir"]["writable"] is True
    assert fleet["requires_from"]["origin"] == "--requires-from"
    assert fleet["requires_from"]["wheels"] == ["torch-2.5.1+rocm6.2-py3-none-any.whl"]
    assert fleet["cache_remote"] == "redis://127.0.0.1:1"
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["wheel dir"]["status"] == "ok" and checks["requires-from"]["status"] == "ok"

    proc = subprocess.run([ROCMBUILD, "doctor", "--requires-from", str(tmp_path / "nope")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "requires from: " in proc.stdout and "wheel dir: " + str(tmp_path / "wheels") in proc.stdout
    assert "shared compiler cache: none" in proc.stdout
    proc = subprocess.run([ROCMBUILD, "doctor", "--json", "--requires-from", str(tmp_path / "nope")], env=env,
                          capture_output=True, text=True, timeout=120)
    failed = [c for c in json.loads(proc.stdout)["checks"] if c["status"] == "fail"]
    assert proc.returncode == 1 and [c["name"] for c in failed] == ["requires-from"]
    assert "no such directory" in failed[0]["detail"] and failed[0]["todo"]


def test_recipe_wheel_step_is_validated_and_defaults_to_pip_wheel(tmp_path: Path) -> None:
    from rocmbuild.errors import RecipeError
    from rocmbuild.planning.recipe import parse_recipe
    from tests.planfactory import RECIPE, make_plan

    plan = make_plan(tmp_path, python="/opt/my venv/bin/python3")
    [default] = provision.wheel_commands(plan)
    assert default == "'/opt/my venv/bin/python3' -m pip wheel --no-build-isolation --no-deps -w \"$WHEEL_DIR\" ."
    custom = RECIPE.replace('build = ["make"]', 'build = ["make"]\nwheel = ["make wheel OUT=$WHEEL_DIR"]')
    assert provision.wheel_commands(make_plan(tmp_path, recipe_text=custom)) == ("make wheel OUT=$WHEEL_DIR",)
    bad = RECIPE.replace('build = ["make"]', 'build = ["make"]\nwheel = "make wheel"')
    with pytest.raises(RecipeError, match=r"steps\.wheel"):
        parse_recipe(bad, tmp_path / "bad.toml")


@pytest.mark.integration
def test_requires_from_credentials_never_reach_the_console(tmp_path: Path, bare_venv: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmbuild.provisioning.requirements import shown

    assert shown("https://bot:s3cret@pypi.example/simple") == "https://<redacted>@pypi.example/simple"
    assert shown("https://pypi.example/simple?token=s3cret") == "https://pypi.example/simple?token=<redacted>"
    assert shown("/srv/wheelhouse") == "/srv/wheelhouse"
    monkeypatch.setenv("PIP_RETRIES", "0")  # nothing listens there: fail fast
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    code, err, data, _ = rocmbuild(tmp_path, "plan", "vllm", "--arch", "gfx90a", "--source", str(tmp_path),
                                   "--requires-from", "http://bot:s3cret@127.0.0.1:9/simple", python_bin=bare_venv)
    assert code == 2 and "could not resolve torch" in err, err
    assert "s3cret" not in err and "s3cret" not in json.dumps(data) and "<redacted>@127.0.0.1" in err
