"""Text matching scorers: ``exact_match``, ``contains`` and ``regex_match`` (scores 0 or 1)."""

from __future__ import annotations

import functools
import re
import string
import sys
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Literal

from evalkit._ceilings import MAX_REGEX_TIMEOUT
from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, clip, ground_truth, param_error, references
from evalkit.scorers._registry import prebuilt

_WHITESPACE = re.compile(r"\s+")


@functools.cache
def _punctuation_table() -> dict[int, None]:
    # ASCII punctuation (which includes symbols such as $ and +) plus every Unicode P* character;
    # built once, on first use, so str.translate removes them in one pass.
    marks = {ord(ch) for ch in string.punctuation}
    marks.update(
        code for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code))[0] == "P"
    )
    return dict.fromkeys(marks)


def text_normaliser(
    *, ignore_case: bool, ignore_whitespace: bool, ignore_punctuation: bool, strip: bool
) -> Callable[[str], str]:
    """One function applying the chosen normalisations, in a fixed order."""
    table = _punctuation_table() if ignore_punctuation else None

    def normalise(text: str) -> str:
        if table is not None:
            text = text.translate(table)
        if ignore_whitespace:
            text = _WHITESPACE.sub("", text)
        elif strip:
            text = text.strip()
        return text.casefold() if ignore_case else text

    return normalise


def _matched(key: str) -> Callable[[StepResults], float]:
    """A generate_score step: 1 when the preprocess result's ``key`` is set, else 0."""

    def score(results: StepResults) -> float:
        return 0.0 if results.preprocess_step_result[key] is None else 1.0

    return score


@prebuilt("exact_match", title="Exact Match", inputs=("output", "ground_truth"), version=1)
def exact_match(
    scorer: Scorer,
    *,
    ignore_case: bool = False,
    ignore_whitespace: bool = False,
    ignore_punctuation: bool = False,
    strip: bool = True,
) -> Scorer:
    """1 when the output equals the ground truth after the chosen normalisation, else 0.

    Range 0 or 1, higher is better. Needs the output and the ground truth; a list of strings as
    ground truth lists acceptable answers (any one matching scores 1). Non-string values are
    compared as canonical JSON text, so ``42`` matches ``"42"`` and dicts match regardless of
    key order. Two empty texts match; a missing ground truth fails the run.

    Args:
        ignore_case: Compare case-insensitively (Unicode case folding).
        ignore_whitespace: Remove all whitespace before comparing (``"New York"`` matches
            ``"NewYork"``).
        ignore_punctuation: Remove punctuation (ASCII punctuation and symbols, and every
            Unicode punctuation character) before comparing.
        strip: Trim leading and trailing whitespace (on by default).
    """
    normalise = text_normaliser(
        ignore_case=ignore_case,
        ignore_whitespace=ignore_whitespace,
        ignore_punctuation=ignore_punctuation,
        strip=strip,
    )

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        refs = references(ground_truth(run, "exact_match"), "exact_match")
        output = normalise(as_text(run.output))
        normalised = [normalise(ref) for ref in refs]
        matched = normalised.index(output) if output in normalised else None
        return {"output": output, "references": normalised, "matched": matched}

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        refs = pre["references"]
        if score:
            which = f" (reference #{pre['matched'] + 1} of {len(refs)})" if len(refs) > 1 else ""
            return f"The output matches the ground truth{which}."
        expected = clip(refs[0]) if len(refs) == 1 else f"any of {len(refs)} references"
        return f"The output {clip(pre['output'])} does not match {expected}."

    return scorer.preprocess(preprocess).generate_score(_matched("matched")).generate_reason(reason)


@prebuilt(
    "contains",
    title="Contains",
    inputs=("output", "ground_truth"),
    inputs_note="ground_truth unless `values` is given",
    version=1,
)
def contains(
    scorer: Scorer,
    *,
    values: Sequence[str] | None = None,
    mode: Literal["all", "any"] = "all",
    ignore_case: bool = False,
) -> Scorer:
    """1 when the output contains all (or any) of the expected strings, else 0.

    Range 0 or 1, higher is better. The strings are ``values`` when given, else the ground
    truth (a string, or each string of a list). Non-string outputs are searched as canonical
    JSON text. An empty expected string is contained in every output; an empty output contains
    nothing else. A missing ground truth (without ``values``) fails the run.

    Args:
        values: The strings to look for; when None, the ground truth is used.
        mode: ``"all"``: every string must occur; ``"any"``: one is enough.
        ignore_case: Search case-insensitively (Unicode case folding).
    """
    fold: Callable[[str], str] = str.casefold if ignore_case else str
    if values is not None and not values:
        raise param_error("contains", "values", "give at least one string, or leave it unset")
    fixed = tuple(values) if values is not None else None
    folded = tuple(fold(value) for value in fixed) if fixed is not None else None

    def preprocess(run: ScorerRun) -> dict[str, list[str]]:
        needles = (
            fixed if fixed is not None else references(ground_truth(run, "contains"), "contains")
        )
        keys = folded if folded is not None else tuple(fold(n) for n in needles)
        haystack = fold(as_text(run.output))
        found = [n for n, key in zip(needles, keys, strict=True) if key in haystack]
        missing = [n for n, key in zip(needles, keys, strict=True) if key not in haystack]
        return {"found": found, "missing": missing}

    def score(results: StepResults) -> float:
        pre = results.preprocess_step_result
        return float(not pre["missing"]) if mode == "all" else float(bool(pre["found"]))

    def reason(score: float, results: StepResults) -> str:
        found = results.preprocess_step_result["found"]
        missing = results.preprocess_step_result["missing"]
        total = len(found) + len(missing)
        text = f"Found {len(found)} of {total} expected strings ({mode} required)"
        if missing:
            text += "; missing: " + ", ".join(clip(m, 40) for m in missing[:5])
            text += f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        return text + "."

    return scorer.preprocess(preprocess).generate_score(score).generate_reason(reason)


@prebuilt(
    "regex_match",
    title="Regex Match",
    inputs=("output", "ground_truth"),
    inputs_note="ground_truth (the pattern) unless `pattern` is given",
    version=2,
)
def regex_match(
    scorer: Scorer,
    *,
    pattern: str | None = None,
    full_match: bool = False,
    ignore_case: bool = False,
    multiline: bool = False,
    dotall: bool = False,
    timeout: float = 1.0,
) -> Scorer:
    r"""1 when a regular expression matches the output, else 0.

    Range 0 or 1, higher is better. The pattern is ``pattern`` when given (compiled once),
    else the ground truth (a pattern, or a list of alternative patterns, any of which may
    match; compiled once per distinct pattern). Python ``re`` syntax, matched by the ``regex``
    package in its ``re``-compatible mode (which also accepts its extensions, such as
    ``\p{L}``). Non-string outputs are matched against their canonical JSON text; an empty
    output is matched as ``""``. A missing ground truth, an invalid ground-truth pattern, or a
    match that takes longer than ``timeout`` (catastrophic backtracking, as ``(a+)+$`` can
    cause) fails that item's run; the run goes on.

    Args:
        pattern: The regular expression; when None, the ground truth is the pattern.
        full_match: Require the whole output to match (``re.fullmatch``) instead of a match
            anywhere in it (``re.search``).
        ignore_case: Match case-insensitively (``re.IGNORECASE``).
        multiline: ``^`` and ``$`` match at every line (``re.MULTILINE``).
        dotall: ``.`` matches newlines too (``re.DOTALL``).
        timeout: Seconds one pattern may take to match one output.
    """
    # The regex engine: re's syntax and results, and a time limit on each match, which re
    # has not (docs/pages/design/regex-engine-with-a-timeout.md). Imported here: 10 ms.
    import regex

    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise param_error("regex_match", "timeout", f"expected positive seconds, got {timeout!r}")
    if not timeout <= MAX_REGEX_TIMEOUT:
        raise param_error(
            "regex_match", "timeout", f"expected at most {MAX_REGEX_TIMEOUT:g} s, got {timeout!r}"
        )
    flags = (
        regex.VERSION0
        | (regex.IGNORECASE if ignore_case else 0)
        | (regex.MULTILINE if multiline else 0)
        | (regex.DOTALL if dotall else 0)
    )
    fixed: tuple[Any, ...] | None = None
    if pattern is not None:
        try:
            fixed = (regex.compile(pattern, flags),)
        except regex.error as exc:
            raise param_error(
                "regex_match", "pattern", f"invalid regular expression: {exc}"
            ) from None
    field = "ground_truth" if pattern is None else "pattern"
    seconds = float(timeout)

    @functools.lru_cache(maxsize=512)
    def compile_row(text: str) -> Any:
        try:
            return regex.compile(text, flags)
        except regex.error as exc:
            raise ScorerInputError(
                "regex_match", "ground_truth", f"invalid regular expression {clip(text)}: {exc}"
            ) from None

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        patterns = fixed
        if patterns is None:
            refs = references(ground_truth(run, "regex_match"), "regex_match")
            patterns = tuple(compile_row(ref) for ref in refs)
        output = as_text(run.output)
        for compiled in patterns:
            match = compiled.fullmatch if full_match else compiled.search
            try:
                found = match(output, timeout=seconds)
            except TimeoutError:
                raise ScorerInputError(
                    "regex_match",
                    field,
                    f"the regular expression {clip(compiled.pattern)} took longer than "
                    f"{seconds:g} s to match a {len(output):,}-character output (catastrophic "
                    "backtracking?); simplify it or raise the scorer's timeout",
                ) from None
            if found is not None:
                return {"pattern": compiled.pattern, "match": found.group(0)}
        tried = [p.pattern for p in patterns]
        return {"pattern": tried[0] if len(tried) == 1 else tried, "match": None}

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        verb = "fully match" if full_match else "match"
        if score:
            return f"The output {verb}es {clip(pre['pattern'])}: {clip(pre['match'])}."
        patterns = pre["pattern"]
        what = clip(patterns) if isinstance(patterns, str) else f"any of {len(patterns)} patterns"
        return f"The output does not {verb} {what}."

    return scorer.preprocess(preprocess).generate_score(_matched("match")).generate_reason(reason)
