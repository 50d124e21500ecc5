"""Build the labelled sample ``datasets/judge_agreement.parquet`` and the judge's scripted
replies ``datasets/judge_agreement_replies.json``.

Run from the repository root: ``python -m tests.sample_data.build_judge_agreement``. The output
is deterministic; ``tests/sample_data/test_judge_agreement.py`` checks that the committed files
are what this builds.

The questions are those of ``qa_v1.parquet``; ``output`` is the answer of a (fictional) third
version of the Nimbus Notes support assistant, in one of a few styles (``metadata.style``):
complete and friendly, reworded (right, in other words than the reference's, which a string
check misses), bare, hedged, curt, cut short, wrong, or evasive. Two people (``human_a``,
``human_b``) rated each answer ``bad``, ``ok`` or ``good`` against one rubric (:data:`RUBRIC`).
They disagree where people do: B wants whole sentences and penalises a curt tone, both slip
now and then, and B left a few answers unrated (empty cells). The LLM judge's reply to each
item (``llm_rubric``'s ``{"reasoning", "score"}``) is scripted for the local test server, with
a judge's typical biases: it rewards a correct answer whatever its tone, is lenient with bare
answers and sometimes falls for a confident near-miss, so it agrees with the people only
moderately (weighted kappa about 0.6 with their consensus). For :data:`NOISY_SHARE` of the
items the reply is drawn between two scores at each call (a rule with ``probability`` 0.5,
then the other), so repeated judgements of the same pair can disagree.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.sample_data.build_qa_datasets import HEDGES, questions
from tests.sample_data.build_qa_datasets import SEED as QA_SEED

SEED = 20240918
LEVELS = ("bad", "ok", "good")
#: The rubric the people rated against, and ``llm_rubric``'s in the sample experiment.
RUBRIC = (
    "The answer is correct (it agrees with the reference answer) and helpful: clear, complete "
    "and polite. good: correct and clear. ok: correct but bare, hedged or curt. bad: wrong, "
    "cut short, evasive or rude."
)
#: The share of items whose judge reply is drawn between two scores at each call.
NOISY_SHARE = 0.12
#: The share of the answers that can be reworded (see ``_reworded``) that are.
REWORDED_SHARE = 0.5
#: Items B left unrated.
UNRATED_BY_B = 8

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("input", pa.string()),
        ("groundTruth", pa.string()),
        ("output", pa.string()),
        ("human_a", pa.string()),
        ("human_b", pa.string()),
        ("metadata", pa.struct([("category", pa.string()), ("style", pa.string())])),
    ]
)

# style: (its weight, rater A's and rater B's chances of bad/ok/good, the judge's scores and
# their weights, and the judge's reasoning).
STYLES: dict[str, dict[str, Any]] = {
    "complete": {
        "weight": 34,
        "a": (0.0, 0.05, 0.95),
        "b": (0.0, 0.1, 0.9),
        "judge": ((1.0, 6), (0.9, 3), (0.7, 1)),
        "reason": "The answer gives the reference answer, {truth}, in a clear, friendly sentence.",
    },
    "reworded": {  # see _reworded and REWORDED_SHARE; a string check misses it
        "weight": 0,
        "a": (0.0, 0.1, 0.9),
        "b": (0.0, 0.15, 0.85),
        "judge": ((1.0, 5), (0.9, 4), (0.6, 1)),
        "reason": "The answer says {truth} in other words, clearly and politely.",
    },
    "bare": {
        "weight": 14,
        "a": (0.0, 0.4, 0.6),
        "b": (0.05, 0.65, 0.3),
        "judge": ((1.0, 2), (0.8, 2), (0.6, 6)),
        "reason": "The answer is correct ({truth}) but gives nothing beyond it.",
    },
    "hedged": {
        "weight": 12,
        "a": (0.1, 0.8, 0.1),
        "b": (0.35, 0.65, 0.0),
        "judge": ((0.8, 2), (0.6, 7), (0.3, 1)),
        "reason": "The answer states {truth}, which is right, but doubts itself.",
    },
    "curt": {
        "weight": 8,
        "a": (0.1, 0.7, 0.2),
        "b": (0.6, 0.4, 0.0),
        "judge": ((0.9, 5), (0.6, 4), (0.2, 1)),
        "reason": "The answer is correct: {truth}. The tone is short but the content is right.",
    },
    "partial": {
        "weight": 8,
        "a": (0.6, 0.4, 0.0),
        "b": (0.75, 0.25, 0.0),
        "judge": ((0.5, 4), (0.2, 4), (0.0, 2)),
        "reason": "The answer only gives part of the reference answer, {truth}.",
    },
    "wrong": {
        "weight": 16,
        "a": (0.95, 0.05, 0.0),
        "b": (0.9, 0.1, 0.0),
        "judge": ((0.0, 8), (0.1, 1), (0.7, 1)),
        "reason": "The answer contradicts the reference answer, {truth}.",
    },
    "evasive": {
        "weight": 8,
        "a": (0.9, 0.1, 0.0),
        "b": (0.95, 0.05, 0.0),
        "judge": ((0.0, 5), (0.2, 4), (0.5, 1)),
        "reason": "The answer does not answer the question; the reference is {truth}.",
    },
}
#: A person's slip: the label given at random instead of the considered one.
SLIP = 0.03

COMPLETE = [
    "Happy to help! {sentence}",
    "{sentence} Let me know if you need anything else!",
    "Good question. {sentence}",
    "{sentence} I hope that helps!",
]
HEDGED = [
    "I think it's {answer}, but I'm not completely sure.",
    "Possibly {answer}? You may want to double-check that.",
    "If I remember correctly, {answer}. Please verify it.",
]
CURT = [
    "{answer}. It's in the Help Center.",
    "{answer}. You could have looked that up.",
    "Obviously {answer}.",
]


def _sentence(row: dict[str, Any], answer: str) -> str:
    text = str(row["sentence"]).format(answer=answer)
    return text if text.endswith((".", "!", "?")) else f"{text}."


_UNITS = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
]  # fmt: skip
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_NUMBER = re.compile(r"\$?\b(\d+)\b")
_QUANTITY = re.compile(r"\$?\d+(?: [A-Za-z]+)*")


def _words(number: int) -> str:
    if number < 20:
        return _UNITS[number]
    if number == 100:
        return "one hundred"
    tens, units = divmod(number, 10)
    return _TENS[tens] + (f"-{_UNITS[units]}" if units else "")


def _reworded(truth: str) -> str | None:
    """The answer in other words than the reference's, when there is an obvious way: a menu
    path spelled out, yes or no in a sentence, small numbers (and dollars) in words."""
    if " > " in truth and "," not in truth:
        return "Open " + truth.replace(" > ", ", then ") + "."
    if truth in ("Yes", "No"):
        return "That's right, yes." if truth == "Yes" else "I'm afraid not."
    # A quantity ("25 MB", "$8", "14 days"), not a version ("Android 10") or a percentage.
    if not _QUANTITY.fullmatch(truth) or max(map(int, _NUMBER.findall(truth))) > 100:
        return None

    def spelled(found: re.Match[str]) -> str:
        words = _words(int(found[1]))
        return f"{words} dollars" if found[0].startswith("$") else words

    return f"It's {_NUMBER.sub(spelled, truth)}."


def _output(row: dict[str, Any], style: str, rng: random.Random) -> str:
    truth = str(row["groundTruth"])
    if style == "reworded":
        return rng.choice(COMPLETE).format(sentence=_reworded(truth))
    if style == "complete":
        return rng.choice(COMPLETE).format(sentence=_sentence(row, truth))
    if style == "bare":
        return truth
    if style == "hedged":
        return rng.choice(HEDGED).format(answer=truth)
    if style == "curt":
        return rng.choice(CURT).format(answer=truth)
    if style == "partial":
        return truth.split()[0] + " …"
    if style == "wrong":
        return _sentence(row, str(row["wrong"]))
    return rng.choice(HEDGES)


def _style(row: dict[str, Any], rng: random.Random) -> str:
    truth = str(row["groundTruth"])
    if _reworded(truth) is not None and rng.random() < REWORDED_SHARE:
        return "reworded"
    names = [name for name in STYLES if name != "reworded"]
    if len(truth.split()) < 2:  # one word cannot be cut short
        names.remove("partial")
    return rng.choices(names, weights=[STYLES[name]["weight"] for name in names])[0]


def _label(chances: tuple[float, float, float], rng: random.Random) -> str:
    if rng.random() < SLIP:
        return rng.choice(LEVELS)
    return rng.choices(LEVELS, weights=chances)[0]


def _score(style: str, rng: random.Random) -> float:
    scores, weights = zip(*STYLES[style]["judge"], strict=True)
    return float(rng.choices(scores, weights=weights)[0])


def _other_score(score: float, rng: random.Random) -> float:
    """A second score a noisy judge gives the same pair: one level up or down, as it hesitates."""
    if score >= 0.75:
        return rng.choice([0.6, 0.7])
    if score <= 0.25:
        return rng.choice([0.4, 0.5])
    return rng.choice([0.2, 0.9])


def _reply(reason: str, score: float) -> dict[str, Any]:
    return {"reasoning": reason, "score": score}


def build() -> tuple[pa.Table, list[dict[str, Any]]]:
    """The dataset and the rules file's content (a JSON list of rules)."""
    rng = random.Random(SEED)
    rows = questions(random.Random(QA_SEED))
    rng.shuffle(rows)
    items, rules = [], []
    unrated = set(rng.sample(range(len(rows)), UNRATED_BY_B))
    noisy = set(rng.sample(range(len(rows)), round(NOISY_SHARE * len(rows))))
    for index, row in enumerate(rows):
        style = _style(row, rng)
        spec = STYLES[style]
        items.append(
            {
                "id": f"ja-{index + 1:04d}",
                "input": row["input"],
                "groundTruth": row["groundTruth"],
                "output": _output(row, style, rng),
                "human_a": _label(spec["a"], rng),
                "human_b": None if index in unrated else _label(spec["b"], rng),
                "metadata": {"category": row["category"], "style": style},
            }
        )
        # The question is what makes an item's prompt unique (the answers repeat: "Yes").
        match = f"<task>\n{row['input']}\n</task>"
        reason = str(spec["reason"]).format(truth=row["groundTruth"])
        score = _score(style, rng)
        if index in noisy:
            rules.append({"match": match, "reply": _reply(reason, score), "probability": 0.5})
            score = _other_score(score, rng)
        rules.append({"match": match, "reply": _reply(reason, score)})
    return pa.Table.from_pylist(items, SCHEMA), rules


def main() -> None:
    folder = Path("datasets")
    table, rules = build()
    pq.write_table(table, folder / "judge_agreement.parquet", compression="zstd")
    replies = folder / "judge_agreement_replies.json"
    text = "[\n" + ",\n".join(json.dumps(rule, ensure_ascii=False) for rule in rules) + "\n]\n"
    replies.write_text(text, encoding="utf-8")
    print(f"wrote {folder / 'judge_agreement.parquet'}: {table.num_rows} rows")
    print(f"wrote {replies}: {len(rules)} rules")


if __name__ == "__main__":
    main()
