"""Audit: which batch cases use a thread the catalogue already cited when the batch was first scored?

A first look measures the classifier on logs it has not seen.  A case whose thread a signature, the code,
a test or a docs page already cited at the commit that scored the batch was seen: the catalogue may have
learned its very wording.  This script reads each batch's first-look commit from the table in
``benchmarks/RESULTS.md`` (``| bNN | logs | first look | cw | commit | ...``), collects the references of
``rocmbuild/`` (``.toml`` and ``.py``), ``tests/`` and ``docs/`` at that commit with git, and prints every
case whose GitHub source is among them, then each affected batch's first look with and without those cases
(over the cases ``labels.json`` still holds).

References are ``owner/repo#N``; a short ``repo#N`` (no owner) matches a source in any owner's ``repo``, so
a hit on it may be another project's thread of the same name (none was, when this was written).  A bare
``#N`` continuing a list names no repository and is not seen.

    python benchmarks/cited_before_first_look.py [--root REPOSITORY]

Exit 0 (an audit); a batch whose commit git does not know is named on standard error and skipped.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\| (b\d+) \| \d+ \| [^|]+\| [^|]+\| ([0-9a-f]{7,40}) \|", re.M)
REFERENCE = re.compile(r"(?<![\w./-])(?:([A-Za-z0-9][\w.-]*)/)?([A-Za-z0-9][\w.-]*)#(\d+)\b")
GITHUB_THREAD = re.compile(r"github\.com/([\w.-]+)/([\w.-]+)/(?:issues|pull)/(\d+)")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def _cites(name: str) -> bool:
    return ((name.startswith("rocmbuild/") and name.endswith((".toml", ".py")))
            or (name.startswith("tests/") and name.endswith(".py"))
            or (name.startswith("docs/") and name.endswith(".md")))


def cited_at(root: Path, commit: str) -> tuple[set[tuple[str, str, str]], set[tuple[str, str]]]:
    """The (owner, repo, N) and the owner-less (repo, N) references at ``commit``, lower-cased."""
    names = [name for name in git(root, "ls-tree", "-r", "--name-only", commit).split() if _cites(name)]
    text = "".join(git(root, "show", f"{commit}:{name}") for name in names)
    full, short = set(), set()
    for owner, repo, number in REFERENCE.findall(text):
        if owner:
            full.add((owner.lower(), repo.lower(), number))
        else:
            short.add((repo.lower(), number))
    return full, short


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (its git history is read)")
    root = parser.parse_args(argv).root
    reallogs = root / "benchmarks" / "reallogs"
    rows = ROW.findall((root / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8"))
    cache: dict[str, tuple[set[tuple[str, str, str]], set[tuple[str, str]]]] = {}
    total = right = 0
    for batch, commit in rows:
        labels_path = reallogs / batch / "labels.json"
        first_look_path = reallogs / batch / "firstlook.json"
        if not labels_path.is_file() or not first_look_path.is_file():
            continue
        if commit not in cache:
            try:
                cache[commit] = cited_at(root, commit)
            except subprocess.CalledProcessError:
                print(f"{batch}: commit {commit} is not in this repository's history; skipped", file=sys.stderr)
                continue
        full, short = cache[commit]
        labelled = json.loads(labels_path.read_text(encoding="utf-8"))
        scored = {case["id"]: bool(case["right"]) for case in
                  json.loads(first_look_path.read_text(encoding="utf-8"))["cases"]}
        # Over the cases the batch still holds (one dropped after its first look no longer counts).
        first_look = {case["id"]: scored[case["id"]] for case in labelled if case["id"] in scored}
        hits = []
        for case in labelled:
            match = GITHUB_THREAD.search(case["source"])
            if not match or case["id"] not in first_look:
                continue
            owner, repo, number = (part.lower() for part in match.groups())
            if (owner, repo, number) in full or (repo, number) in short:
                hits.append(case["id"])
        if not hits:
            continue
        logs, scored_right = len(first_look), sum(first_look.values())
        hit_right = sum(first_look[case_id] for case_id in hits)
        total, right = total + len(hits), right + hit_right
        rest = logs - len(hits)
        without = (f"{scored_right - hit_right}/{rest} = {100 * (scored_right - hit_right) / rest:.1f}%" if rest
                   else "no case left")
        print(f"{batch} at {commit}: cited {', '.join(hits)}; first look {scored_right}/{logs} = "
              f"{100 * scored_right / logs:.1f}%, without them {without}")
    print(f"cases cited before their first look: {total}, right at first look: {right}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
