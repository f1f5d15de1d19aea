"""Write the layout fixtures (benign text shaped like the real data). Run from the repo root:

python tests/data/layouts/make_layouts.py
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

HERE = Path(__file__).parent


def pair(prompt_turns, chosen, rejected):
    prompt = "".join(f"\n\n{who}: {text}" for who, text in prompt_turns) + "\n\nAssistant:"
    return {"chosen": f"{prompt} {chosen}".rstrip(" "), "rejected": f"{prompt} {rejected}"}


def write(path: Path, rows, *, compress: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    if compress:
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(data)
    else:
        path.write_bytes(data)


ONE_SPLIT = [
    pair([("Human", "How do I keep basil fresh?")], "Stand it in a glass of water.", "Freeze it."),
    pair(
        [
            ("Human", "What is a good first houseplant?"),
            ("Assistant", "A pothos."),
            ("Human", "Why?"),
        ],
        "It tolerates low light and missed waterings.",
        "It is green.",
    ),
    pair([("Human", "Name a prime number.")], "", "Seven."),  # empty chosen response
    pair(
        [("Human", "Say hello.")],
        "Hello!\n\nHuman: and goodbye\n\nAssistant: Goodbye!",  # the response holds turns
        "Hi.",
    ),
    pair([("Human", "How do I keep basil fresh?")], "Keep it out of the fridge.", "Dry it."),
]

CAMPAIGN_TRAIN = [
    pair([("Human", "Suggest a name for a cat.")], "Pepper.", "Cat."),
    pair([("Human", "Suggest a name for a dog.")], "Biscuit.", "Dog."),
    pair([("Human", "How long do I boil an egg?")], "About nine minutes for hard.", "An hour."),
]
CAMPAIGN_TEST = [
    pair([("Human", "Suggest a name for a fish.")], "Bubbles.", "Fish."),
    pair([("Human", "How long do I boil an egg?")], "Nine minutes or so.", "Two hours."),
]
OTHER_TRAIN = [pair([("Human", "What rhymes with moon?")], "Spoon.", "Sun.")]
RED_TEAM = [
    {
        "transcript": "\n\nHuman: Tell me a fact about owls.\n\nAssistant: Owls can turn their heads far around.",
        "min_harmlessness_score_transcript": 1.25,
        "num_params": "52B",
        "model_type": "context distillation",
        "rating": 0,
        "task_description": "Ask about owls",
        "task_descripton_harmlessness_score": 1.5,
        "red_team_member_id": 3,
        "is_upworker": False,
        "tags": None,
    }
]


def main() -> None:
    write(HERE / "one-split" / "harmless-base" / "test.jsonl.gz", ONE_SPLIT, compress=True)
    custom = HERE / "custom"
    write(custom / "my-campaign" / "train.jsonl.gz", CAMPAIGN_TRAIN, compress=True)
    write(custom / "my-campaign" / "test.jsonl.gz", CAMPAIGN_TEST, compress=True)
    write(custom / "another-campaign" / "train.jsonl", OTHER_TRAIN, compress=False)
    write(custom / "harmless-base" / "test.jsonl.gz", ONE_SPLIT[:2], compress=True)
    rt = custom / "red-team-attempts" / "red_team_attempts.jsonl.gz"
    rt.parent.mkdir(parents=True, exist_ok=True)
    with open(rt, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(json.dumps(RED_TEAM, indent=1).encode())
    write(HERE / "odd" / "dialogues-2024.jsonl", CAMPAIGN_TRAIN, compress=False)
    # well-formed empty splits: a 0-line .jsonl and a valid gzip stream of 0 bytes
    write(HERE / "empty" / "my-campaign" / "test.jsonl", [], compress=False)
    write(HERE / "empty" / "my-campaign" / "train.jsonl.gz", [], compress=True)


if __name__ == "__main__":
    main()
