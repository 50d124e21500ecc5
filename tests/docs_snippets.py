"""The fenced code blocks of README.md and docs/, and the driver that runs them.

tests/test_docs_snippets.py runs every ``python``, ``bash`` (or ``sh``) and ``toml`` block of
the README and the docs pages; docs/pages/development.md#code-blocks-in-the-docs says how and
lists the markers a block may carry. This module finds the blocks (:func:`blocks`) and is the
driver that runs them (``python tests/docs_snippets.py PLAN.json RESULTS.json``): one process
for all of them, so evalkit is imported once, each page's blocks in the page's order in one
folder holding copies of the repository's ``datasets/`` and ``experiments/``:

- a ``python`` block runs as a script there (fresh globals, ``__name__ == "__main__"``), or,
  when its first line names a test file (``# tests/test_evals.py``), is written there and run
  by ``pytest`` (with evalkit's plugin, as in a project of your own);
- a ``bash`` block runs by ``bash``, each command checked for its exit code (0, or the
  ``exits N`` its comment states); a ``pip install`` line is checked, not run
  (:func:`install_problems`), and ``python -m pytest`` (the suite itself) is not run from it;
- a ``toml`` block is written to ``experiments/`` and loaded by evalkit's experiment-file
  loader, then run by ``evalkit run`` when it is a whole experiment (``[experiment]`` and
  ``[[scorers]]``).

The driver only uses evalkit's public names (``evalkit.experiment_file``, ``evalkit.cli``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
#: Block languages that run; ``sh`` is run as ``bash``.
LANGUAGES = {"python": "python", "bash": "bash", "sh": "bash", "toml": "toml"}
#: ``<!-- snippet: KIND[: reason] -->`` on the line just above a fence.
MARKER = re.compile(r"^<!-- snippet: (?P<kind>[a-z-]+)(?:: (?P<reason>.+?))? -->$")
#: needs-openai: calls a hosted provider; runs only with OPENAI_API_KEY set.
#: fragment: part of a larger file or program; checked (compiled, parsed, ``bash -n``), not run.
MARKERS = ("needs-openai", "fragment")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\S*)\s*$")
#: A python block that is a test file says so on its first line: ``# tests/test_evals.py``.
TEST_FILE = re.compile(r"# (tests/test_\w+\.py)\n")
#: A bash command's comment stating its exit code: ``# ... exits 1``.
EXITS = re.compile(r"#.*\bexits (\d+)")
#: Seconds a bash block may take.
BLOCK_TIMEOUT = 120


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block of a page."""

    page: str  # relative to the repository root
    line: int  # the line of its opening fence
    lang: str  # as written after the fence
    code: str
    marker: str | None = None
    reason: str | None = None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def kind(self) -> str | None:
        """``python``, ``bash`` or ``toml``; None for a block that is not run (text, sql...)."""
        return LANGUAGES.get(self.lang)


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, with the marker on the line above each, if any."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    rel = page.relative_to(ROOT).as_posix()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = index + 1
        while lines[end].strip() != "```":
            end += 1
        marker = MARKER.match(lines[index - 1].strip()) if index else None
        indent = len(opening["indent"])  # a block inside a list item
        found.append(
            Block(
                page=rel,
                line=index + 1,
                lang=opening["lang"],
                code="\n".join(line[indent:] for line in lines[index + 1 : end]) + "\n",
                marker=marker["kind"] if marker else None,
                reason=marker["reason"] if marker else None,
            )
        )
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    """Every fenced block of README.md and docs/."""
    return [block for page in pages() for block in blocks(page)]


# -- bash --------------------------------------------------------------------------------------


def commands(code: str) -> list[tuple[int, str]]:
    """The commands of a bash block with their line in the block (continuations joined,
    comment-only and blank lines dropped)."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, line in enumerate(code.splitlines(), 1):
        if not pending:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = number
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        out.append((start, " ".join(part.strip() for part in pending)))
        pending = []
    return out


def install_problems(command: str) -> list[str]:
    """What is wrong with the ``pip install`` part of ``command``: each requirement must name
    this project (``.``, or its distribution name from pyproject.toml) with extras it has."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    name, extras = project["name"], set(project["optional-dependencies"])
    words = shlex.split(command.split("&&")[0])
    targets = [w for w in words[words.index("install") + 1 :] if not w.startswith("-")]
    problems = []
    if not targets:
        problems.append(f"{command!r}: installs nothing")
    for target in targets:
        found = re.fullmatch(r"(?P<name>[^\[\]]+)(?:\[(?P<extras>[^\]]*)\])?", target)
        if found is None:
            problems.append(f"{target!r}: not a requirement")
            continue
        if found["name"] not in (".", name):
            problems.append(f"{target!r}: the distribution is {name!r}")
        for extra in filter(None, (found["extras"] or "").split(",")):
            if extra.strip() not in extras:
                problems.append(f"{target!r}: no extra {extra.strip()!r} in pyproject.toml")
    return problems


def bash_script(code: str) -> tuple[str, list[str]]:
    """A script running the commands of a bash block, each checked for its exit code, and the
    problems of its install lines. A ``pip install X && REST`` line runs REST only."""
    script = ["set -u"]
    problems: list[str] = []
    for line, command in commands(code):
        expected = EXITS.search(command)
        if re.search(r"\bpip install\b", command):
            problems += install_problems(command)
            command = command.partition("&&")[2].strip()
        if re.fullmatch(r"python -m pytest\b.*", command):
            continue  # the suite itself, run by .ci/run (and a fresh venv by the install test)
        if not command:
            continue
        script.append(command)
        want = expected[1] if expected else "0"
        script.append(
            f'rc=$?; if [ "$rc" != {want} ]; then echo "line {line}: exit $rc, expected {want}:'
            f' {shlex.quote(command)[1:-1]}" >&2; exit 99; fi'
        )
    return "\n".join(script) + "\n", problems


# -- the driver --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """What running one block gave."""

    id: str
    ok: bool
    output: str
    error: str = ""
    seconds: float = 0.0


def _pytest(block: Block, folder: Path, path: str, env: dict[str, str]) -> Outcome:
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    (folder / path).write_text(block.code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", ".", path],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
        check=False,
    )
    output = done.stdout + done.stderr
    return Outcome(block.id, done.returncode == 0, output, "" if done.returncode == 0 else output)


def _python(block: Block, folder: Path, env: dict[str, str]) -> Outcome:
    test_file = TEST_FILE.match(block.code)
    if test_file:
        return _pytest(block, folder, test_file[1], env)
    path = folder / f"snippet_{Path(block.page).stem}_{block.line}.py"
    path.write_text(block.code, encoding="utf-8")
    out = io.StringIO()
    saved_path = list(sys.path)
    sys.path.insert(0, str(folder))  # as `python snippet.py` run in that folder
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = compile(block.code, str(path), "exec")
            exec(code, {"__name__": "__main__", "__file__": str(path)})
    except BaseException:
        return Outcome(block.id, False, out.getvalue(), traceback.format_exc())
    finally:
        sys.path[:] = saved_path
    return Outcome(block.id, True, out.getvalue())


def _bash(block: Block, folder: Path, env: dict[str, str]) -> Outcome:
    script, problems = bash_script(block.code)
    if problems:
        return Outcome(block.id, False, "", "\n".join(problems))
    try:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return Outcome(block.id, False, "", f"still running after {exc.timeout} s")
    output = done.stdout + done.stderr
    return Outcome(block.id, done.returncode == 0, output, "" if done.returncode == 0 else output)


def _toml(block: Block, folder: Path) -> Outcome:
    from evalkit.cli import main as cli
    from evalkit.experiment_file import load_experiment_file

    path = folder / "experiments" / f"snippet_{Path(block.page).stem}_{block.line}.toml"
    path.write_text(block.code, encoding="utf-8")
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            loaded = load_experiment_file(path)
            whole = "experiment" in tomllib.loads(block.code) and bool(loaded.config.scorers)
            code = cli(["run", str(path.relative_to(folder))]) if whole else 0
    except BaseException:
        return Outcome(block.id, False, out.getvalue(), traceback.format_exc())
    if code != 0:
        return Outcome(block.id, False, out.getvalue(), f"evalkit run exited {code}")
    return Outcome(block.id, True, out.getvalue())


def check_fragment(block: Block) -> str:
    """The problem of a fragment (a block marked ``fragment``): it must still parse."""
    try:
        if block.kind == "python":
            compile(block.code, block.id, "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
        elif block.kind == "toml":
            tomllib.loads(block.code)
        elif block.kind == "bash":
            done = subprocess.run(
                ["bash", "-n"], input=block.code, capture_output=True, text=True, check=False
            )
            return done.stderr + "\n".join(bash_script(block.code)[1])
    except (SyntaxError, tomllib.TOMLDecodeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def run(plan: dict[str, Any]) -> list[Outcome]:
    """Run the blocks of ``plan`` (``{"folders": {page: folder}, "blocks": [Block...]}``),
    each in its page's folder, in order."""
    outcomes = []
    env = dict(os.environ)
    bash_done: dict[str, Outcome] = {}
    for raw in plan["blocks"]:
        block = Block(**raw)
        folder = Path(plan["folders"][block.page])
        os.chdir(folder)
        start = time.perf_counter()
        if block.kind == "bash" and block.code in bash_done:
            # The same commands on another page (the README's quick start is the getting
            # started page's, the judge-agreement sample is on two pages): run once.
            outcomes.append(replace(bash_done[block.code], id=block.id))
            continue
        if block.kind == "python":
            outcome = _python(block, folder, env)
        elif block.kind == "bash":
            outcome = _bash(block, folder, env)
        else:
            outcome = _toml(block, folder)
        outcomes.append(replace(outcome, seconds=time.perf_counter() - start))
        if block.kind == "bash":
            bash_done[block.code] = outcomes[-1]
    return outcomes


def plan_of(runnable: list[Block], folders: dict[str, Path]) -> dict[str, Any]:
    """The JSON plan the driver reads."""
    return {
        "folders": {page: str(folder) for page, folder in folders.items()},
        "blocks": [asdict(block) for block in runnable],
    }


if __name__ == "__main__":
    sys.path.pop(0)  # this script's folder (tests/): the snippets see their own folder instead
    plan_file, results_file = sys.argv[1:3]
    results = run(json.loads(Path(plan_file).read_text("utf-8")))
    Path(results_file).write_text(json.dumps([asdict(o) for o in results]), "utf-8")
