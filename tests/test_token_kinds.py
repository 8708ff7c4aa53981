"""Token kinds of relaxed acceptances: Python's tokenizer on a whole program, the text's own kind where it cannot
read, prose words and punctuation."""

from __future__ import annotations

import pytest

from dropmatch.token_kinds import code_kinds, gate_open, python_span, python_tokens, text_kind

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
        (" 1990", False, "number"),  # a digit in prose: a relaxed one changes a word problem's answer
        (",", False, "punctuation"),
        ("。", False, "punctuation"),
        (" 서울", False, "word"),
    ],
)
def test_text_kind(text, code, kind):
    assert text_kind(text, code) == kind


# ---- span gating: the lexical state of a program cut off anywhere -------------------------------------------------
@pytest.mark.parametrize(
    "source, span",
    [
        ("x = 1", "code"),
        ('x = "ab', "string"),
        ('x = "ab" + y', "code"),
        ("# hi", "comment"),
        ("# hi\nx", "code"),
        ('"""doc\nmore', "string"),
        ('"""doc"""\n', "code"),
        ('s = "a\\"b', "string"),  # an escaped quote does not close it
        ('s = "a\\"b"', "code"),
        ("r'a\\", "string"),  # nor in a raw string, as Python's tokenizer reads it
        ('f"{x}', "string"),  # an f-string's field counts as its text
        ('x = "ab\ny', "code"),  # a one-quote literal gives up at the line's end
        ("'''a'' ", "string"),
        ('x = ""', "code"),
        ('x = """a\\"""', "string"),
        ("", "code"),
        ("x = 1  # the 'quote' here is comment text", "comment"),
    ],
)
def test_the_span_at_the_end_of_a_program_cut_off_anywhere(source, span):
    assert python_span(source) == span


def test_the_span_agrees_with_pythons_tokenizer_at_every_cut_of_a_real_program():
    """At every cut of a program that Python's own tokenizer puts inside a string or a comment, away from its
    delimiters (a cut between the quotes of an opening \"\"\" cannot know a third is coming), the quick scan says the
    same."""
    program = 'def f(x):\n    """Doc, with a \\"quote\\"."""\n    y = x + 1  # add one\n    return f"{y}!" + \'s\'\n'
    spans, checked = python_tokens(program), 0
    for cut in range(1, len(program)):
        inside = [kind for start, end, kind in spans if start + 3 < cut < end - 3 and kind in ("string", "comment")]
        if inside:
            assert python_span(program[:cut]) == inside[0], (cut, program[:cut])
            checked += 1
    assert checked > 20


def test_the_gate_opens_in_comments_strings_and_whitespace_and_in_prose_off_digits():
    assert not gate_open("x = ", "foo", code=True) and not gate_open("x = ", "42", code=True)
    assert gate_open('x = "', "foo", code=True) and gate_open("x = 1  # ", "note", code=True)
    assert gate_open("x = ", "\n    ", code=True)  # whitespace and indentation
    assert gate_open("The answer is", " about", code=False) and not gate_open("The answer is", " 42", code=False)
