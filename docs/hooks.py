"""MkDocs hooks: the reference pages that are generated from the code rather than copied.

A page asks for a generated block with a marker on a line of its own:

- ``<!-- evalkit:cli -->``: every ``evalkit`` command and option, read from the argument parser
  the CLI itself uses (``evalkit.cli._main.build_parser``);
- ``<!-- evalkit:scorers KIND -->``: the prebuilt scorers of one kind (``code`` or ``llm``), read
  from the registry as ``evalkit scorers`` reads it (``evalkit.scorers.list_scorers``);
- ``<!-- evalkit:store-schema -->``: the store's tables and views with their columns, read from
  a fresh in-memory store that ``evalkit.store.migrate`` brings to the current schema;
- ``<!-- evalkit:module-sizes -->``: the package's size and its largest modules, counted from
  the files of ``evalkit/`` (the development page's size report, which replaced a line cap:
  docs/pages/design/import-layers.md).

So the reference cannot drift from the code: a new option, scorer parameter or column shows up
at the next build. Only public names are used, so the packages' insides may move freely.

The hooks also keep the API reference readable, as warnings that fail the strict build:

- a page showing a Sphinx role as text (``:class:`` before a code span): docstrings name other
  objects with mkdocstrings' cross-references, ``[`Source`][evalkit.dataset.Source]``, which
  the build resolves (an unknown target is mkdocs-autorefs' own warning);
- no signature formatter: mkdocstrings formats signatures with Ruff (or Black) when it can
  import one and otherwise, saying so only at INFO, prints each on one line.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MARKER = re.compile(r"^<!-- evalkit:(?P<what>[a-z-]+)(?: (?P<arg>[a-z]+))? -->$", re.MULTILINE)

# A Sphinx role left in a docstring renders as its name before a code span:
# ":class:`~evalkit.dataset.Source`" becomes ":class:<code>~evalkit.dataset.Source</code>".
SPHINX_ROLE = re.compile(
    r":(?:py:)?(?:any|attr|class|const|data|doc|exc|func|meth|mod|obj|ref|term):<code>[^<]*</code>"
)
PRE = re.compile(r"<pre\b.*?</pre>", re.DOTALL)

# Under the "mkdocs" logger, whose warnings the strict build counts.
log = logging.getLogger("mkdocs.hooks.evalkit")


def on_config(config: Any, **_: Any) -> Any:
    """Warn when no formatter for the API reference's signatures is installed."""
    if importlib.util.find_spec("ruff") is None and importlib.util.find_spec("black") is None:
        log.warning(
            "neither Ruff nor Black is installed: the API reference's signatures would be"
            " printed on one line (pip install -e '.[docs]' installs Ruff)"
        )
    return config


def on_page_content(html: str, page: Any, **_: Any) -> str:
    """Warn about every Sphinx role a page shows as text (outside its code blocks)."""
    for role in raw_sphinx_roles(html):
        log.warning(f"{page.file.src_uri}: a Sphinx role shown as text: {role}")
    return html


def raw_sphinx_roles(html: str) -> list[str]:
    """The Sphinx roles that ``html`` (a rendered page) shows as text, in page order."""
    return SPHINX_ROLE.findall(PRE.sub("", html))


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace every generation marker of a page with the block it names."""
    return MARKER.sub(lambda m: render(m["what"], m["arg"]), markdown)


def render(what: str, arg: str | None = None) -> str:
    """The Markdown of one generated block (``cli``, ``scorers KIND``, ``store-schema`` or
    ``module-sizes``)."""
    if what == "cli":
        return cli_reference()
    if what == "scorers" and arg in ("code", "llm"):
        return scorers_reference(arg)
    if what == "store-schema":
        return store_schema()
    if what == "module-sizes":
        return module_sizes()
    raise ValueError(f"unknown generated block: {what} {arg or ''}".strip())


def _rst(text: str) -> str:
    """Docstring text (reST double backticks) as Markdown."""
    return text.replace("``", "`")


def _cell(text: str) -> str:
    return _rst(text).replace("|", "\\|").replace("\n", " ")


# -- CLI ---------------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _argument(action: argparse.Action) -> str:
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs == 0:
            return f"`{name}`"
        metavar = action.metavar or (
            "{" + ",".join(map(str, action.choices)) + "}"
            if action.choices
            else action.dest.upper()
        )
        if action.nargs == "?":
            return f"`{name} [{metavar}]`"
        return f"`{name} {metavar}`"
    metavar = action.metavar or action.dest
    return f"`{metavar}...`" if action.nargs in ("+", "*") else f"`{metavar}`"


def _argument_help(action: argparse.Action) -> str:
    text = action.help or ""
    default = action.default
    if default not in (None, False, argparse.SUPPRESS) and str(default) not in text:
        text += f"{'; ' if text else ''}default `{default}`"
    return _cell(text)


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help: str = ""
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    subs = _subcommands(parser)
    if path and not subs:
        yield path, parser, help
    helps = _helps(parser)
    for name, sub in subs.items():
        yield from _commands(sub, (*path, name), helps.get(name, ""))


def cli_reference() -> str:
    """Every ``evalkit`` command: its usage line, what it does and a table of its arguments."""
    # The one private import here: the CLI exports only main(), and its parser is the truth.
    from evalkit.cli import build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps usage lines at the terminal's width
    parser = build_parser()
    out: list[str] = []
    for path, sub, help in _commands(parser):
        out += [f"## `{' '.join(path)}`", "", help[:1].upper() + help[1:] + ".", ""]
        if sub.description:
            out += [sub.description, ""]
        out += ["```text", sub.format_usage().replace("usage: ", "").strip(), "```", ""]
        actions = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
        if actions:
            out += ["| argument | meaning |", "|---|---|"]
            out += [f"| {_argument(a)} | {_argument_help(a)} |" for a in actions]
            out.append("")
    return "\n".join(out)


# -- Scorers -----------------------------------------------------------------------------------


def _default(value: Any) -> str:
    if value is None:
        return "`None`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value!r}`"


def scorers_reference(kind: str) -> str:
    """The prebuilt scorers of ``kind``: a summary table, then each scorer's parameters."""
    from evalkit.scorers import list_scorers

    infos = list_scorers(kind=kind)  # type: ignore[arg-type]
    out = [
        "| name | measures | range | direction | inputs | extra |",
        "|---|---|---|---|---|---|",
    ]
    for info in infos:
        low, high = info.range
        inputs = ", ".join(info.inputs) + (f" ({info.inputs_note})" if info.inputs_note else "")
        out.append(
            f"| [`{info.name}`](#{info.name}) | {_cell(info.description)} | {low:g} to {high:g}"
            f" | {'higher' if info.higher_is_better else 'lower'} | {_cell(inputs)}"
            f" | {f'`[{info.extra}]`' if info.extra else ''} |"
        )
    out.append("")
    for info in infos:
        out += [f"#### `{info.name}` {{ #{info.name} }}", "", f"**{info.title}.** "]
        out[-1] += _rst(info.description) + f" Definition version {info.version}."
        if info.extra:
            out[-1] += f" Needs `pip install 'evalkit-runner[{info.extra}]'`."
        out.append("")
        if info.params:
            out += ["| parameter | type | default | meaning |", "|---|---|---|---|"]
            out += [
                f"| `{p.name}` | `{_cell(p.type)}` | {_default(p.default)}"
                f" | {_cell(p.description)} |"
                for p in info.params
            ]
        else:
            out.append("No parameters.")
        out.append("")
    return "\n".join(out)


# -- Store schema ------------------------------------------------------------------------------


def store_schema() -> str:
    """The tables and views of a store at the current schema version, with their columns."""
    import duckdb

    from evalkit.store import SCHEMA_VERSION, migrate

    con = duckdb.connect(":memory:")
    try:
        migrate(con, where="docs")
        objects = con.execute(
            "SELECT table_name, table_type FROM information_schema.tables"
            " WHERE table_schema = current_schema() ORDER BY table_type, table_name"
        ).fetchall()
        out = [f"Schema version {SCHEMA_VERSION}.", ""]
        for name, kind in objects:
            columns = con.execute(
                "SELECT column_name, data_type, is_nullable FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = ?"
                " ORDER BY ordinal_position",
                [name],
            ).fetchall()
            label = "view" if kind == "VIEW" else "table"
            out += [f"### `{name}` ({label}) {{ #{name} }}", ""]
            out += ["| column | type | null |", "|---|---|---|"]
            out += [
                f"| `{column}` | `{dtype}` | {'yes' if nullable == 'YES' else 'no'} |"
                for column, dtype, nullable in columns
            ]
            out.append("")
        return "\n".join(out)
    finally:
        con.close()


# -- Module sizes ------------------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parents[1] / "evalkit"
LARGEST = 15


def module_lines() -> dict[str, int]:
    """The lines of each module of ``evalkit/``, by its path relative to the repository."""
    return {
        path.relative_to(PACKAGE.parent).as_posix(): len(
            path.read_text(encoding="utf-8").splitlines()
        )
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def module_sizes() -> str:
    """The package's modules and lines, and its `LARGEST` modules with their lines."""
    lines = module_lines()
    largest = sorted(lines.items(), key=lambda item: (-item[1], item[0]))[:LARGEST]
    out = [
        f"{len(lines)} modules, {sum(lines.values()):,} lines; the {LARGEST} largest:",
        "",
        "| module | lines |",
        "|---|---|",
    ]
    out += [f"| `{path}` | {count:,} |" for path, count in largest]
    return "\n".join(out)
