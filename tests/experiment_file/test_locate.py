from __future__ import annotations

import tomllib

import pytest

from evalkit.experiment_file._locate import KeyLocator, KeyPath

DOCUMENT = '''\
# [not.a.table] in a comment
title = "top"            # line 2

[experiment]
name = "nightly"
"quoted key" = 1
site.url = "https://example.com"

[[scorers]]
use = "exact_match"
threshold = { min = 0.8 }

[[scorers]]
use = "contains"
notes = """
[[scorers]]
use = "fake" inside a string
"""
params = { words = ["a",
  "b"], nested = { deep = true } }

[scorers.judge]
model = "gpt-4o-mini"

[[scorers]]
use = 'regex_match'
values = [
  1,
  2,  # a comment ] with a bracket
  3,
]
inline = [{ a = 1 }, { b = 2 }]
when = 1979-05-27 07:32:00Z

[a.b]
c = 1

[[a.list]]
x = 1
[[a.list.sub]]
y = 2
[[a.list]]
x = 3
'''


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (("title",), 2),
        (("experiment",), 4),
        (("experiment", "name"), 5),
        (("experiment", "quoted key"), 6),
        (("experiment", "site", "url"), 7),
        (("experiment", "site"), 7),
        (("scorers",), 9),
        (("scorers", 0), 9),
        (("scorers", 0, "use"), 10),
        (("scorers", 0, "threshold", "min"), 11),
        (("scorers", 1), 13),
        (("scorers", 1, "use"), 14),
        (("scorers", 1, "notes"), 15),
        (("scorers", 1, "params"), 19),
        (("scorers", 1, "params", "words", 1), 20),
        (("scorers", 1, "params", "nested", "deep"), 20),
        (("scorers", 1, "judge"), 22),
        (("scorers", 1, "judge", "model"), 23),
        (("scorers", 2), 25),
        (("scorers", 2, "use"), 26),
        (("scorers", 2, "values", 0), 28),
        (("scorers", 2, "values", 2), 30),
        (("scorers", 2, "inline", 1, "b"), 32),
        (("scorers", 2, "when"), 33),
        (("a",), 35),
        (("a", "b", "c"), 36),
        (("a", "list", 0, "x"), 39),
        (("a", "list", 0, "sub", 0, "y"), 41),
        (("a", "list", 1, "x"), 43),
    ],
)
def test_every_key_path_is_found_on_its_line(path: KeyPath, line: int) -> None:
    assert KeyLocator(DOCUMENT).exact_line(path) == line


def test_the_document_is_valid_toml_with_the_values_the_paths_claim() -> None:
    data = tomllib.loads(DOCUMENT)
    assert data["scorers"][1]["judge"]["model"] == "gpt-4o-mini"
    assert data["scorers"][2]["inline"][1]["b"] == 2
    assert data["a"]["list"][0]["sub"][0]["y"] == 2
    assert len(data["scorers"]) == 3


def test_text_inside_a_multi_line_string_is_not_a_key() -> None:
    locator = KeyLocator(DOCUMENT)
    assert locator.exact_line(("scorers", 3)) is None
    assert locator.exact_line(("not",)) is None


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (("experiment", "missing"), 4),
        (("scorers", 1, "threshold", "max"), 13),
        (("scorers", 1, "params", "words", 7), 19),
        (("nowhere", "at", "all"), None),
    ],
)
def test_a_path_not_written_falls_back_to_its_nearest_written_parent(
    path: KeyPath, line: int | None
) -> None:
    assert KeyLocator(DOCUMENT).line_of(path) == line


def test_quotes_around_a_multi_line_strings_end_are_content() -> None:
    text = 'a = """x""""\nb = 1\n'
    assert tomllib.loads(text)["a"] == 'x"'
    assert KeyLocator(text).exact_line(("b",)) == 2


def test_crlf_line_endings_count_lines_once() -> None:
    text = "[experiment]\r\nname = 'x'\r\n\r\n[[scorers]]\r\nuse = 'y'\r\n"
    locator = KeyLocator(text)
    assert locator.exact_line(("experiment", "name")) == 2
    assert locator.exact_line(("scorers", 0, "use")) == 5


def test_text_the_scanner_cannot_follow_keeps_the_lines_found_before() -> None:
    locator = KeyLocator("a = 1\n[[ ]]\nc = 2\n")
    assert locator.exact_line(("a",)) == 1
    assert locator.exact_line(("c",)) is None
