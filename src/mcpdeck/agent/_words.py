"""The words tool search works with: a text split, lowercased, stripped of stop words, lightly stemmed.

Words are split on ``_``, ``-``, camelCase and digits, so ``readTextFile``, ``read_text_file``
and "read text files" give the same terms. Stemming takes off plurals, ``-ing``, ``-ed`` and a
final ``e`` (crude, deterministic, enough for search). ``SYNONYMS`` are groups of words a query
word also finds.
"""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "SYNONYMS", "stem", "surface", "synonyms", "tokenize"]

SYNONYMS = (
    "folder directory dir",
    "delete remove erase",
    "find search lookup locate",
    "get fetch retrieve",
    "create make new",
    "edit modify update change",
    "move rename",
    "list enumerate",
    "run execute invoke",
    "image picture photo",
    "repo repository",
    "email mail",
    "doc document",
    "config configuration setting",
)
"""Groups of words a query word also finds."""

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be been before being below between both but
    by can could did do does doing done down during each either else etc eg for from further had has have having
    he her here hers him his how i ie if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours out over own please same she should so some such than that the their theirs
    them then there these they this those through to too under until up upon us very via want was we were what when
    where which while who whom whose why will with within without would you your yours
    """.split()
)
"""Words that say nothing about what a tool does."""

_ASCII_RUN = re.compile(r"[A-Za-z]+|\d+")
_ANY_RUN = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_VOWEL = re.compile(r"[aeiouy]")
_STEMS: dict[str, str] = {}
_TERMS: dict[str, tuple[str, ...]] = {}  # a run of letters or digits as written -> its terms


def stem(word: str) -> str:
    """A lowercase word's light stem: plurals, ``-ing`` and ``-ed`` and a final ``e`` taken off.

    Deterministic and crude on purpose: the same stem for a word's usual forms (file, files;
    read, reading; create, created, creates; directory, directories) is all search needs.
    """
    found = _STEMS.get(word)
    if found is not None:
        return found
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for ending in ("ing", "ed"):
        if w.endswith(ending) and len(w) > len(ending) + 2 and not w.endswith("eed"):
            base = w[: -len(ending)]
            if _VOWEL.search(base) and len(base) >= 3:
                if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                    base = base[:-1]  # running -> run, stopped -> stop
                w = base
            break
    if len(w) > 3 and w.endswith("e") and not w.endswith("ee"):
        w = w[:-1]
    if len(_STEMS) < 100_000:
        _STEMS[word] = w
    return w


def _runs(text: str) -> list[str]:
    """Runs of letters or digits (of any script when the text is not ASCII)."""
    return _ASCII_RUN.findall(text) if text.isascii() else _ANY_RUN.findall(text)


def _split(run: str) -> list[str]:
    """The lowercase words of a run: camelCase and digits split apart."""
    if run.isascii():
        if run.isalpha() and (run.islower() or run.isupper() or run.istitle()):
            return [run.lower()]
        if run.isdigit():
            return [run]
        return [word.lower() for word in _CAMEL.findall(run)]
    return [run.lower()]


def _terms(run: str) -> tuple[str, ...]:
    """A run's search terms: stop words and single letters left out, the rest stemmed."""
    if len(_TERMS) >= 200_000:
        _TERMS.clear()
    return tuple(stem(word) for word in _split(run) if word not in STOP_WORDS and (len(word) > 1 or word.isdigit()))


def tokenize(text: str) -> list[str]:
    """Search terms of ``text``: split on non-letters, camelCase and digits; lowercased, stop words out, stemmed.

    ``"mcp__fs__readTextFile2"`` gives ``["mcp", "fs", "read", "text", "fil", "2"]``.
    """
    known = _TERMS
    runs = _runs(text)
    for run in runs:
        if run not in known:
            known[run] = _terms(run)
    return [term for run in runs for term in known[run]]


def _synonym_table() -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {}
    for group in SYNONYMS:
        stems = tuple(dict.fromkeys(stem(word) for word in group.split()))
        for term in stems:
            table[term] = tuple(other for other in stems if other != term)
    return table


def surface(text: str) -> list[str]:
    """The words of ``text`` as written (lowercased, stop words out, not stemmed), marked with ``=``."""
    return ["=" + word for run in _runs(text) for word in _split(run) if word not in STOP_WORDS]


_SYNONYMS = _synonym_table()


def synonyms(term: str) -> tuple[str, ...]:
    """The stems a query term's synonyms have (empty for most terms)."""
    return _SYNONYMS.get(term, ())
