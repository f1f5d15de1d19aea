"""The registry: subsets, splits, files, row counts, sizes and checksums.

Figures come from the upstream repositories (Git LFS pointers for ``helpful-*``,
the files themselves otherwise). ``None`` means "not published": the first
download records the hash it saw (trust on first use, see :mod:`hhrlhf.download`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import UnknownNameError

__all__ = [
    "FileSpec",
    "Subset",
    "SUBSETS",
    "PREFERENCE_SUBSETS",
    "DEFAULT",
    "RED_TEAM",
    "get_subset",
    "resolve_subsets",
    "all_files",
]


@dataclass(frozen=True, slots=True)
class FileSpec:
    """One upstream file: its path relative to the repository root and what it should be."""

    subset: str
    split: str
    path: str
    rows: int
    size: int | None
    sha256: str | None
    #: True when GitHub stores the file through Git LFS (served from the media host).
    lfs: bool = False
    #: True when the figures were reported by a third party and not checked against a file.
    reported: bool = False


@dataclass(frozen=True, slots=True)
class Subset:
    """A named subset (a ``data_dir`` of the Hugging Face dataset) and its split files."""

    name: str
    kind: str  # "preference" or "red-team"
    description: str
    files: tuple[FileSpec, ...]

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(f.split for f in self.files)

    def file(self, split: str) -> FileSpec:
        for f in self.files:
            if f.split == split:
                return f
        raise UnknownNameError("split", split, self.splits)

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)


def _pref(
    name: str,
    description: str,
    train: tuple[int, int | None, str | None],
    test: tuple[int, int | None, str | None],
    *,
    lfs: bool,
) -> Subset:
    return Subset(
        name,
        "preference",
        description,
        (
            FileSpec(name, "train", f"{name}/train.jsonl.gz", *train, lfs=lfs),
            FileSpec(name, "test", f"{name}/test.jsonl.gz", *test, lfs=lfs),
        ),
    )


SUBSETS: dict[str, Subset] = {
    s.name: s
    for s in (
        _pref(
            "harmless-base",
            "red-team conversations with the base models; 'chosen' is the less harmful response",
            (42_537, None, None),
            (2_312, 742_801, "ebfaaed21162a4de120ae85366075b34425e2a6303fac59b99555002f7016f03"),
            lfs=False,
        ),
        _pref(
            "helpful-base",
            "helpfulness comparisons with the context-distilled 52B models",
            (
                43_835,
                16_200_131,
                "518a5bf288456fc9f3b7c980c54116fba0c52f274d3f4d344675d83e4058f6f4",
            ),
            (2_354, 875_191, "8be3fc1a13b27901631696f2be6f184c799f1baeaf145f53ac5db24960adc37b"),
            lfs=True,
        ),
        _pref(
            "helpful-online",
            "helpfulness comparisons with the iterated online RLHF policies",
            (
                22_007,
                20_127_228,
                "0994d18b82083f5c084ce04071b683958a724df8c7215ab1d851986642d36a2a",
            ),
            (1_137, 1_053_578, "39a475cc7e0df972902f8e3a0972726fce826ac65369bda8c671de4330c60a10"),
            lfs=True,
        ),
        _pref(
            "helpful-rejection-sampled",
            "helpfulness comparisons of best-of-k samples (mostly k=16) against an early 52B PM",
            (
                52_421,
                25_697_148,
                "0cea2d2ab2187624ec1314e8cc6fb579f0fa987b3a33e8102b7556ed4d255f64",
            ),
            (2_749, 1_361_231, "abc35dbc56015db1dae0faa484514ccbc3eee0133bfcd557fc69250619b028bb"),
            lfs=True,
        ),
        Subset(
            "red-team-attempts",
            "red-team",
            "38,961 red-team attempts (one JSON array, ten fields)",
            (
                FileSpec(
                    "red-team-attempts",
                    "train",
                    "red-team-attempts/red_team_attempts.jsonl.gz",
                    38_961,
                    15_483_307,
                    "4c7b0069991460f0064f279fd400b51f3f0095697d14d7793c49b0925f80814f",
                    reported=True,
                ),
            ),
        ),
    )
}

#: The four preference subsets, in the order the registry lists them.
PREFERENCE_SUBSETS: tuple[str, ...] = tuple(n for n, s in SUBSETS.items() if s.kind == "preference")
#: What ``load_dataset("Anthropic/hh-rlhf")`` returns: the four preference subsets together.
DEFAULT = "default"
RED_TEAM = "red-team-attempts"


def get_subset(name: str) -> Subset:
    try:
        return SUBSETS[name]
    except KeyError:
        raise UnknownNameError("subset", name, [*SUBSETS, DEFAULT]) from None


def resolve_subsets(names: str | Iterable[str] | None = None) -> list[Subset]:
    """Expand names (``None`` or ``"default"`` = the four preference subsets; ``"all"`` = all five)."""
    if names is None or names == () or names == []:
        names = [DEFAULT]
    if isinstance(names, str):
        names = [names]
    out: list[Subset] = []
    for name in names:
        if name == DEFAULT:
            picked = [SUBSETS[n] for n in PREFERENCE_SUBSETS]
        elif name == "all":
            picked = list(SUBSETS.values())
        else:
            picked = [get_subset(name)]
        for s in picked:
            if s not in out:
                out.append(s)
    return out


def all_files() -> list[FileSpec]:
    return [f for s in SUBSETS.values() for f in s.files]
