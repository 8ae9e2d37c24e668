"""How the support check's weights were chosen: a seeded hill climb on the development splits only.

    python -m bench.tune_support DIR [--iterations 220] [--seed 2]

DIR holds the rows `python -m bench.data.convert --full DIR` writes; only `wice.dev.jsonl`, `ocnli.train.10k.jsonl`
and the own pairs are read (the held-out splits never are). Each step moves three of the weights below by a
Gaussian step within their range and keeps the move when WiCE dev AUROC + ½ OCNLI train AUROC rises while the own
pairs' AUROC stays ≥ 0.97. It prints every kept step; the node ships the last one, rounded, as
citations/support/weights.py's SHIPPED (docs/support-check.md). Each step's weights are a new `Weights` object,
`replace(DEFAULT_WEIGHTS, …)` (as dataclasses.replace), passed to the check: nothing is patched, and nothing the
check caches depends on a weight.
"""

import argparse
import random
from pathlib import Path

from bench.support import auroc, labelled_pairs, public_rows, scored, scored_rows
from citations.support.weights import DEFAULT_WEIGHTS, Weights, replace

# the weights searched (names of `Weights`) and their ranges
SPACE = {
    "missing_exact": (0.2, 0.7),
    "missing_decay": (0.7, 0.97),
    "weight_zh_word": (3.0, 10.0),
    "part_weight": (0.0, 0.8),
    "weight_exact": (1.5, 5.0),
    "weight_name": (1.5, 5.0),
    "weight_char": (0.2, 1.0),
    "weight_generic": (0.1, 0.6),
    "weight_short": (0.3, 1.0),
    "cue_negation": (0.05, 0.5),
    "cue_antonym": (0.1, 0.5),
    "cue_number": (0.1, 0.5),
    "cue_scope": (0.3, 1.0),
}
MIN_OWN_AUROC = 0.97


def current(weights: Weights = DEFAULT_WEIGHTS) -> dict[str, float]:
    """The searched weights' values in `weights`."""
    return {name: getattr(weights, name) for name in SPACE}


def scores(rows: dict[str, list], values: dict[str, float]) -> dict[str, list[tuple[float, bool]]]:
    """Each set's (score, supported?) pairs with the shipped weights but `values`."""
    weights = replace(DEFAULT_WEIGHTS, **values)
    return {
        "wice": scored_rows(rows["wice"], weights),
        "ocnli": scored_rows(rows["ocnli"], weights),
        "own": scored(rows["own"], weights),
    }


def evaluate(rows: dict[str, list], values: dict[str, float]) -> tuple[float, float, float]:
    """(WiCE, OCNLI, own) AUROC with the shipped weights but `values`."""
    found = scores(rows, values)
    return auroc(found["wice"]), auroc(found["ocnli"]), auroc(found["own"])


def objective(figures: tuple[float, float, float]) -> float:
    wice, ocnli, own = figures
    return wice + 0.5 * ocnli - (0.0 if own >= MIN_OWN_AUROC else 1.0)


def climb(rows: dict[str, list], iterations: int, seed: int, report=print) -> tuple[dict[str, float], tuple]:
    """The kept weights and their (WiCE, OCNLI, own) AUROCs."""
    draw = random.Random(seed)
    best = current()
    best_figures = evaluate(rows, best)
    report(f"start {best_figures}")
    for step in range(iterations):
        values = dict(best)
        for name in draw.sample(list(SPACE), 3):
            low, high = SPACE[name]
            values[name] = min(high, max(low, values[name] + draw.gauss(0, (high - low) / 5)))
        figures = evaluate(rows, values)
        if objective(figures) > objective(best_figures):
            best, best_figures = values, figures
            report(f"{step} {[round(f, 4) for f in figures]} { ({k: round(v, 3) for k, v in values.items()}) }")
    return best, best_figures


def main() -> None:
    parser = argparse.ArgumentParser(description="choose the support check's weights on the development splits")
    parser.add_argument("directory", type=Path, help="the rows of `python -m bench.data.convert --full DIR`")
    parser.add_argument("--iterations", type=int, default=220)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    rows = {
        "wice": public_rows(args.directory / "wice.dev.jsonl"),
        "ocnli": public_rows(args.directory / "ocnli.train.10k.jsonl"),
        "own": labelled_pairs(),
    }
    climb(rows, args.iterations, args.seed)


if __name__ == "__main__":
    main()
