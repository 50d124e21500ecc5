"""Control characters in user and model text are shown as escapes in every report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from evalkit._visible import visible, visible_json
from evalkit.report import ItemView, html_report, junit_xml, markdown_summary
from evalkit.report._text import console_table
from tests.report.test_render import EXACT, make_report

HOSTILE = [
    "red \x1b[31mALERT\x1b[0m",  # a terminal colour/rewrite sequence
    "nul \x00 and bell \x07",
    "C1 \x9b2J clear",
    "bidi \u202eevil\u202c",  # reads backwards on screen
    "lone \ud800 surrogate",
]
UNSAFE = ["\x1b", "\x00", "\x07", "\x9b", "\u202e", "\ud800"]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, tab\tand\nnewline", "plain text, tab\tand\nnewline"),
        ("\x1b[31m", "\\x1b[31m"),
        ("a\x00b", "a\\x00b"),
        ("\u202eabc", "\\u202eabc"),
        ("\u061cabc", "\\u061cabc"),  # ARABIC LETTER MARK, a bidi control too
        ("\ud800", "\\ud800"),
        ("line\r\nend\rx", "line\nend\\x0dx"),
        ("café ✓ 数学", "café ✓ 数学"),
    ],
)
def test_visible(text: str, shown: str) -> None:
    assert visible(text) == shown


def hostile_report(text: str) -> object:
    failure = ItemView(text, text, None, text, text, text, failed_step="analyze", error=text)
    worst = ItemView(text, "exact", 0.0, text, text, text, reason=text)
    return replace(
        make_report(replace(EXACT, scorer_id=text, threshold=text)),
        name=text,
        dataset=text,
        baseline=text,
        failures=(failure,),
        worst_items={"exact": [worst]},
    )


@pytest.mark.parametrize("text", HOSTILE)
def test_every_report_shows_control_characters_as_escapes(tmp_path: Path, text: str) -> None:
    report = hostile_report(text)
    rendered = {
        "console": console_table(report),  # type: ignore[arg-type]
        "markdown": markdown_summary(report),  # type: ignore[arg-type]
        "html": html_report(report),  # type: ignore[arg-type]
        "junit": junit_xml(report),  # type: ignore[arg-type]
    }
    for kind, output in rendered.items():
        assert not any(ch in output for ch in UNSAFE), kind
        (tmp_path / kind).write_text(output, encoding="utf-8")  # writable as UTF-8
    root = ET.fromstring(rendered["junit"])  # well-formed XML
    assert root.get("name") == f"evalkit.{visible(text)}"


@pytest.mark.parametrize("text", HOSTILE)
def test_visible_json_keeps_the_value_and_shows_no_unsafe_character(text: str) -> None:
    dumped = json.dumps({text: [text, 1]}, ensure_ascii=False, indent=2)
    shown = visible_json(dumped)
    assert not [ch for ch in UNSAFE if ch in shown]
    assert json.loads(shown) == {text: [text, 1]}
    assert visible_json('{"plain": "café ✓"}') == '{"plain": "café ✓"}'
