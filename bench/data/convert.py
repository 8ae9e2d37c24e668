"""Rebuild the support check's public benchmark files from WiCE and OCNLI at pinned commits.

Each row becomes what the validator sees in a chatflow: the passage is chunk 1 and the claim is one answer sentence
citing it (`claim [C:1].`). Rows are JSON lines: {"set", "split", "id", "lang", "label", "supported", "chunk",
"answer"}; `supported` is the binary truth the weak flag is measured against (WiCE: label "supported"; OCNLI:
"entailment"; OCNLI's "neutral" rows are kept, with supported None, and left out of the two-class figures).

  python -m bench.data.convert --wice GITDIR --ocnli GITDIR [--full DIR]

GITDIR is a git directory holding the pinned commit (e.g. the one `fetch github:ryokamoi/wice` returns). Without
--full it writes the small samples the repository keeps (bench/data/*.sample.jsonl, see README.md); with --full it
writes every row of every split to DIR (for development; not kept in the repository).

Splits: WiCE publishes its oracle-chunk claim rows for dev and test only (there is no train file under
code_and_resources/entailment_inputs/oracle_chunks/claim/ at the pinned commit, and the original train file is not
in the snapshot), so WiCE dev is the development split and WiCE test is held out. OCNLI: train.10k is the
development split, dev is held out (OCNLI's test labels are not public).
"""

import argparse
import json
import random
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
WICE_COMMIT = "ddeb6c183665e2a20c5f03c5aa07f03888b9870f"
WICE_PATH = "code_and_resources/entailment_inputs/oracle_chunks/claim/{split}.jsonl"
OCNLI_COMMIT = "b53efdee17257a5c33993cf6fcf8ffff0497ea0e"
OCNLI_PATH = "data/ocnli/{split}.json"
SPLITS = {"wice": {"dev": "develop", "test": "held_out"}, "ocnli": {"train.10k": "develop", "dev": "held_out"}}
SAMPLE_CLAIMS = {"wice": 80, "ocnli": 400}  # WiCE: claims (each with its ~3 oracle chunks); OCNLI: pairs
SEED = 24
END_PUNCTUATION = ".。!！?？"


def git_text(git_dir: str, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
    ).stdout


def cited(claim: str) -> str:
    """The claim as one answer sentence citing chunk 1, the marker before the final punctuation."""
    claim = claim.strip()
    if claim and claim[-1] in END_PUNCTUATION:
        return f"{claim[:-1]} [C:1]{claim[-1]}"
    return f"{claim} [C:1]"


def wice_rows(git_dir: str, split: str) -> list[dict]:
    rows = []
    for n, line in enumerate(git_text(git_dir, WICE_COMMIT, WICE_PATH.format(split=split)).splitlines()):
        row = json.loads(line)
        rows.append(
            {
                "set": "wice",
                "split": split,
                "id": f"{row['meta']['id']}/{n}",
                "claim_id": row["meta"]["id"],
                "lang": "en",
                "label": row["label"],
                "supported": row["label"] == "supported",
                "chunk": " ".join(row["evidence"]),
                "answer": cited(row["claim"]),
            }
        )
    return rows


def ocnli_rows(git_dir: str, split: str) -> list[dict]:
    rows = []
    for line in git_text(git_dir, OCNLI_COMMIT, OCNLI_PATH.format(split=split)).splitlines():
        row = json.loads(line)
        label = row.get("label")
        if label not in ("entailment", "contradiction", "neutral"):
            continue  # "-": the annotators did not agree
        rows.append(
            {
                "set": "ocnli",
                "split": split,
                "id": f"{split}/{row['id']}",
                "claim_id": f"{split}/{row['id']}",
                "lang": "zh",
                "label": label,
                "supported": {"entailment": True, "contradiction": False}.get(label),
                "chunk": row["sentence1"],
                "answer": cited(row["sentence2"]),
            }
        )
    return rows


def sample(rows: list[dict], claims: int) -> list[dict]:
    """Every row of `claims` claims drawn at random (fixed seed), in the file's order."""
    ids = sorted({r["claim_id"] for r in rows})
    keep = set(random.Random(SEED).sample(ids, min(claims, len(ids))))
    return [r for r in rows if r["claim_id"] in keep]


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{path}: {len(rows)} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wice", required=True, help=f"git dir holding ryokamoi/wice {WICE_COMMIT}")
    parser.add_argument("--ocnli", required=True, help=f"git dir holding CLUEbenchmark/OCNLI {OCNLI_COMMIT}")
    parser.add_argument("--full", help="write every row of every split to this directory instead of the samples")
    args = parser.parse_args()
    readers = {"wice": (args.wice, wice_rows), "ocnli": (args.ocnli, ocnli_rows)}
    for name, splits in SPLITS.items():
        git_dir, read = readers[name]
        for split, role in splits.items():
            rows = read(git_dir, split)
            if args.full:
                write(Path(args.full) / f"{name}.{split}.jsonl", rows)
            elif role == "held_out":
                write(HERE / f"{name}.{split}.sample.jsonl", sample(rows, SAMPLE_CLAIMS[name]))


if __name__ == "__main__":
    main()
