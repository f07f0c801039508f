"""The one sanitizer: every control and invisible format character escaped, the rest as it is."""

from __future__ import annotations

import json
import re
import unicodedata

from mcpdeck._util.safe_text import UNSAFE_CHARACTERS, safe_json, safe_text, storable

KEPT_FORMAT = {"\u200c", "\u200d"}  # zero-width non-joiner and joiner: emoji and scripts need them
DANGEROUS = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def test_every_control_format_and_separator_character_is_escaped() -> None:
    missed: list[str] = []
    for code in range(0x110000):
        char = chr(code)
        if unicodedata.category(char) not in DANGEROUS or char in KEPT_FORMAT:
            continue
        shown = safe_text(f"a{char}b")
        if char in shown or not shown.startswith("a\\"):
            missed.append(f"U+{code:04X}")
    assert missed == []


def test_the_character_class_keeps_printable_text() -> None:
    unsafe = re.compile(f"[{UNSAFE_CHARACTERS}]")
    text = "Grüße, 東京, emoji 👩\u200d💻, \u200cپیش, tab\tand newline\n"
    assert [c for c in unsafe.findall(text) if c not in "\t\n"] == []
    assert safe_text(text, multiline=True) == text


def test_escape_sequences_read_as_what_they_are() -> None:
    hostile = "\x1b[2K\rok\x1b]0;title\x07 \x9b31m \u202egnp.exe \x7f"
    assert safe_text(hostile) == "\\x1b[2K\\rok\\x1b]0;title\\x07 \\x9b31m \\u202egnp.exe \\x7f"


def test_one_line_text_escapes_newlines_and_body_text_keeps_them() -> None:
    assert safe_text("a\nb\tc") == "a\\nb\\tc"
    assert safe_text("a\r\nb\tc\rd", multiline=True) == "a\nb\tc\\rd"


def test_lone_surrogates_and_astral_format_characters_are_escaped() -> None:
    assert safe_text("x\ud800y\U000e0041") == "x\\ud800y\\U000e0041"


def test_json_stays_exact_and_carries_no_raw_control_character() -> None:
    data = {
        "name\x1b": ["\x1b[2K\r", "\x9b\x7f", "\u202e\u2066", "\ud800", "\U000e0041", "ok ü 東"],
        "n": 1,
    }
    for indent in (None, 2):
        text = safe_json(data, indent=indent)
        assert json.loads(text) == data
        assert [c for c in re.findall(f"[{UNSAFE_CHARACTERS}]", text) if c != "\n"] == []
        assert "ok ü 東" in text  # non-ASCII text stays readable


def test_what_a_database_cannot_keep_is_replaced_and_the_rest_kept() -> None:
    assert storable("plain ascii") == "plain ascii"
    assert storable("nul\x00in ascii") == "nul\ufffdin ascii"
    assert (
        storable("é \ud800 \udfff \x00 😀 \u202e") == "é \ufffd \ufffd \ufffd 😀 \u202e"
    )  # (what it shows is not its job)
    text = storable("a\ud83d\ude00b \ud800")  # a pair kept as two code points is not valid text either
    assert text.encode() == "a\ufffd\ufffdb \ufffd".encode()
