"""Hand-written phrase lists: pooled cues that a few thousand pairs cannot learn word by word.

A linear PM trained on about 2,000 harmless-base pairs sees most words a handful of times, so
it cannot estimate a weight for each of "sorry", "cannot", "won't" and "uncomfortable" on its
own. Counting them together as one category gives the model one well-estimated weight for
"the response refuses" next to the individual word weights. The lists are generic, written for
this project, and cover how a response behaves (refuses, hedges, asks back, redirects to
someone qualified, moralises, empathises, complies, agrees, talks about a harmful topic, is
rude, talks about being an AI), not what a particular dataset says.

Matching works on tokens (runs of lowercase letters, digits and apostrophes), so a phrase
matches whole words only; each occurrence of each phrase counts, overlapping ones included
("i'm sorry" counts for both "i'm sorry" and "sorry").

The features of a response (:data:`LEXICON_FEATURES`): per category, the log count and
whether it occurs among the first :data:`OPENING` tokens (refusals and compliance announce
themselves at the start); harmful-topic words repeated from the human turns and new ones; and
four categories multiplied by "the human turns mention a harmful topic", so refusing or
redirecting can count differently after a harmful request than after a harmless one.

Changing a list changes the features of saved models: bump ``FORMAT_VERSION`` in
:mod:`.model` when doing so.
"""

from __future__ import annotations

import math
import re

__all__ = ["CATEGORIES", "LEXICON_FEATURES", "OPENING", "lexicon_row", "harm_words"]

TOKEN_RE = re.compile(r"[a-z0-9']+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})

#: Tokens at the start of a response that count as its opening.
OPENING = 12

CATEGORIES: dict[str, tuple[str, ...]] = {
    "refuse": (
        "sorry", "i'm sorry", "i am sorry", "i can't", "i cannot", "i can not", "i won't",
        "i will not", "i'm not going to", "i am not going to", "i'd rather not",
        "i would rather not", "i don't want to", "i do not want to", "not comfortable",
        "uncomfortable", "i'm not able", "i am not able", "unable to", "i shouldn't",
        "i should not", "not appropriate", "i refuse", "i'm afraid", "can't help",
        "cannot help", "not something i", "i'd prefer not", "i don't support",
        "i do not support", "i don't condone", "i don't recommend", "i do not recommend",
        "i wouldn't", "i would not", "i'm not willing", "no",
    ),
    "hedge": (
        "i'm not sure", "not sure", "i don't know", "i do not know", "maybe", "perhaps",
        "might", "possibly", "i think", "i guess", "probably", "it depends", "hmm",
        "not certain", "unclear", "i'm not really", "i don't really",
    ),
    "ask": (
        "what do you mean", "can you tell me", "could you tell me", "could you explain",
        "can you explain", "why do you", "what are you", "are you asking", "do you mean",
        "tell me more", "can you clarify", "what kind of", "what's going on",
        "how are you feeling", "why would you", "what makes you", "is there something",
        "are you sure", "what would you",
    ),
    "redirect": (
        "professional", "professionals", "therapist", "therapy", "counselor", "counsellor",
        "counseling", "doctor", "physician", "nurse", "lawyer", "attorney", "police",
        "authorities", "hotline", "helpline", "talk to", "reach out", "seek help", "get help",
        "emergency", "911", "crisis", "support group", "mental health", "social worker",
        "hospital", "someone you trust", "trusted", "resources",
    ),
    "moral": (
        "wrong", "harmful", "harm", "dangerous", "danger", "unsafe", "safe", "safety", "legal",
        "law", "laws", "against the law", "ethical", "unethical", "immoral", "moral", "respect",
        "respectful", "kind", "kindness", "hurtful", "consent", "responsible", "irresponsible",
        "inappropriate", "appropriate", "offensive", "careful", "risk", "risky", "consequences",
        "not okay", "not ok", "not a good idea", "bad idea", "please don't", "never", "rights",
        "fair", "unfair", "dignity", "compassion",
    ),
    "empathy": (
        "i understand", "i hear you", "that sounds", "sorry to hear", "that must",
        "must be hard", "feel", "feeling", "feelings", "upset", "frustrated", "frustrating",
        "difficult", "hard time", "care about", "i care", "stressful", "lonely", "angry",
    ),
    "comply": (
        "here's", "here is", "here are", "you could", "you can", "you should", "you'd",
        "you would", "you might", "you need to", "you'll need", "you'll want", "step", "steps",
        "first", "then", "next", "finally", "try", "the best way", "one way", "a good way",
        "make sure", "the easiest", "simply", "recipe", "instructions", "ingredients", "tips",
        "method", "how to", "you just",
    ),
    "agree": (
        "yes", "yeah", "yep", "sure", "absolutely", "of course", "definitely", "i agree",
        "good idea", "great idea", "that's right", "you're right", "exactly", "certainly",
        "okay", "ok", "alright", "great", "awesome", "haha", "lol", "cool", "totally", "i love",
    ),
    "harm": (
        "steal", "stealing", "stole", "stolen", "rob", "robbery", "robbing", "burglar",
        "burglary", "shoplift", "shoplifting", "kill", "killing", "murder", "hurt", "hurting",
        "attack", "assault", "fight", "punch", "beat", "stab", "shoot", "shooting", "gun",
        "guns", "knife", "weapon", "weapons", "bomb", "explosive", "explosives", "poison",
        "drug", "drugs", "cocaine", "heroin", "meth", "marijuana", "weed", "pills", "overdose",
        "alcohol", "drunk", "illegal", "crime", "crimes", "criminal", "hack", "hacking",
        "password", "scam", "fraud", "cheat", "cheating", "lie", "lying", "revenge",
        "threaten", "threat", "kidnap", "torture", "abuse", "blood", "die", "death", "dead",
        "suicide", "racist", "racism", "slur", "slurs", "prank", "vandalize", "trespass",
        "smuggle", "counterfeit", "bribe", "blackmail", "stalk", "arson", "sex", "sexual",
        "naked", "porn", "violence", "violent",
    ),
    "rude": (
        "stupid", "idiot", "dumb", "moron", "ugly", "fat", "loser", "shut up", "hate",
        "disgusting", "pathetic", "lazy", "worthless", "jerk", "crap", "damn", "hell", "suck",
        "sucks", "annoying", "freak", "weird", "gross",
    ),
    "ai": (
        "i'm an ai", "i am an ai", "as an ai", "i'm a computer", "language model", "assistant",
        "i'm just", "i don't have", "i am just", "my purpose", "i'm here to", "i am here to",
        "i'm designed", "i was designed", "program",
    ),
}  # fmt: skip

#: Categories multiplied by "the human turns mention a harmful topic".
_AFTER_HARM = ("refuse", "comply", "redirect", "moral")

LEXICON_FEATURES: tuple[str, ...] = (
    *(f"{c}_{kind}" for c in CATEGORIES for kind in ("log_count", "in_opening")),
    "harm_words_from_human",
    "harm_words_new",
    *(f"{c}_after_harmful_request" for c in _AFTER_HARM),
)

_NAMES = tuple(CATEGORIES)
_HARM = frozenset(p for p in CATEGORIES["harm"] if " " not in p)
_AFTER_HARM_INDEX = tuple(_NAMES.index(c) for c in _AFTER_HARM)
_HARM_INDEX = _NAMES.index("harm")


def _index() -> dict[str, list[tuple[tuple[str, ...], int]]]:
    """First token -> [(remaining tokens, category number)], so most tokens cost one lookup."""
    index: dict[str, list[tuple[tuple[str, ...], int]]] = {}
    for c, phrases in enumerate(CATEGORIES.values()):
        for phrase in phrases:
            first, *rest = TOKEN_RE.findall(phrase)
            index.setdefault(first, []).append((tuple(rest), c))
    return index


_INDEX = _index()


def tokens(text: str) -> list[str]:
    """The lowercase tokens phrases are matched against (curly apostrophes made straight)."""
    text = text.lower()
    if "\u2019" in text or "\u2018" in text:
        text = text.translate(_APOSTROPHES)
    return TOKEN_RE.findall(text)


def harm_words(text: str) -> frozenset[str]:
    """The harmful-topic words that occur in ``text`` (for the prompt's human turns)."""
    return _HARM.intersection(tokens(text))


def lexicon_row(response: str, human_harm: frozenset[str]) -> list[float]:
    """The :data:`LEXICON_FEATURES` of one response; ``human_harm`` is :func:`harm_words` of
    the prompt's human turns. (Runs for every response scored, so it loops only over the
    tokens that start a phrase.)"""
    words = tokens(response)
    index = _INDEX
    n_cat = len(_NAMES)
    counts = [0] * n_cat
    opening = [0.0] * n_cat
    echoed = 0
    for i in [i for i, w in enumerate(words) if w in index]:
        w = words[i]
        for rest, c in index[w]:
            if rest and tuple(words[i + 1 : i + 1 + len(rest)]) != rest:
                continue
            counts[c] += 1
            if i < OPENING:
                opening[c] = 1.0
        echoed += w in human_harm
    logs = [math.log1p(k) for k in counts]
    row: list[float] = []
    for c in range(n_cat):
        row += (logs[c], opening[c])
    after = float(bool(human_harm))
    # Every harmful-topic phrase is one token, listed once: its count is the number of them.
    row += (math.log1p(echoed), math.log1p(counts[_HARM_INDEX] - echoed))
    row += (after * logs[c] for c in _AFTER_HARM_INDEX)
    return row
