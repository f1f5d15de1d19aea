"""``train_test_leak``: a test prompt that also appears in a train split (normalised, hashed)."""

from __future__ import annotations

from abc import abstractmethod

from .base import Check, CheckClass, Finding
from .duplicates import digest

__all__ = ["PromptComparison", "TrainTestLeak", "normalise_prompt"]


def normalise_prompt(text: str) -> str:
    """Lower case, whitespace runs collapsed to one space, ends stripped."""
    return " ".join(text.lower().split())


class PromptComparison(Check):
    """Base of the checks that compare test prompts with train prompts.

    :meth:`check` and :meth:`reference` hand every non-empty prompt, with its normalised
    digest and its source, to :meth:`train_prompt` (train split) or :meth:`test_prompt`
    (other splits, checked pairs only); the subclass compares them in :meth:`finish`.
    """

    needs_train_and_test = True

    def check(self, pair):
        """Remembers the pair's prompt; matches are flagged in :meth:`finish`."""
        self._observe(pair, reference=False)
        return ()

    def reference(self, pair) -> None:
        self._observe(pair, reference=True)

    def _observe(self, pair, *, reference: bool) -> None:
        if pair.prompt_end == 0:
            return
        text = pair.prompt
        key = digest(normalise_prompt(text))
        source = (pair.subset, pair.split, pair.index)
        if pair.split == "train":
            self.train_prompt(text, key, source)
        elif not reference:
            self.test_prompt(text, key, source)

    @abstractmethod
    def train_prompt(self, text: str, key: bytes, source: tuple) -> None:
        """A train prompt (``key`` is the digest of its normalised text)."""

    @abstractmethod
    def test_prompt(self, text: str, key: bytes, source: tuple) -> None:
        """A test prompt of a checked pair."""


class TrainTestLeak(PromptComparison):
    """Compares every test prompt with the train prompts of all selected subsets."""

    name = "train_test_leak"
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

    def train_prompt(self, text: str, key: bytes, source: tuple) -> None:
        self._train.setdefault(key, source)

    def test_prompt(self, text: str, key: bytes, source: tuple) -> None:
        self._test.append((key, source))

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
