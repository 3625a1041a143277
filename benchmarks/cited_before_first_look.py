"""Audit: which batch cases use a thread the catalogue already cited when the batch was first scored?

A first look measures the classifier on logs it has not seen.  A case whose thread a signature or a test
already cited (in ``references``, an example's comment, a docs bullet) at the commit that scored the batch
was seen: the catalogue may have learned its very wording.  This script reads each batch's first-look
commit from the table in ``benchmarks/RESULTS.md`` (``| bNN | logs | first look | cw | commit | ...``),
collects the ``owner/repo#N`` references of ``rocmbuild/`` (its TOML), ``tests/`` and ``docs/`` at that
commit with git, and prints every case whose GitHub source is among them, then each affected batch's
first look with and without those cases.

    python benchmarks/cited_before_first_look.py

Exit 0 always (an audit); needs the repository's git history.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\| (b\d+) \| \d+ \| [^|]+\| [^|]+\| ([0-9a-f]{7,40}) \|", re.M)
REFERENCE = re.compile(r"\b([A-Za-z0-9][\w.-]*/[\w.-]+)#(\d+)\b")
GITHUB_THREAD = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull)/(\d+)")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def cited_at(root: Path, commit: str) -> set[tuple[str, str]]:
    """Every owner/repo#N the catalogue, the tests and the docs cite at ``commit`` (lower-cased repo)."""
    names = [name for name in git(root, "ls-tree", "-r", "--name-only", commit).split()
             if (name.startswith("rocmbuild/") and name.endswith(".toml"))
             or (name.startswith("tests/") and name.endswith(".py"))
             or (name.startswith("docs/") and name.endswith(".md"))]
    text = "".join(git(root, "show", f"{commit}:{name}") for name in names)
    return {(repo.lower(), number) for repo, number in REFERENCE.findall(text)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (its git history is read)")
    root = parser.parse_args(argv).root
    reallogs = root / "benchmarks" / "reallogs"
    rows = ROW.findall((root / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8"))
    cache: dict[str, set[tuple[str, str]]] = {}
    total = right = 0
    for batch, commit in rows:
        labels_path = reallogs / batch / "labels.json"
        first_look_path = reallogs / batch / "firstlook.json"
        if not labels_path.is_file() or not first_look_path.is_file():
            continue
        if commit not in cache:
            cache[commit] = cited_at(root, commit)
        cited = cache[commit]
        hits = []
        for case in json.loads(labels_path.read_text(encoding="utf-8")):
            match = GITHUB_THREAD.search(case["source"])
            if match and (match.group(1).lower(), match.group(2)) in cited:
                hits.append(case["id"])
        if not hits:
            continue
        first_look = {case["id"]: bool(case["right"]) for case in
                      json.loads(first_look_path.read_text(encoding="utf-8"))["cases"]}
        hits = [case_id for case_id in hits if case_id in first_look]
        logs, scored_right = len(first_look), sum(first_look.values())
        hit_right = sum(first_look[case_id] for case_id in hits)
        total, right = total + len(hits), right + hit_right
        rest = logs - len(hits)
        print(f"{batch} at {commit}: cited {', '.join(hits)}; first look {scored_right}/{logs} = "
              f"{100 * scored_right / logs:.1f}%, without them {scored_right - hit_right}/{rest} = "
              f"{100 * (scored_right - hit_right) / rest:.1f}%")
    print(f"cases cited before their first look: {total}, right at first look: {right}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
