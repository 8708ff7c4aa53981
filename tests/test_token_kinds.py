"""Token kinds of relaxed acceptances: Python's tokenizer on a whole program, the text's own kind where it cannot
read, prose words and punctuation."""

from __future__ import annotations

import pytest

from dropmatch.token_kinds import code_kinds, python_tokens, text_kind

PROGRAM = 'def f(x):\n    """Add one."""\n    y = x + 10  # more\n    return y if y else None\n'


def pieces(source: str, *texts: str) -> list[tuple[int, str]]:
    """(offset, text) of each text's first occurrence in source, searching on from the previous one."""
    out, at = [], 0
    for t in texts:
        at = source.index(t, at)
        out.append((at, t))
        at += len(t)
    return out


def test_code_kinds_follow_pythons_tokenizer():
    tokens = pieces(
        PROGRAM, "def", " f", "(x", "):", "\n   ", ' """Add', " y", " +", " 10", "  # more", " return", " if"
    )
    kinds = ["keyword", "identifier", "punctuation", "punctuation", "whitespace", "string", "identifier"]
    kinds += ["punctuation", "number", "comment", "keyword", "keyword"]
    assert code_kinds(PROGRAM, tokens) == kinds


def test_a_cut_off_program_is_read_as_far_as_it_goes_then_by_text():
    cut = 'def f(x):\n    s = "unterminated\n    return x1'
    kinds = code_kinds(cut, pieces(cut, "def", " f", " return", " x1"))
    assert kinds == ["keyword", "identifier", "keyword", "identifier"]
    assert python_tokens("") == []


@pytest.mark.parametrize(
    "text, code, kind",
    [
        ("   ", True, "whitespace"),
        ("\n", False, "whitespace"),
        (" 3.5", True, "number"),
        (" while", True, "keyword"),
        (" count", True, "identifier"),
        (" ==", True, "punctuation"),
        (" # note", True, "comment"),
        (' "abc', True, "string"),
        (" Paris", False, "word"),
        (" 1990", False, "word"),
        (",", False, "punctuation"),
        ("。", False, "punctuation"),
        (" 서울", False, "word"),
    ],
)
def test_text_kind(text, code, kind):
    assert text_kind(text, code) == kind
