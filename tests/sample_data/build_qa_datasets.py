"""Build the sample QA datasets ``datasets/qa_v1.parquet`` and ``datasets/qa_v2.parquet``.

Run from the repository root: ``python -m tests.sample_data.build_qa_datasets``. The output is
deterministic; ``tests/sample_data/test_qa_datasets.py`` checks that the committed files are
what this builds.

Both files hold the same questions (``id``, ``input``, ``groundTruth``, ``metadata``) with the
answers of two versions of a support assistant in ``output``:

- **v1** answers most questions exactly, some in a full sentence, and gets a few wrong.
- **v2** is v1 after a (fictional) retrieval change that lost the billing and account pages:
  most billing and account answers become stale or evasive, while a handful of general
  knowledge answers v1 got wrong are fixed. Quality drops a few points overall, which a
  threshold alone misses and the regression gate catches.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.sample_data.qa_facts import BOOKS, CAPITALS, ELEMENTS, PRODUCT, TRIVIA

SEED = 20240601
REGRESSED_CATEGORIES = frozenset({"billing", "account"})

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("input", pa.string()),
        ("groundTruth", pa.string()),
        ("output", pa.string()),
        (
            "metadata",
            pa.struct(
                [("category", pa.string()), ("domain", pa.string()), ("difficulty", pa.string())]
            ),
        ),
    ]
)

HEDGES = [
    "I'm not sure.",
    "I don't have that information.",
    "Sorry, I couldn't find an answer to that.",
]
SUPPORT_HEDGES = [
    "I'm not sure. Please contact Nimbus support for billing and account questions.",
    "I couldn't find that in the Help Center. Please contact support@nimbusnotes.example.",
    "Sorry, I don't have information about that.",
]
PRODUCT_SENTENCES = [
    "{answer}.",
    "Sure! {answer}.",
    "According to the Nimbus Help Center: {answer}.",
    "{answer}. Let me know if you need anything else!",
]


def _question(
    category: str, domain: str, question: str, answer: str, wrong: str, sentence: str
) -> dict[str, Any]:
    return {
        "category": category,
        "domain": domain,
        "input": question,
        "groundTruth": answer,
        "wrong": wrong,
        "sentence": sentence,
    }


def questions(rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for category, question, answer, wrong in PRODUCT:
        sentence = rng.choice(PRODUCT_SENTENCES)
        rows.append(_question(category, "product", question, answer, wrong, sentence))
    capital_templates = [
        "What is the capital of {x}?",
        "Which city is the capital of {x}?",
        "Name the capital city of {x}.",
    ]
    for country, capital, mistake in CAPITALS:
        wrong = mistake or rng.choice([c for _, c, _ in CAPITALS if c != capital])
        rows.append(
            _question(
                "geography",
                "general",
                rng.choice(capital_templates).format(x=country),
                capital,
                wrong,
                f"The capital of {country} is {{answer}}.",
            )
        )
    for element, symbol in ELEMENTS:
        wrong = rng.choice([s for _, s in ELEMENTS if s != symbol])
        rows.append(
            _question(
                "chemistry",
                "general",
                f"What is the chemical symbol for {element}?",
                symbol,
                wrong,
                f"The chemical symbol for {element} is {{answer}}.",
            )
        )
    for book, author in BOOKS:
        wrong = rng.choice([a for _, a in BOOKS if a != author])
        template = rng.choice(["Who wrote {x}?", "Who is the author of {x}?"])
        rows.append(
            _question(
                "literature",
                "general",
                template.format(x=f"'{book}'"),
                author,
                wrong,
                f"'{book}' was written by {{answer}}.",
            )
        )
    for category, question, answer, wrong in TRIVIA:
        sentence = rng.choice(["The answer is {answer}.", "It's {answer}.", "{answer}."])
        rows.append(_question(category, "general", question, answer, wrong, sentence))
    rows.extend(_arithmetic(rng))
    return rows


def _arithmetic(rng: random.Random) -> list[dict[str, Any]]:
    conversions = [
        ("How many centimetres are in {n} metres?", 100, "cm"),
        ("How many minutes are in {n} hours?", 60, "minutes"),
        ("How many grams are in {n} kilograms?", 1000, "g"),
        ("How many seconds are in {n} minutes?", 60, "seconds"),
        ("How many millilitres are in {n} litres?", 1000, "ml"),
    ]
    rows: dict[str, dict[str, Any]] = {}  # by question: random draws may repeat one
    while len(rows) < 20:
        a, b = rng.randint(12, 99), rng.randint(3, 19)
        question = f"What is {a} × {b}?"  # noqa: RUF001
        rows[question] = _math(question, a * b, a * b + rng.choice([-10, 10, b, -b]))
    while len(rows) < 32:
        percent, whole = rng.choice([5, 10, 15, 20, 25, 40, 75]), rng.randint(2, 40) * 20
        value = whole * percent // 100
        question = f"What is {percent}% of {whole}?"
        rows[question] = _math(question, value, value + rng.choice([-5, 5]))
    while len(rows) < 52:
        template, factor, unit = conversions[len(rows) % len(conversions)]
        n = rng.randint(2, 12)
        question = template.format(n=n)
        row = _math(question, 0, 0)
        row.update(
            groundTruth=f"{n * factor} {unit}", wrong=f"{n * factor // 10} {unit}", category="units"
        )
        rows[question] = row
    return list(rows.values())


def _math(question: str, answer: int, wrong: int) -> dict[str, Any]:
    return _question(
        "math", "general", question, str(answer), str(wrong), "The answer is {answer}."
    )


def v1_answer(row: dict[str, Any], rng: random.Random) -> str:
    answer: str = row["groundTruth"]
    draw = rng.random()
    if draw < 0.56:
        return answer
    if draw < 0.64:
        return answer.lower() if draw < 0.60 else f"{answer}."
    if draw < 0.84:
        return str(row["sentence"]).format(answer=answer)
    if draw < 0.91:
        return str(row["wrong"])
    if draw < 0.96:
        # A truncated answer: the first word, unless that is only an article.
        words = answer.split()
        if len(words) > 1 and words[0].lower() not in ("the", "a", "an"):
            return words[0]
        return str(row["wrong"])
    return rng.choice(HEDGES)


def v2_answer(row: dict[str, Any], v1: str, rng: random.Random) -> str:
    draw = rng.random()
    if row["category"] in REGRESSED_CATEGORIES:
        if draw < 0.5:
            return str(row["wrong"])
        if draw < 0.85:
            return rng.choice(SUPPORT_HEDGES)
        return v1
    if v1 != row["groundTruth"] and row["groundTruth"] not in v1 and draw < 0.15:
        return str(row["groundTruth"])
    return v1


def difficulty(row: dict[str, Any], rng: random.Random) -> str:
    if row["category"] in ("geography", "chemistry", "math"):
        return rng.choice(["easy", "easy", "medium"])
    return rng.choice(["easy", "medium", "medium", "hard"])


def build() -> tuple[pa.Table, pa.Table]:
    rng = random.Random(SEED)
    rows = questions(rng)
    rng.shuffle(rows)
    v1_rows, v2_rows = [], []
    for number, row in enumerate(rows, start=1):
        base = {
            "id": f"qa-{number:04d}",
            "input": row["input"],
            "groundTruth": row["groundTruth"],
            "metadata": {
                "category": row["category"],
                "domain": row["domain"],
                "difficulty": difficulty(row, rng),
            },
        }
        v1 = v1_answer(row, rng)
        v1_rows.append({**base, "output": v1})
        v2_rows.append({**base, "output": v2_answer(row, v1, rng)})
    return pa.Table.from_pylist(v1_rows, SCHEMA), pa.Table.from_pylist(v2_rows, SCHEMA)


def main() -> None:
    folder = Path("datasets")
    v1, v2 = build()
    for name, table in (("qa_v1.parquet", v1), ("qa_v2.parquet", v2)):
        pq.write_table(table, folder / name, compression="zstd")
        print(f"wrote {folder / name}: {table.num_rows} rows")


if __name__ == "__main__":
    main()
