"""``evalkit diff BASELINE CANDIDATE``: the items whose score changed, largest drop first, then
(a candidate with human labels) the items where its judge and the people disagree most."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from evalkit._ceilings import ROWS, check_allowed
from evalkit._defaults import DEFAULT_MIN_PAIRED
from evalkit._json import stored_string
from evalkit._scorer_ids import unknown_id
from evalkit.cli._exit import EXIT_OK
from evalkit.cli._format import cell, json_text, one_line, text_table
from evalkit.errors import ConfigError, StoreError


def add_diff_command(commands: Any, add_store: Any) -> None:
    """Register ``evalkit diff``."""
    diff = commands.add_parser(
        "diff", help="list the items whose score changed between two runs, largest drop first"
    )
    diff.add_argument(
        "baseline",
        help="the baseline run: id, prefix or name; latest for the run evalkit run would judge"
        " the candidate against (its name's newest passing run, or the pinned one)",
    )
    diff.add_argument("candidate", help="the candidate run: id, prefix or name")
    add_store(diff)
    diff.add_argument("--scorer", metavar="ID", help="only this scorer's pairs")
    diff.add_argument(
        "--slice",
        metavar="KEY[=VALUE]",
        help="KEY=VALUE: only items whose metadata KEY has this VALUE (the counts too);"
        " KEY: the changed pairs per value of KEY, and KEY as a column",
    )
    diff.add_argument("--search", metavar="TEXT", help="only items whose text contains TEXT")
    diff.add_argument("--limit", type=int, default=20, help="pairs to list (20; 0 for none)")
    diff.add_argument("--offset", type=int, default=0, help="skip this many pairs first")
    diff.add_argument("--improved", action="store_true", help="list the improvements instead")
    diff.add_argument("--json", action="store_true", help="print JSON")
    diff.set_defaults(handler=cmd_diff)


def _slice(text: str | None) -> tuple[str | None, str | None]:
    """``--slice``'s key and value: ``(key, None)`` for a bare key (group by it)."""
    if text is None:
        return None, None
    key, sep, value = text.partition("=")
    if not key.strip():
        raise ConfigError(
            f"--slice must be KEY or KEY=VALUE (a metadata key, and a value of it), got {text!r}"
        )
    return key.strip(), value if sep else None


def cmd_diff(args: argparse.Namespace) -> int:
    """Print the changed pairs of two stored runs; always exits 0 (a listing, not a gate)."""
    from evalkit._defaults import DEFAULT_STORE
    from evalkit.compare import (
        LATEST,
        LATEST_COMPLETE,
        Baseline,
        baseline_for,
        changes_by_slice,
        declared_slices,
        diff_items,
        find_experiment,
        scorer_directions,
    )

    store = args.store or DEFAULT_STORE
    check_allowed("--limit", args.limit, ROWS)
    check_allowed("--offset", args.offset, ROWS)
    key, value = _slice(args.slice)
    # For "latest", the candidate first: its baseline is chosen as evalkit run chooses it
    # (the newest passing run of its name, or the pin), never the candidate itself.
    named = None
    if args.baseline not in (LATEST, LATEST_COMPLETE):
        named = find_experiment(store, args.baseline)
    candidate = find_experiment(store, args.candidate, exclude=named["id"] if named else None)
    if candidate is None:
        raise StoreError(f"{store}: no finished experiment to diff")
    # A run named explicitly is listed against whatever it holds (as before); "latest" is
    # chosen with the pairing rule of evalkit run (the default [regression] min_paired).
    if named is not None:
        chosen = Baseline(named, reason="named explicitly")
    else:
        chosen = baseline_for(store, args.baseline, None, candidate, min_paired=DEFAULT_MIN_PAIRED)
    baseline = chosen.run
    assert baseline is not None
    if args.scorer is not None:
        known = [
            *scorer_directions(store, candidate["id"]),
            *scorer_directions(store, baseline["id"]),
        ]
        if args.scorer not in known:
            raise unknown_id("--scorer", args.scorer, list(dict.fromkeys(known)))
    # A bare --slice KEY groups by the key (first among the slices, and a column of the
    # list); KEY=VALUE keeps the slice's items, and the summary counts only them.
    group = key if value is None else None
    key = None if group else key
    slices = list(dict.fromkeys([*([group] if group else []), *declared_slices(candidate)]))
    diff = diff_items(
        store, baseline["id"], candidate["id"], scorer=args.scorer, slice_key=key,
        slice_value=value, improved=args.improved, search=args.search, offset=args.offset,
        limit=args.limit, slices=slices,
    )  # fmt: skip
    # The summary line counts every changed pair of the scorer (in the slice, with KEY=VALUE):
    # the page's own counts when no other filter narrowed it, else one count-only query.
    narrowed = args.search is not None or args.improved
    everything = diff
    if narrowed:
        everything = diff_items(store, baseline["id"], candidate["id"], scorer=args.scorer,
                                slice_key=key, slice_value=value, limit=0)  # fmt: skip
    dropped = everything.dropped
    by_slice = {
        k: changes_by_slice(store, baseline["id"], candidate["id"], k, scorer=args.scorer)
        for k in slices
    }
    if group is not None and all(row is None for row in by_slice[group]["value"]):
        raise ConfigError(
            f"--slice {group!r}: no paired item of the two runs has this metadata key"
            " (give a key of the dataset's metadata, e.g. one the run declared in slices)"
        )
    disagreeing = _disagreements(store, baseline["id"], candidate, scorer=args.scorer)
    if args.json:
        print(json_text({
            "baseline": baseline["id"], "baseline_reason": chosen.reason,
            "candidate": candidate["id"], "total": diff.total,
            "slice": None if key is None else {"key": key, "value": value},
            "grouped_by": group,
            "changed": everything.total, "dropped": dropped,
            "improved": everything.improved,
            "only_in_baseline": diff.only_in_baseline,
            "only_in_candidate": diff.only_in_candidate,
            "by_slice": {k: frame.to_dict(orient="records") for k, frame in by_slice.items()},
            "pairs": diff.pairs.to_dict(orient="records"),
            "disagreements": disagreeing,
        }))  # fmt: skip
        return EXIT_OK
    print(
        f"baseline {one_line(baseline['name'])} ({one_line(baseline['id'])}) → "
        f"candidate {one_line(candidate['name'])} ({one_line(candidate['id'])});"
        f" baseline: {one_line(chosen.reason)}"
    )
    scope = f" for {one_line(args.scorer)}" if args.scorer else ""
    if key is not None:
        scope += f" in {one_line(key)}={one_line(value or '')}"
    whole = " (whole runs)" if key is not None else ""
    print(
        f"{everything.total} pairs changed{scope}: {dropped} dropped, "
        f"{everything.improved} improved; items only in the baseline{whole}: "
        f"{diff.only_in_baseline}, only in the candidate: {diff.only_in_candidate}"
    )
    if group is not None:
        rows = [
            [cell(row["value"]) or "(none)", int(row["pairs"]), int(row["dropped"]),
             int(row["improved"])]
            for row in by_slice[group].to_dict(orient="records")
        ]  # fmt: skip
        print(text_table([one_line(group), "pairs", "dropped", "improved"], rows))
    for k, frame in by_slice.items():
        if k == group:
            continue
        parts = [
            f"{cell(row['value']) or '(none)'} {int(row['dropped'])}"
            for row in frame.to_dict(orient="records")
            if row["dropped"]
        ]
        print(f"dropped pairs by {one_line(k)}{whole}: " + (", ".join(parts) if parts else "none"))
    if args.limit != 0:
        _print_pairs(args, diff, slices)
    if disagreeing:
        _print_disagreements(disagreeing)
    return EXIT_OK


def _print_pairs(args: argparse.Namespace, diff: Any, slices: list[str]) -> None:
    what = "improved" if args.improved else "changed"
    if diff.pairs.empty:
        print(f"no {what} pair matches")
        return
    columns = ["item", "scorer", "baseline", "candidate", "Δ", *slices,
               "baseline output", "candidate output"]  # fmt: skip
    rows = [
        [p["item_id"], p["scorer_id"], p["baseline_score"], p["candidate_score"],
         f"{p['delta']:+.3f}", *(p[f"slice:{k}"] for k in slices),
         stored_string(p["baseline_output"]), stored_string(p["candidate_output"])]
        for p in diff.pairs.to_dict(orient="records")
    ]  # fmt: skip
    print(text_table(columns, rows))
    cut = [
        f"{one_line(p['item_id'])} {one_line(p['scorer_id'])} ({side})"
        for p in diff.pairs.to_dict(orient="records")
        for side in ("baseline", "candidate")
        if p[f"{side}_reason_truncated"]
    ]
    if cut:
        print("reasons cut at the judge's token limit (truncated): " + ", ".join(cut))
    shown = len(diff.pairs)
    if args.offset + shown < diff.total:
        print(
            f"{args.offset + 1}-{args.offset + shown} of {diff.total} {what} pairs; "
            f"--offset {args.offset + shown} for the next, or evalkit view to browse them all"
        )


def _disagreements(
    store: str, baseline_id: str, candidate: Mapping[str, Any], *, scorer: str | None
) -> list[dict[str, Any]]:
    """The pairs where the candidate's judge and its human labels differ most (those a report
    lists), per labelled scorer (only ``scorer`` if given), with the baseline's score of the
    item (None where it has none); none when the candidate has no labels."""
    from evalkit.agreement import agreement_from_store
    from evalkit.report._agreement import agreement_views
    from evalkit.store import read_item_scores

    measured, _ = agreement_from_store(store, candidate, scorer=scorer)
    if not measured:
        return []
    before = read_item_scores(store, baseline_id).select(["scorer_id", "item_id", "score"])
    scores = {(s, i): v for s, i, v in zip(*before.to_pydict().values(), strict=True)}
    rows = []
    for m, view in zip(measured.values(), agreement_views(measured, {}), strict=True):
        rows += [
            {"scorer_id": m.scorer_id, "item_id": d.item_id, "label": d.label,
             "label_text": shown.label_text,
             "baseline_score": scores.get((m.scorer_id, d.item_id)),
             "score": d.score, "reason": d.reason, "reason_truncated": d.reason_truncated}
            for d, shown in zip(m.disagreements, view.disagreements, strict=True)
        ]  # fmt: skip
    return rows


def _print_disagreements(rows: list[dict[str, Any]]) -> None:
    print("where the candidate's judge and the human labels disagree most:")
    columns = ["scorer", "item", "human label", "baseline", "candidate", "judge's reason"]
    print(text_table(columns, [
        [r["scorer_id"], r["item_id"], r["label_text"], r["baseline_score"], r["score"],
         f"(truncated) {r['reason']}" if r["reason_truncated"] and r["reason"] else r["reason"]]
        for r in rows
    ]))  # fmt: skip
