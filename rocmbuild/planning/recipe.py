"""Recipes: the frozen dataclasses and the strict TOML loader.

A recipe says how to build one project (docs/reference-recipe.md).  The
loader checks every key against a schema: an unknown key, a wrong type or a
missing required key is a RecipeError that names the file and the key path.
Bundled recipes ship inside the package; user recipes in
``$XDG_CONFIG_HOME/rocmbuild/recipes/*.toml`` add to or override them by name.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmbuild import paths
from rocmbuild.errors import RecipeError
from rocmbuild.host.trust import check_trusted


@dataclass(frozen=True)
class SourceSpec:
    """Where the source tree comes from when --source is not given."""

    git: str | None = None
    ref: str | None = None
    # A directory (relative to the recipe file) copied into the workspace on
    # first use; used by the bundled example, which ships its own source.
    path: str | None = None


@dataclass(frozen=True)
class ArchSpec:
    """Which variables receive the GPU target list, and in which form."""

    variables: tuple[str, ...] = ("PYTORCH_ROCM_ARCH",)
    separator: str = ";"
    plain: bool = True


@dataclass(frozen=True)
class Steps:
    """Shell command strings, each run with cwd = the source tree."""

    build: tuple[str, ...]
    prepare: tuple[str, ...] = ()
    verify: tuple[str, ...] = ()
    # --wheel-dir only: commands that write the tree's wheel(s) into $WHEEL_DIR; empty =
    # the default `python -m pip wheel --no-build-isolation --no-deps -w "$WHEEL_DIR" .`.
    wheel: tuple[str, ...] = ()


@dataclass(frozen=True)
class Resources:
    """What one build job needs; used to size MAX_JOBS and for preflight."""

    memory_per_job_gb: float = 4.0
    min_free_disk_gb: float = 0.0
    # Job knobs that reduce_jobs halves along with MAX_JOBS.
    job_variables: tuple[str, ...] = ("MAX_JOBS",)


@dataclass(frozen=True)
class Preflight:
    """What must exist before the first attempt (checked by preflight)."""

    libraries: tuple[str, ...] = ()
    python_modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recipe:
    """One buildable project."""

    name: str
    steps: Steps
    path: Path
    description: str = ""
    packages: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    source: SourceSpec = field(default_factory=SourceSpec)
    env: Mapping[str, str] = field(default_factory=dict)
    arch: ArchSpec = field(default_factory=ArchSpec)
    clean_paths: tuple[str, ...] = ()
    resources: Resources = field(default_factory=Resources)
    verify_artifacts: tuple[str, ...] = ()
    preflight: Preflight = field(default_factory=Preflight)
    bundled: bool = False

    @property
    def source_path(self) -> Path | None:
        """The bundled source directory of a recipe with ``[source] path``."""
        if self.source.path is None:
            return None
        return (self.path.parent / self.source.path).resolve()


# --- schema -----------------------------------------------------------------
# Each table maps key -> (type, required).  "list[str]" and "dict[str,str]"
# are checked element-wise.

_STR, _BOOL, _NUM, _LIST, _DICT = "string", "boolean", "number", "list of strings", "table of strings"

_SCHEMA: dict[str, dict[str, tuple[str, bool]]] = {
    "": {
        "name": (_STR, True),
        "description": (_STR, False),
        "packages": (_LIST, False),
        "requires": (_LIST, False),
    },
    "source": {"git": (_STR, False), "ref": (_STR, False), "path": (_STR, False)},
    "env": {},  # free-form, values must be strings
    "arch": {"variables": (_LIST, False), "separator": (_STR, False), "plain": (_BOOL, False)},
    "steps": {"prepare": (_LIST, False), "build": (_LIST, True), "verify": (_LIST, False),
              "wheel": (_LIST, False)},
    "clean": {"paths": (_LIST, False)},
    "resources": {
        "memory_per_job_gb": (_NUM, False),
        "min_free_disk_gb": (_NUM, False),
        "job_variables": (_LIST, False),
    },
    "verify": {"artifacts": (_LIST, False)},
    "preflight": {"libraries": (_LIST, False), "python_modules": (_LIST, False)},
}
_REQUIRED_TABLES = ("steps",)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The name goes into directory names (workspace, run dir "<stamp>-<name>-<pid>"): well under NAME_MAX.
_NAME_MAX = 100


def _nul_key(data: Any, prefix: str = "") -> str | None:
    """The key path of the first string holding a NUL (execve cannot pass one), or None."""
    if isinstance(data, str):
        return prefix if "\0" in data else None
    items: Any = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        if isinstance(key, str) and "\0" in key:
            return f"{prefix}.{key!r}".lstrip(".")
        found = _nul_key(value, f"{prefix}.{key}" if isinstance(key, str) else f"{prefix}[{key}]")
        if found is not None:
            return found.lstrip(".")
    return None


def _type_ok(kind: str, value: Any) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _NUM:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == _LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return False


def _check(data: Mapping[str, Any], path: Path) -> None:
    def fail(key: str, why: str, todo: str) -> RecipeError:
        return RecipeError(f"recipe {path}: key '{key}' {why}", todo=todo)

    nul = _nul_key(data)
    if nul is not None:
        raise fail(nul, "holds a NUL character", "remove it: no command or variable can carry a NUL")
    known_tables = set(_SCHEMA) - {""}
    for key, value in data.items():
        if key in known_tables:
            if not isinstance(value, dict):
                raise fail(key, "must be a table", f"write it as [{key}]")
            continue
        if key not in _SCHEMA[""]:
            raise fail(key, "is not a recipe key", f"known keys: {', '.join(sorted(set(_SCHEMA['']) | known_tables))}")
    for table, keys in _SCHEMA.items():
        section = data if table == "" else data.get(table, {})
        prefix = f"{table}." if table else ""
        if table == "env":
            for key, value in section.items():
                if not _IDENTIFIER.fullmatch(key):
                    raise fail(f"env.{key}", "is not a variable name",
                               "use letters, digits and _ (not starting with a digit), e.g. MAX_JOBS")
                if not isinstance(value, str):
                    raise fail(f"env.{key}", "must be a string", f'quote the value: {key} = "{value}"')
            continue
        if table:
            for key in section:
                if key not in keys:
                    raise fail(f"{prefix}{key}", "is not a known key", f"known keys in [{table}]: {', '.join(keys)}")
        for key, (kind, required) in keys.items():
            if key not in section:
                if required and (table == "" or table in data or table in _REQUIRED_TABLES):
                    raise fail(f"{prefix}{key}", "is required but missing", f"add {prefix}{key} ({kind})")
                continue
            if not _type_ok(kind, section[key]):
                got = f"got {type(section[key]).__name__}: {section[key]!r}"
                raise fail(f"{prefix}{key}", f"must be a {kind}", got)
    if not _NAME.fullmatch(data["name"]):
        raise fail("name", f"must be a plain name (letters, digits, . _ -), got {data['name']!r}",
                   'e.g. name = "vllm" (it names the workspace directory and the run directory)')
    if len(data["name"]) > _NAME_MAX:
        raise fail("name", f"is {len(data['name'])} characters long", f"use at most {_NAME_MAX} (it names directories)")
    for key, names in (("arch.variables", data.get("arch", {}).get("variables", [])),
                       ("resources.job_variables", data.get("resources", {}).get("job_variables", []))):
        bad = [n for n in names if not _IDENTIFIER.fullmatch(n)]
        if bad:
            raise fail(key, f"holds {bad[0]!r}, which is not a variable name", "use letters, digits and _")
    if not data.get("steps", {}).get("build"):
        raise fail("steps.build", "must hold at least one command", 'e.g. build = ["python3 setup.py develop"]')


def parse_recipe(text: str, path: Path, bundled: bool = False) -> Recipe:
    """Parse and validate recipe text; ``path`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError
        raise RecipeError(
            f"recipe {path} is not valid TOML",
            why=str(exc),
            todo="fix the syntax at the position shown",
        ) from None
    _check(data, path)
    arch = data.get("arch", {})
    steps = data["steps"]
    res = data.get("resources", {})
    pre = data.get("preflight", {})
    return Recipe(
        name=data["name"],
        description=data.get("description", ""),
        packages=tuple(data.get("packages", ())),
        requires=tuple(data.get("requires", ())),
        source=SourceSpec(**data.get("source", {})),
        env=dict(data.get("env", {})),
        arch=ArchSpec(
            variables=tuple(arch.get("variables", ArchSpec.variables)),
            separator=arch.get("separator", ArchSpec.separator),
            plain=arch.get("plain", ArchSpec.plain),
        ),
        steps=Steps(
            build=tuple(steps["build"]),
            prepare=tuple(steps.get("prepare", ())),
            verify=tuple(steps.get("verify", ())),
            wheel=tuple(steps.get("wheel", ())),
        ),
        clean_paths=tuple(data.get("clean", {}).get("paths", ())),
        resources=Resources(
            memory_per_job_gb=float(res.get("memory_per_job_gb", Resources.memory_per_job_gb)),
            min_free_disk_gb=float(res.get("min_free_disk_gb", Resources.min_free_disk_gb)),
            job_variables=tuple(res.get("job_variables", Resources.job_variables)),
        ),
        verify_artifacts=tuple(data.get("verify", {}).get("artifacts", ())),
        preflight=Preflight(
            libraries=tuple(pre.get("libraries", ())),
            python_modules=tuple(pre.get("python_modules", ())),
        ),
        path=path,
        bundled=bundled,
    )


def load_recipe(path: Path, bundled: bool = False) -> Recipe:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecipeError(f"cannot read recipe {path}", why=exc.strerror or str(exc),
                          todo="check the path") from None
    except UnicodeDecodeError as exc:
        raise RecipeError(f"recipe {path} is not UTF-8 text", why=f"byte {exc.start}: {exc.reason}",
                          todo="save the recipe as UTF-8 (TOML files must be)") from None
    return parse_recipe(text, path, bundled=bundled)


def bundled_recipe_dir() -> Path:
    """The recipes shipped with rocmbuild (inside the wheel, or the repo's recipes/)."""
    packaged = paths.package_dir() / "recipes"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "recipes"


def user_recipe_dir() -> Path:
    return paths.config_dir("recipes")


def available_recipes() -> dict[str, Path]:
    """Name -> recipe file; user recipes override bundled ones of the same file name."""
    found: dict[str, Path] = {}
    for directory in (bundled_recipe_dir(), user_recipe_dir()):
        if directory.is_dir():
            for file in sorted(directory.glob("*.toml")):
                found[file.stem] = file
    return found


def find_recipe(name_or_path: str) -> Recipe:
    """A bundled/user recipe by name, or a recipe file by path."""
    candidate = Path(name_or_path)
    if "\0" in name_or_path:
        raise RecipeError(f"recipe name {name_or_path!r} holds a NUL character", todo="pass a recipe name or path")
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        try:
            is_file = candidate.is_file()
        except OSError as exc:  # a name too long for a path, a component that is a file...
            raise RecipeError(f"cannot use recipe file {name_or_path[:200]}", why=exc.strerror or str(exc),
                              todo="check the path") from None
        if not is_file:
            raise RecipeError(f"recipe file {name_or_path} does not exist",
                              todo="check the path, or name a bundled recipe (see `rocmbuild recipes`)")
        check_trusted(candidate, "recipe file")
        return load_recipe(candidate.resolve())
    recipes = available_recipes()
    if name_or_path not in recipes:
        import difflib

        close = difflib.get_close_matches(name_or_path, list(recipes), n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise RecipeError(
            f"unknown recipe '{name_or_path}'",
            why=f"known recipes: {', '.join(sorted(recipes)) or 'none'}",
            todo=f"{hint}or pass a path to a .toml recipe file; user recipes go in {user_recipe_dir()}",
        )
    path = recipes[name_or_path]
    bundled = path.parent == bundled_recipe_dir()
    if not bundled:  # a user recipe of a bundled name overrides it: only if nobody else could have put it there
        check_trusted(path, "user recipe", found_by_listing=True)
    return load_recipe(path, bundled=bundled)
