"""``near_duplicate_leak``: a test prompt nearly the same as a train prompt (MinHash LSH).

Exact leaks are found by hashing (:mod:`.leak`); this finds test prompts whose word
3-gram sets have an estimated Jaccard similarity of at least ``threshold`` with a train
prompt of any selected subset, and are not exact leaks.

The MinHash is vectorised with numpy rather than run through ``datasketch`` one document
at a time: shingles are hashed for a whole chunk of prompts at once (a polynomial rolling
hash over the UTF-8 bytes gives every word's hash; three neighbouring word hashes make a
shingle), and each of the ``num_perm`` permutations ``h(x) = a*x + b mod 2**64`` is one
multiply-add over all shingles followed by ``np.minimum.reduceat`` per prompt. Signatures
keep the top 32 bits. Banding follows datasketch's ``MinHashLSH``: ``b`` bands of ``r`` rows
chosen to minimise the false positive plus false negative probability at ``threshold``;
prompts sharing a band are candidates, and a candidate counts when the share of equal
signature values (the Jaccard estimate) reaches ``threshold``. ``bench/bench_export_check.py``
compares it with datasketch on the same prompts.
"""

from __future__ import annotations

from .base import CheckClass, CheckOptions, Finding
from .leak import PromptComparison, normalise_prompt

__all__ = ["MinHasher", "NearDuplicateLeak", "optimal_bands"]

_MASK64 = (1 << 64) - 1
_B = 0x100000001B3  # odd, so invertible mod 2**64
_B_INV = pow(_B, -1, 1 << 64)
_K = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9)


def _np():
    from ..errors import require

    return require("numpy", "audit", "near-duplicate detection")


def _mix(np, x):
    """splitmix64 finaliser, in place on a uint64 array."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def optimal_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """``(bands, rows)`` minimising false positive + false negative area (as datasketch does)."""
    np = _np()

    def area(f, lo, hi):
        xs = np.linspace(lo, hi, 201)
        ys = f(xs)
        return float(np.sum((ys[1:] + ys[:-1]) * np.diff(xs)) / 2)

    best, best_err = (1, num_perm), float("inf")
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = area(lambda s, b=b, r=r: 1 - (1 - s**r) ** b, 0.0, threshold)
            fn = area(lambda s, b=b, r=r: 1 - (1 - (1 - s**r) ** b), threshold, 1.0)
            if fp + fn < best_err:
                best, best_err = (b, r), fp + fn
    return best


class MinHasher:
    """MinHash signatures of many texts at once (word ``shingle``-grams, ``num_perm`` values)."""

    def __init__(self, num_perm: int = 128, *, shingle: int = 3, seed: int = 1):
        np = _np()
        self.num_perm = num_perm
        self.shingle = shingle
        rng = np.random.default_rng(seed)
        self._a = rng.integers(0, 1 << 63, num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        self._b = rng.integers(0, 1 << 63, num_perm, dtype=np.uint64)

    def shingles(self, texts: list[str]):
        """``(hashes, doc)``: one uint64 per shingle and the text it belongs to, in text order.

        Texts are normalised (:func:`~hhrlhf.checks.leak.normalise_prompt`). A text with
        fewer words than ``shingle`` gives one shingle of all its words; an empty one none.
        """
        np = _np()
        norm = [normalise_prompt(t) for t in texts]
        raw = "\n".join(norm).encode("utf-8", "surrogatepass")
        arr = np.frombuffer(raw, dtype=np.uint8)
        n = len(arr)
        u64 = np.uint64
        pw = np.full(n + 1, _B, dtype=u64)
        pw[0] = 1
        np.cumprod(pw, out=pw)  # B**j mod 2**64
        ipw = np.full(n + 1, _B_INV, dtype=u64)
        ipw[0] = 1
        np.cumprod(ipw, out=ipw)
        prefix = np.zeros(n + 1, dtype=u64)
        np.cumsum(arr.astype(u64) * pw[:n], out=prefix[1:])
        delim = np.flatnonzero((arr == 32) | (arr == 10))
        starts = np.concatenate(([0], delim + 1))
        ends = np.concatenate((delim, [n]))
        keep = ends > starts
        starts, ends = starts[keep], ends[keep]
        words = (prefix[ends] - prefix[starts]) * ipw[starts]
        words = _mix(np, words + (ends - starts).astype(u64))
        newlines = np.flatnonzero(arr == 10)
        doc = np.searchsorted(newlines, starts, side="right")
        k = self.shingle
        counts = np.bincount(doc, minlength=len(texts))
        if len(words) >= k:
            m = len(words) - k + 1
            sh = words[:m] * u64(_K[0])
            for j in range(1, k):
                sh += words[j : j + m] * u64(_K[j % len(_K)])
            same = doc[:m] == doc[k - 1 :]
            sh, sh_doc = _mix(np, sh[same]), doc[:m][same]
        else:
            sh, sh_doc = np.empty(0, u64), np.empty(0, doc.dtype)
        short = np.flatnonzero((counts > 0) & (counts < k))
        if len(short):
            first = np.searchsorted(doc, short)
            extra = np.zeros(len(short), dtype=u64)
            for j in range(k - 1):
                has = counts[short] > j
                extra[has] += words[first[has] + j] * u64(_K[j])
            sh = np.concatenate((sh, _mix(np, extra)))
            sh_doc = np.concatenate((sh_doc, short))
            order = np.argsort(sh_doc, kind="stable")
            sh, sh_doc = sh[order], sh_doc[order]
        return sh, sh_doc

    def signatures(self, texts: list[str]):
        """``(sig, has)``: a ``(len(texts), num_perm)`` uint32 array, and which texts had words."""
        np = _np()
        sh, doc = self.shingles(texts)
        sig = np.full((len(texts), self.num_perm), 0xFFFFFFFF, dtype=np.uint32)
        has = np.zeros(len(texts), dtype=bool)
        if len(sh) == 0:
            return sig, has
        bounds = np.flatnonzero(np.diff(doc)) + 1
        seg = np.concatenate(([0], bounds))
        docs = doc[seg]
        has[docs] = True
        tmp = np.empty_like(sh)
        shift = np.uint64(32)
        for p in range(self.num_perm):
            np.multiply(sh, self._a[p], out=tmp)
            tmp += self._b[p]
            sig[docs, p] = (np.minimum.reduceat(tmp, seg) >> shift).astype(np.uint32)
        return sig, has


class NearDuplicateLeak(PromptComparison):
    """Test prompts that near-duplicate a train prompt of any selected subset."""

    name = "near_duplicate_leak"
    classes = (
        CheckClass(
            "near_duplicate_leak",
            "warning",
            "a test prompt is a near duplicate (MinHash LSH, Jaccard >= threshold) of a train "
            "prompt, without being an exact leak",
        ),
    )

    def __init__(self, threshold: float = 0.8, num_perm: int = 128, *, chunk: int = 8192):
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self.num_perm = num_perm
        self.bands, self.rows = optimal_bands(threshold, num_perm)
        self._hasher = MinHasher(num_perm)
        self._chunk = chunk
        self._train_keys: dict[bytes, int] = {}
        self._train_src: list[tuple] = []
        self._train_pending: list[str] = []
        self._train_sigs: list = []
        self._test: list[tuple[str, bytes, tuple]] = []

    @classmethod
    def create(cls, options: CheckOptions) -> NearDuplicateLeak | None:
        if not options.near_duplicates:
            return None
        return cls(options.threshold, options.num_perm)

    def train_prompt(self, text: str, key: bytes, source: tuple) -> None:
        if key in self._train_keys:
            return
        self._train_keys[key] = len(self._train_src)
        self._train_src.append(source)
        self._train_pending.append(text)
        if len(self._train_pending) >= self._chunk:
            self._flush()

    def test_prompt(self, text: str, key: bytes, source: tuple) -> None:
        self._test.append((text, key, source))

    def settings(self) -> dict:
        return {
            "threshold": self.threshold,
            "num_perm": self.num_perm,
            "bands": self.bands,
            "rows_per_band": self.rows,
        }

    def _flush(self) -> None:
        if self._train_pending:
            sig, _ = self._hasher.signatures(self._train_pending)
            self._train_sigs.append(sig)
            self._train_pending = []

    def _band_keys(self, sig):
        np = _np()
        r = self.rows
        mult = (np.arange(1, r + 1, dtype=np.uint64) * np.uint64(_K[0])) | np.uint64(1)
        out = np.empty((len(sig), self.bands), dtype=np.uint64)
        for b in range(self.bands):
            out[:, b] = _mix(np, (sig[:, b * r : (b + 1) * r].astype(np.uint64) * mult).sum(axis=1))
        return out

    def finish(self) -> list[Finding]:
        np = _np()
        self._flush()
        if not self._test or not self._train_src or not self._train_sigs:
            return []
        train_sig = np.concatenate(self._train_sigs)
        self._train_sigs = []
        test = [(t, k, s) for t, k, s in self._test if k not in self._train_keys]  # exact: leak
        if not test:
            return []
        test_sig, has = self._hasher.signatures([t for t, _, _ in test])
        train_bands = self._band_keys(train_sig)
        test_bands = self._band_keys(test_sig)
        best: dict[int, tuple[float, int]] = {}
        for b in range(self.bands):
            order = np.argsort(train_bands[:, b], kind="stable")
            keys = train_bands[order, b]
            lo = np.searchsorted(keys, test_bands[:, b], side="left")
            hi = np.searchsorted(keys, test_bands[:, b], side="right")
            for i in np.flatnonzero((hi > lo) & has):
                cand = order[lo[i] : min(hi[i], lo[i] + 64)]
                sims = (train_sig[cand] == test_sig[i]).mean(axis=1)
                j = int(np.argmax(sims))
                if sims[j] >= self.threshold and sims[j] > best.get(i, (-1.0, 0))[0]:
                    best[int(i)] = (float(sims[j]), int(cand[j]))
        out = []
        for i in sorted(best):
            sim, j = best[i]
            hit = self._train_src[j]
            out.append(
                Finding(
                    test[i][2],
                    "near_duplicate_leak",
                    f"Jaccard ~{sim:.2f} with the prompt of {hit[0]}/{hit[1]} index {hit[2]}",
                )
            )
        return out
