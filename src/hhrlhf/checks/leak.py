"""``train_test_leak``: a test prompt that also appears in a train split (normalised, hashed)."""

from __future__ import annotations

from .base import Check, CheckClass, Finding
from .duplicates import digest

__all__ = ["TrainTestLeak", "normalise_prompt"]


def normalise_prompt(text: str) -> str:
    """Lower case, whitespace runs collapsed to one space, ends stripped."""
    return " ".join(text.lower().split())


class TrainTestLeak(Check):
    """Compares every test prompt with the train prompts of all selected subsets."""

    name = "train_test_leak"
    needs_train_and_test = True
    classes = (
        CheckClass(
            "train_test_leak",
            "warning",
            "a test prompt appears in a train split (after whitespace/case normalisation)",
        ),
    )

    def __init__(self) -> None:
        self._train: dict[bytes, tuple] = {}
        self._test: list[tuple[bytes, tuple]] = []

    def check(self, pair):
        """Remembers the pair's prompt; leaks are flagged in :meth:`finish`."""
        self._observe(pair, reference=False)
        return ()

    def reference(self, pair) -> None:
        self._observe(pair, reference=True)

    def _observe(self, pair, *, reference: bool) -> None:
        if pair.prompt_end == 0:
            return
        key = digest(normalise_prompt(pair.prompt))
        if pair.split == "train":
            self._train.setdefault(key, (pair.subset, pair.split, pair.index))
        elif not reference:
            self._test.append((key, (pair.subset, pair.split, pair.index)))

    def finish(self) -> list[Finding]:
        out = []
        for key, source in self._test:
            hit = self._train.get(key)
            if hit is not None:
                out.append(
                    Finding(
                        source, "train_test_leak", f"prompt of {hit[0]}/{hit[1]} index {hit[2]}"
                    )
                )
        return out
