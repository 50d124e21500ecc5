"""Read-only subcommands: ``experiments``, ``show``, ``compare`` and ``scorers``."""

from __future__ import annotations

import argparse
import math
from typing import Any

from evalkit._ceilings import RUNS_LISTED, check_allowed, check_resamples_ceiling
from evalkit._counts import items_done
from evalkit._defaults import DEFAULT_MIN_PAIRED, DEFAULT_STORE
from evalkit.cli._exit import EXIT_FAILED_GATE, EXIT_OK
from evalkit.cli._format import json_text, one_line, text_table
from evalkit.cli._judges import judges_section
from evalkit.cli._slices import slices_table
from evalkit.compare import (
    LATEST,
    LATEST_COMPLETE,
    Comparison,
    baseline_for,
    compare_experiments,
    compare_judges,
    declared_slices,
    find_experiment,
    items_needed,
    minimum_detectable_drop,
    read_paired_scores,
    scorer_directions,
    stored_slices,
)
from evalkit.errors import BaselineError, ConfigError, StoreError
from evalkit.scorers import list_scorers
from evalkit.store import list_experiments as stored_experiments
from evalkit.store import read_gates, read_pin, read_scorer_summary


def cmd_experiments(args: argparse.Namespace) -> int:
    """List stored runs, newest first, with each scorer's mean."""
    store = args.store or DEFAULT_STORE
    check_allowed("--limit", args.limit, RUNS_LISTED)
    runs = stored_experiments(store, name=args.name, limit=args.limit).to_pylist()
    means: dict[str, list[str]] = {}
    for row in read_scorer_summary(store, [r["id"] for r in runs]):
        mean = "-" if row["mean"] is None else f"{row['mean']:.3f}"
        means.setdefault(row["experiment_id"], []).append(f"{row['scorer_id']}={mean}")
    if args.json:
        for run in runs:
            run["scorer_means"] = means.get(run["id"], [])
        print(json_text(runs))
        return EXIT_OK
    columns = ["name", "id", "started", "status", "verdict", "items", "failed", "scorer means"]
    rows = [
        [
            r["name"],
            r["id"],
            r["started_at"],
            r["status"],
            r["verdict"] or "-",
            items_done(r["succeeded_count"] + r["failed_count"], r["total_items"]),
            r["failed_count"],
            " ".join(means.get(r["id"], [])),
        ]
        for r in runs
    ]
    print(text_table(columns, rows) if rows else f"{one_line(store)}: no experiments")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    """One run's facts and its per-scorer summary from the ``scorer_summary`` view."""
    store = args.store or DEFAULT_STORE
    run = find_experiment(store, args.ref)
    if run is None:
        raise StoreError(f"{store}: no finished experiment yet")
    summary = read_scorer_summary(store, [run["id"]])
    gates = read_gates(store, run["id"])
    pin = read_pin(store, run["name"])
    if args.json:
        pinned = None if pin is None else pin.to_dict()
        print(json_text({**run, "scorers": summary, "gates": gates, "pinned_baseline": pinned}))
        return EXIT_OK
    for key in ("id", "name", "description", "status", "dataset", "dataset_fingerprint"):
        print(f"{key:>20}: {one_line(run.get(key)) or '-'}")
    done = items_done(run["succeeded_count"] + run["failed_count"], run["total_items"])
    print(f"{'items':>20}: {done} ({run['failed_count']} failed)")
    print(f"{'started':>20}: {run['started_at']}  completed: {run['completed_at'] or '-'}")
    print(f"{'verdict':>20}: {run.get('verdict') or '- (not judged)'}")
    if run.get("baseline_id"):
        why = f" ({one_line(run['baseline_reason'])})" if run.get("baseline_reason") else ""
        print(f"{'baseline':>20}: {one_line(run['baseline_id'])}{why}")
    elif run.get("baseline_reason"):
        print(f"{'baseline':>20}: - ({one_line(run['baseline_reason'])})")
    if pin is not None:
        mark = " (this run)" if pin.experiment_id == run["id"] else ""
        print(
            f"{'pinned baseline':>20}: {one_line(pin.experiment_id)}{mark} ({one_line(pin.reason)})"
        )
    columns = ["scorer", "n", "errors", "mean", "stddev", "ci95_low", "ci95_high", "pass_rate"]
    keys = ["scorer_id", "n", "errors", "mean", "stddev", "ci95_low", "ci95_high", "pass_rate"]
    print()
    print(text_table(columns, [[row[k] for k in keys] for row in summary]))
    if gates:
        print()
        columns = ["scorer", "gate", "mean", "Δ vs baseline", "p", "regression"]
        rows = [[g["scorer_id"], "passed" if g["passed"] else "failed", g["mean"], g["delta"],
                 g["p_value"], g["regression"] or "-"] for g in gates]  # fmt: skip
        print(text_table(columns, rows))
        for g in gates:
            for reason in g["reasons"]:
                print(f"{one_line(g['scorer_id'])}: {one_line(reason)}")
    return EXIT_OK


def comparison_table(comparison: Comparison) -> str:
    """A compare result as text: one line per scorer with Δ, its CI, p (with its Monte Carlo
    standard error when sampled) and the verdict."""
    columns = ["scorer", "paired", "baseline", "candidate", "Δ", "CI low", "CI high", "p"]
    columns += ["unpaired/failed", "detectable", "verdict"]
    rows = [
        [
            c.scorer_id,
            c.n_paired,
            c.baseline_mean,
            c.candidate_mean,
            c.difference,
            c.ci_low,
            c.ci_high,
            # A sampled p-value with its Monte Carlo standard error; an exact one alone.
            f"{c.p_value:.3g} ± {c.p_value_error:.1g}"
            if c.p_value is not None and c.p_value_error
            else c.p_value,
            f"{c.only_in_baseline + c.only_in_candidate}/{c.failed_in_either}",
            # The drop the comparison finds with 80% power (design/detectable-drop.md).
            c.detectable_drop,
            c.verdict,
        ]
        for c in comparison
    ]
    return text_table(columns, rows)


def _two_runs(args: argparse.Namespace, store: str, min_paired: float) -> tuple[Any, Any, Any]:
    """The baseline, the candidate and why that baseline, as ``compare`` and ``plan`` take
    them."""
    # For "latest", the candidate first: its baseline is chosen as evalkit run chooses it.
    named = None
    if args.baseline not in (LATEST, LATEST_COMPLETE):
        named = find_experiment(store, args.baseline)
    candidate = find_experiment(store, args.candidate, exclude=named["id"] if named else None)
    if candidate is None:
        raise StoreError(f"{store}: no finished experiment to compare")
    chosen = baseline_for(store, args.baseline, named, candidate, min_paired=min_paired)
    assert chosen.run is not None
    return chosen.run, candidate, chosen


def cmd_compare(args: argparse.Namespace) -> int:
    """Paired comparison of two stored runs; exit 1 when a scorer regressed, 2 when the runs
    do not pair (another dataset, no item in common, no scorer scored in both)."""
    store = args.store or DEFAULT_STORE
    # The rule of [regression] min_paired in an experiment file: a share, NaN and inf refused.
    if not 0.0 <= args.min_paired <= 1.0:
        raise ConfigError(
            f"--min-paired must be a number from 0 to 1, got {args.min_paired} (the share of"
            " the candidate's items the baseline must hold)"
        )
    if args.resamples < 1:
        raise ConfigError(f"--resamples must be at least 1, got {args.resamples}")
    check_resamples_ceiling("--resamples", args.resamples)
    baseline, candidate, chosen = _two_runs(args, store, args.min_paired)
    scores = read_paired_scores(store, baseline["id"], candidate["id"])
    # By the id each scorer is compared under: a candidate stored before the scorer id rule
    # has its prebuilt scorers' old ids (docs/pages/design/one-scorer-id-rule.md).
    directions = scorer_directions(store, candidate["id"], paired_with=baseline["id"])
    comparison = compare_experiments(
        *scores,
        directions=directions,
        max_drop=args.max_drop,
        confidence=args.confidence,
        resamples=args.resamples,
    )
    if all(c.verdict == "not_comparable" for c in comparison):
        raise BaselineError(
            args.baseline, "no item is scored by the same scorer in both runs (not comparable)"
        )
    keys = args.slices or declared_slices(candidate)
    slices = stored_slices(
        store, baseline["id"], candidate["id"], keys, directions=directions,
        max_drop=args.max_drop, confidence=args.confidence, resamples=args.resamples,
        overall=comparison, scores=scores,
    )  # fmt: skip
    # Only when a judge changed (or --judges): a comparison of runs with the same judges
    # prints what it always did (docs/pages/how-to/judge-agreement.md#comparing-two-judges).
    judges = compare_judges(store, baseline["id"], candidate["id"], unchanged=args.judges,
                            confidence=args.confidence)  # fmt: skip
    if args.json:
        print(
            json_text(
                {
                    "baseline": baseline["id"],
                    "baseline_reason": chosen.reason,
                    "candidate": candidate["id"],
                    **comparison.to_dict(),
                    "slices": [row.to_dict() for row in slices],
                    **({"judges": judges.to_dict()} if judges.scorers else {}),
                }
            )
        )
    else:
        print(
            f"baseline {one_line(baseline['name'])} ({one_line(baseline['id'])}) → "
            f"candidate {one_line(candidate['name'])} ({one_line(candidate['id'])});"
            f" baseline: {one_line(chosen.reason)}"
        )
        print(comparison_table(comparison))
        for c in comparison:
            if c.note is not None:
                print(f"{one_line(c.scorer_id)}: {c.note}")
            if c.power_note is not None:
                print(f"{one_line(c.scorer_id)}: {c.power_note}")
        if slices and (args.slices or args.slices_table):
            print(slices_table(slices))
        elif slices:
            print(slices_table(slices).splitlines()[-1])
        if judges.scorers:
            print(judges_section(judges))
    return EXIT_FAILED_GATE if comparison.regressed else EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    """Per scorer of two stored runs, the drop their comparison detects with ``--power`` and,
    with ``--drop``, the paired items detecting that drop needs
    (docs/pages/design/detectable-drop.md)."""
    store = args.store or DEFAULT_STORE
    if not 0.0 < args.confidence < 1.0:
        raise ConfigError(
            f"--confidence must be between 0 and 1 (exclusive), got {args.confidence}"
        )
    if not 0.0 < args.power < 1.0:
        raise ConfigError(f"--power must be between 0 and 1 (exclusive), got {args.power}")
    if args.drop is not None and not (math.isfinite(args.drop) and args.drop > 0.0):
        raise ConfigError(f"--drop must be a number above 0 (score units), got {args.drop}")
    baseline, candidate, chosen = _two_runs(args, store, DEFAULT_MIN_PAIRED)
    scores = read_paired_scores(store, baseline["id"], candidate["id"])
    directions = scorer_directions(store, candidate["id"], paired_with=baseline["id"])
    comparison = compare_experiments(*scores, directions=directions, confidence=args.confidence)
    rows = []
    for c in comparison:
        if c.n_paired == 0:
            continue
        detectable = minimum_detectable_drop(c, power=args.power)
        rows.append({
            "scorer_id": c.scorer_id, "n_paired": c.n_paired, "binary": c.binary,
            "changed_share": (c.worse + c.better) / c.n_paired,
            "difference_sd": c.difference_sd, "detectable_drop": detectable,
            "drop": args.drop,
            "items_needed": None if args.drop is None else items_needed(c, args.drop,
                                                                        power=args.power),
        })  # fmt: skip
    if args.json:
        print(json_text({"baseline": baseline["id"], "baseline_reason": chosen.reason,
                         "candidate": candidate["id"], "power": args.power,
                         "confidence": args.confidence, "scorers": rows}))  # fmt: skip
        return EXIT_OK
    print(
        f"baseline {one_line(baseline['name'])} ({one_line(baseline['id'])}) → "
        f"candidate {one_line(candidate['name'])} ({one_line(candidate['id'])});"
        f" baseline: {one_line(chosen.reason)}"
    )
    columns = ["scorer", "paired", "changed", "sd of Δ", f"detectable ({args.power:.0%} power)"]
    if args.drop is not None:
        columns.append(f"items for {args.drop:g}")
    lines = [
        [r["scorer_id"], r["n_paired"], f"{r['changed_share']:.1%}",
         "-" if r["difference_sd"] is None else f"{r['difference_sd']:.3g}",
         "-" if r["detectable_drop"] is None else f"{r['detectable_drop']:.3g}",
         *([] if args.drop is None else
           ["-" if r["items_needed"] is None else f"{r['items_needed']:,}"])]
        for r in rows
    ]  # fmt: skip
    print(text_table(columns, lines))
    return EXIT_OK


def cmd_scorers(args: argparse.Namespace) -> int:
    """List the prebuilt scorers with one-line descriptions."""
    infos = list_scorers(kind=args.kind)
    if args.json:
        print(json_text([info.to_dict() for info in infos]))
        return EXIT_OK
    columns = ["name", "kind", "better", "range", "description"]
    rows = [
        [
            i.name,
            i.kind,
            "higher" if i.higher_is_better else "lower",
            f"{i.range[0]:g}..{i.range[1]:g}",
            i.description,
        ]
        for i in infos
    ]
    print(text_table(columns, rows))
    return EXIT_OK
