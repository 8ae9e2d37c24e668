"""How the support check's weights were chosen: a seeded hill climb on the development splits only.

    python -m bench.tune_support DIR [--iterations 220] [--seed 2]

DIR holds the rows `python -m bench.data.convert --full DIR` writes; only `wice.dev.jsonl`, `ocnli.train.10k.jsonl`
and the own pairs are read (the held-out splits never are). Each step moves three of the weights below by a
Gaussian step within their range and keeps the move when WiCE dev AUROC + ½ OCNLI train AUROC rises while the own
pairs' AUROC stays ≥ 0.97. It prints every kept step; the node ships the last one, rounded (docs/support-check.md).
The node's values are set on the module for the search and put back afterwards.
"""

import argparse
import random
from pathlib import Path

from bench.support import auroc, labelled_pairs, public_rows, scored, scored_rows
from citations.support import check as validate_citations
from citations.support.check import CUE_FACTOR

SPACE = {"MISSING_EXACT": (0.2, 0.7), "MISSING_DECAY": (0.7, 0.97), "WEIGHT_ZH_WORD": (3.0, 10.0),
         "PART_WEIGHT": (0.0, 0.8), "WEIGHT_EXACT": (1.5, 5.0), "WEIGHT_NAME": (1.5, 5.0), "WEIGHT_CHAR": (0.2, 1.0),
         "WEIGHT_GENERIC": (0.1, 0.6), "WEIGHT_SHORT": (0.3, 1.0), "negation": (0.05, 0.5), "antonym": (0.1, 0.5),
         "number": (0.1, 0.5), "scope": (0.3, 1.0)}  # the last four: CUE_FACTOR entries
MIN_OWN_AUROC = 0.97


def current() -> dict[str, float]:
    return {name: CUE_FACTOR[name] if name in CUE_FACTOR
            else getattr(validate_citations, name) for name in SPACE}


def put(values: dict[str, float]) -> None:
    for name, value in values.items():
        if name in CUE_FACTOR:
            CUE_FACTOR[name] = value
        else:
            setattr(validate_citations, name, value)


def objective(figures: tuple[float, float, float]) -> float:
    wice, ocnli, own = figures
    return wice + 0.5 * ocnli - (0.0 if own >= MIN_OWN_AUROC else 1.0)


def climb(rows: dict[str, list], iterations: int, seed: int, report=print) -> tuple[dict[str, float], tuple]:
    """The kept weights and their (WiCE, OCNLI, own) AUROCs; the node's own values are restored."""
    shipped = current()
    draw = random.Random(seed)

    def evaluate(values):
        put(values)
        return (auroc(scored_rows(rows["wice"])), auroc(scored_rows(rows["ocnli"])), auroc(scored(rows["own"])))
    try:
        best, best_figures = shipped, evaluate(shipped)
        report(f"start {best_figures}")
        for step in range(iterations):
            values = dict(best)
            for name in draw.sample(list(SPACE), 3):
                low, high = SPACE[name]
                values[name] = min(high, max(low, values[name] + draw.gauss(0, (high - low) / 5)))
            figures = evaluate(values)
            if objective(figures) > objective(best_figures):
                best, best_figures = values, figures
                report(f"{step} {[round(f, 4) for f in figures]} {({k: round(v, 3) for k, v in values.items()})}")
        return best, best_figures
    finally:
        put(shipped)


def main() -> None:
    parser = argparse.ArgumentParser(description="choose the support check's weights on the development splits")
    parser.add_argument("directory", type=Path, help="the rows of `python -m bench.data.convert --full DIR`")
    parser.add_argument("--iterations", type=int, default=220)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    rows = {"wice": public_rows(args.directory / "wice.dev.jsonl"),
            "ocnli": public_rows(args.directory / "ocnli.train.10k.jsonl"), "own": labelled_pairs()}
    climb(rows, args.iterations, args.seed)


if __name__ == "__main__":
    main()
