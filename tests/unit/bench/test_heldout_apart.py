"""The held-out task families stay apart from training (src/bench/heldout_tasks.h).

The training side (scripts/finetune/ and the la_rag_layout tool it runs) must neither call the
held-out generators nor write their sentence shapes: if it did, `bench quality --families
heldout` would measure what the recipe fitted. The phrases below are the distinctive parts of
every held-out template; each must still be in heldout_tasks.cpp (so this list follows the
templates) and in no training-side file.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]

PHRASES = [
    # attr
    "and grew up there", "is the birthplace of", "in a small chamber ensemble", "as a gifted",
    "by training and by trade", "in which town was", "which instrument does", "do for a living",
    # bridge
    "was set up in", "the head office of", "has its headquarters in", "the head office of the company that",
    # table
    "mountain huts on the ridge trail", "altitude_m", "| altitude (m) |", "in the table of mountain huts",
    "altitude (m) is given for", "how many beds does", "who is the warden of",
]
CALLS = ["heldout_tasks", "make_benchmark_suite", "expand_families", "heldout_family_names"]


def training_files():
    files = sorted((ROOT / "scripts" / "finetune").rglob("*"))
    files.append(ROOT / "tools" / "rag_layout.cpp")
    return [f for f in files if f.is_file() and f.suffix in (".py", ".sh", ".cpp", ".h", ".txt", ".json", ".jsonl")]


def main():
    source = (ROOT / "src" / "bench" / "heldout_tasks.cpp").read_text(encoding="utf-8").lower()
    errors = [f"'{p}' is no longer in heldout_tasks.cpp: update this list" for p in PHRASES if p not in source]
    for f in training_files():
        text = f.read_text(encoding="utf-8", errors="replace")
        rel = f.relative_to(ROOT)
        errors += [f"{rel} writes the held-out template phrase '{p}'" for p in PHRASES if p in text.lower()]
        errors += [f"{rel} calls the held-out generators ({c})" for c in CALLS if c in text]
    if errors:
        print("\n".join(errors))
        return 1
    print(f"{len(PHRASES)} held-out phrases, {len(training_files())} training-side files: apart")
    return 0


if __name__ == "__main__":
    sys.exit(main())
