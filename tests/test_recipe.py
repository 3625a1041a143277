"""Recipe loading: bundled recipes, strict validation, user overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmbuild.errors import ExitCode, RecipeError
from rocmbuild.planning.recipe import available_recipes, find_recipe, load_recipe, parse_recipe

MINIMAL = 'name = "x"\n[steps]\nbuild = ["make"]\n'


def test_bundled_torch_recipe_follows_rocm_facts() -> None:
    torch = find_recipe("torch")
    assert torch.bundled
    assert torch.env["USE_ROCM"] == "1"
    assert torch.arch.variables == ("PYTORCH_ROCM_ARCH",) and torch.arch.plain
    assert any("build_amd.py" in c for c in torch.steps.prepare), "hipify must run in prepare"
    assert any("submodule" in c for c in torch.steps.prepare)
    assert any("requirements.txt" in c for c in torch.steps.prepare)
    assert torch.steps.build == ("python3 -m pip install --no-build-isolation -v -e .",)
    assert "build" in torch.clean_paths and torch.packages == ("torch",)
    assert torch.resources.memory_per_job_gb > 0


def test_bundled_vllm_recipe_follows_rocm_facts() -> None:
    vllm = find_recipe("vllm")
    assert vllm.requires == ("torch",)
    assert vllm.env["VLLM_TARGET_DEVICE"] == "rocm"
    assert vllm.steps.build == ("python3 setup.py develop",)
    assert any("rocm-build.txt" in c or "build/rocm.txt" in c for c in vllm.steps.prepare)
    assert {".deps", "build", "*.egg-info"} <= set(vllm.clean_paths)
    assert vllm.arch.plain and vllm.packages == ("vllm",)


def test_minimal_recipe_gets_defaults(tmp_path: Path) -> None:
    recipe = parse_recipe(MINIMAL, tmp_path / "x.toml")
    assert recipe.steps.build == ("make",) and recipe.steps.prepare == ()
    assert recipe.arch.separator == ";" and recipe.resources.job_variables == ("MAX_JOBS",)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('name = "x"\nbogus = 1\n[steps]\nbuild = ["make"]\n', "'bogus'"),
        ('name = "x"\n[steps]\nbuild = ["make"]\nbiuld = ["x"]\n', "'steps.biuld'"),
        ('name = "x"\n[steps]\nbuild = "make"\n', "'steps.build'"),
        ('[steps]\nbuild = ["make"]\n', "'name'"),
        ('name = "x"\n', "'steps.build'"),
        ('name = "x"\n[steps]\nbuild = ["make"]\n[resources]\nmemory_per_job_gb = "4"\n',
         "'resources.memory_per_job_gb'"),
        ('name = "x"\n[steps]\nbuild = ["make"]\n[env]\nN = 3\n', "'env.N'"),
        ('name = "x"\n[steps]\nbuild = ["make"]\n[arch]\nplain = "yes"\n', "'arch.plain'"),
    ],
)
def test_bad_recipes_name_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert key in info.value.what and str(path) in info.value.what
    assert info.value.exit_code == ExitCode.USAGE


def test_malformed_toml_is_a_recipe_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text('name = "x\n')
    with pytest.raises(RecipeError, match="not valid TOML"):
        load_recipe(path)


def test_unknown_recipe_suggests_close_names() -> None:
    with pytest.raises(RecipeError) as info:
        find_recipe("vlm")
    assert "vllm" in info.value.todo


def test_user_recipes_add_and_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    user = tmp_path / "rocmbuild" / "recipes"
    user.mkdir(parents=True)
    (user / "mine.toml").write_text(MINIMAL.replace('"x"', '"mine"'))
    (user / "vllm.toml").write_text(MINIMAL.replace('"x"', '"vllm"'))
    found = available_recipes()
    assert found["mine"] == user / "mine.toml"
    assert found["vllm"] == user / "vllm.toml"
    assert find_recipe("vllm").steps.build == ("make",)
    assert not find_recipe("vllm").bundled
