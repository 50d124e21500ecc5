"""Every python, bash and toml block of README.md and docs/ runs (tests/docs_snippets.py).

All the blocks run in one driver process, started once for this file; each block is then one
test reading its outcome. The shipped test server plays every judge (``OPENAI_BASE_URL`` and
``OPENAI_API_KEY`` point at it); a block marked ``needs-openai`` runs against the real provider
when ``OPENAI_API_KEY`` is set, and is skipped otherwise. See
docs/pages/development.md#code-blocks-in-the-docs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.testing import server_process
from tests.docs_snippets import (
    MARKERS,
    ROOT,
    Block,
    all_blocks,
    bash_script,
    check_fragment,
    commands,
    install_problems,
    plan_of,
)

BLOCKS = all_blocks()
RUN = [block for block in BLOCKS if block.kind]
HOSTED = bool(os.environ.get("OPENAI_API_KEY"))


def _workspaces(base: Path, runnable: list[Block]) -> dict[str, Path]:
    """A folder per page holding copies of datasets/ and experiments/, as in the repository."""
    folders = {}
    for page in dict.fromkeys(block.page for block in runnable):
        folder = base / page.replace("/", "_").removesuffix(".md")
        shutil.copytree(ROOT / "datasets", folder / "datasets")
        shutil.copytree(ROOT / "experiments", folder / "experiments")
        folders[page] = folder
    return folders


def _drive(base: Path, runnable: list[Block], env: dict[str, str]) -> dict[str, dict[str, str]]:
    plan, results = base / "plan.json", base / "results.json"
    plan.write_text(json.dumps(plan_of(runnable, _workspaces(base, runnable))), "utf-8")
    driver = Path(__file__).with_name("docs_snippets.py")
    subprocess.run(
        [sys.executable, str(driver), str(plan), str(results)], env=env, check=True, timeout=900
    )
    return {o["id"]: o for o in json.loads(results.read_text("utf-8"))}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    runnable = [block for block in RUN if block.marker is None]
    hosted = [block for block in RUN if block.marker == "needs-openai"]
    bin_dir = str(Path(sys.executable).parent)  # the installed `evalkit` command
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    with server_process() as url:
        env |= {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "test"}
        found = _drive(tmp_path_factory.mktemp("docs"), runnable, env)
    if HOSTED and hosted:
        real = dict(os.environ, PATH=env["PATH"])
        found |= _drive(tmp_path_factory.mktemp("docs-hosted"), hosted, real)
    return found


def test_the_blocks_are_found() -> None:
    pages = {block.page for block in RUN}
    assert {"README.md", "docs/pages/how-to/run-from-python.md"} <= pages
    assert {block.kind for block in RUN} == {"python", "bash", "toml"}


@pytest.mark.long(seconds=50)  # the first one runs every block (the outcomes fixture)
@pytest.mark.parametrize("block", [b for b in RUN if b.marker is None], ids=lambda b: b.id)
def test_a_block_runs(block: Block, outcomes: dict[str, dict[str, str]]) -> None:
    outcome = outcomes[block.id]
    assert outcome["ok"], f"{block.id} ({block.lang}) failed:\n{outcome['error']}"


@pytest.mark.parametrize(
    "block", [b for b in RUN if b.marker == "needs-openai"], ids=lambda b: b.id
)
def test_a_hosted_block_runs(block: Block, outcomes: dict[str, dict[str, str]]) -> None:
    if not HOSTED:
        pytest.skip("needs a hosted provider: set OPENAI_API_KEY")
    outcome = outcomes[block.id]
    assert outcome["ok"], f"{block.id} ({block.lang}) failed:\n{outcome['error']}"


@pytest.mark.parametrize("block", [b for b in RUN if b.marker], ids=lambda b: b.id)
def test_a_marked_block_says_why_and_parses(block: Block) -> None:
    assert block.marker in MARKERS, f"{block.id}: unknown marker {block.marker!r}"
    if block.marker == "fragment":
        assert block.reason, f"{block.id}: a fragment says why it is one"
    assert check_fragment(block) == ""


def test_every_block_says_its_language() -> None:
    # An unlabelled fence would escape the run: say bash, python, toml, or text for output.
    bare = [block.id for block in BLOCKS if not block.lang]
    assert bare == []


def test_a_marker_stands_above_a_block() -> None:
    marked = {(block.page, block.line - 1) for block in BLOCKS if block.marker}
    stray = []
    for block_page in {block.page for block in BLOCKS}:
        for number, line in enumerate((ROOT / block_page).read_text("utf-8").splitlines(), 1):
            if line.startswith("<!-- snippet:") and (block_page, number) not in marked:
                stray.append(f"{block_page}:{number}")
    assert stray == []


# -- the harness itself ------------------------------------------------------------------------


def test_commands_join_continuations_and_skip_comments() -> None:
    code = "# a comment\n\nevalkit run a.toml \\\n  --repeat 3   # exits 1\nevalkit view\n"
    assert commands(code) == [(3, "evalkit run a.toml --repeat 3   # exits 1"), (5, "evalkit view")]


def test_an_install_line_is_checked_not_run() -> None:
    script, problems = bash_script("python -m pip install -e '.[test]' && evalkit --help\n")
    assert problems == []
    assert "pip" not in script
    assert "evalkit --help" in script


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("pip install 'evalkit[nlp]'", "the distribution is 'evalkit-runner'"),
        ("pip install 'evalkit-runner[nope]'", "no extra 'nope'"),
        ("pip install -e '.[nlp,bogus]'", "no extra 'bogus'"),
        ("pip install --upgrade", "installs nothing"),
    ],
)
def test_a_wrong_install_line_is_a_problem(line: str, problem: str) -> None:
    assert any(problem in found for found in install_problems(line))


def test_a_command_with_an_unexpected_exit_code_fails(tmp_path: Path) -> None:
    script, _ = bash_script("true\nfalse   # exits 1\ntrue   # exits 1\necho never\n")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 99
    assert "line 3: exit 0, expected 1" in done.stderr
    assert "never" not in done.stdout


# -- figures quoted by the judge-agreement page ------------------------------------------------

AGREEMENT = ROOT / "docs" / "pages" / "how-to" / "judge-agreement.md"


def _agreement_block(*, repeat: bool) -> Block:
    """The judge-agreement page's command, with ``--repeat 3`` or without."""
    found = [
        block
        for block in BLOCKS
        if block.page.endswith("judge-agreement.md")
        and block.kind == "bash"
        and ("--repeat 3" in block.code) == repeat
    ]
    assert len(found) == 1
    return found[0]


def _rows(text: str, heading: str) -> list[str]:
    """The table rows printed under ``heading`` (after its header and rule lines)."""
    lines = text.split(heading, 1)[1].splitlines()[3:]
    return [line for line in lines if line.startswith(("helpful ", "contains "))]


def test_the_agreement_table_is_the_one_the_page_shows(
    outcomes: dict[str, dict[str, str]],
) -> None:
    page = AGREEMENT.read_text(encoding="utf-8")
    shown = _rows(page, "agreement with human labels:")
    printed = _rows(
        outcomes[_agreement_block(repeat=False).id]["output"], "agreement with human labels:"
    )
    assert len(shown) == len(printed) == 8
    for want, got in zip(shown, printed, strict=True):
        if want.startswith("contains") or "(raters)" in want:
            assert got.strip() == want.strip()  # no judge in these rows: the same every run
        else:  # the judge hesitates on some items: "a few hundredths from run to run"
            # helpful human_a, human_b ordinal 297 METRIC VALUE [LOW, HIGH] [GATE passed]
            want_cells, got_cells = want.split(), got.split()
            assert got_cells[:6] == want_cells[:6]
            assert got_cells[9:] == want_cells[9:]  # the gate and its verdict
            assert abs(float(got_cells[6]) - float(want_cells[6])) <= 0.05, (want, got)


def test_the_repeat_figures_are_in_the_ranges_the_page_states(
    outcomes: dict[str, dict[str, str]],
) -> None:
    page = " ".join(AGREEMENT.read_text(encoding="utf-8").split())
    alpha = re.search(r"self-agreement alpha between ([\d.]+) and ([\d.]+)", page)
    changed = re.search(r"between (\d+)% and (\d+)% of the pairs changed score", page)
    noise = re.search(r"judge noise explains between (\d+)% and (\d+)%", page)
    assert alpha is not None
    assert changed is not None
    assert noise is not None
    output = outcomes[_agreement_block(repeat=True).id]["output"]
    row = _rows(output, "judge stability across repeated executions:")
    assert len(row) == 1
    # helpful 3 297 ordinal ALPHA [LOW, HIGH] SPREAD CHANGED% NOISE%
    cells = row[0].split()
    assert float(alpha[1]) <= float(cells[4]) <= float(alpha[2]), row[0]
    assert int(changed[1]) <= int(cells[8].rstrip("%")) <= int(changed[2]), row[0]
    assert int(noise[1]) <= int(cells[9].rstrip("%")) <= int(noise[2]), row[0]


def test_the_annotated_experiment_file_loads(tmp_path: Path) -> None:
    from evalkit.experiment_file import load_experiment_file

    (block,) = [b for b in BLOCKS if b.page.endswith("experiment-file.md") and b.kind == "toml"]
    shutil.copytree(ROOT / "datasets", tmp_path / "datasets")
    (tmp_path / "experiments").mkdir()
    path = tmp_path / "experiments" / "annotated.toml"
    path.write_text(block.code, encoding="utf-8")
    loaded = load_experiment_file(path)
    assert loaded.config.experiment.name == "nightly-qa"


def _printed(page: str, outcomes: dict[str, dict[str, str]]) -> str:
    (block,) = [b for b in RUN if b.page == page and b.kind == "python"]
    return outcomes[block.id]["output"]


def test_the_scores_a_snippet_quotes_are_the_ones_it_prints(
    outcomes: dict[str, dict[str, str]],
) -> None:
    readme = _printed("README.md", outcomes)
    assert re.search(r"^completed \{'exact': 0\.626.*: 0\.790", readme, re.MULTILINE), readme
    printed = _printed("docs/pages/how-to/run-from-python.md", outcomes)
    assert "{'exact': 0.595" in printed
    assert "('mean 0.596 misses the threshold >= 0.8',)" in printed
