"""What kind of token a relaxed acceptance let through: whitespace, punctuation, a keyword, an identifier, a number,
string or comment text (code), or a word (prose).

Code is classed by Python's own tokenizer run over the whole program (a HumanEval prompt and its completion): a
relaxed token takes the class of the Python token holding its first visible character (a BPE token can span
several, such as "):"), and a token of spaces and newlines is whitespace. Where Python's tokenizer cannot read the
text (a cut-off completion, prose), the token's own text decides (`text_kind`). Pure Python: no model.
"""

from __future__ import annotations

import bisect
import io
import keyword
import re
import tokenize

CODE_KINDS = ("whitespace", "punctuation", "keyword", "identifier", "number", "string", "comment")
PROSE_KINDS = ("word", "number", "punctuation", "whitespace")
KINDS = tuple(dict.fromkeys(CODE_KINDS + PROSE_KINDS))
LABELS = {
    "whitespace": "whitespace and indentation",
    "punctuation": "punctuation and operators",
    "keyword": "keywords",
    "identifier": "identifiers",
    "number": "numbers",
    "string": "string text",
    "comment": "comment text",
    "word": "words",
}
_PYTHON = {
    tokenize.NUMBER: "number",
    tokenize.STRING: "string",
    tokenize.COMMENT: "comment",
    tokenize.OP: "punctuation",
}
_PYTHON |= {
    getattr(tokenize, name): "string"
    for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
    if hasattr(tokenize, name)
}
_WORD = re.compile(r"\w", re.UNICODE)


def text_kind(text: str, code: bool = True) -> str:
    """A token's kind from its text alone: whitespace; a number; for code a keyword or an identifier (prose: a
    word) when it holds a letter; punctuation otherwise."""
    visible = text.strip()
    if not visible:
        return "whitespace"
    if not code:  # prose: a digit without a letter is a number (a relaxed digit changes a word problem's answer)
        if re.search(r"\d", visible) and not re.search(r"[^\W\d_]", visible):
            return "number"
        return "word" if _WORD.search(visible) else "punctuation"
    if re.fullmatch(r"\d[\d_]*(\.\d*)?([eE][-+]?\d+)?j?|\.\d+", visible):
        return "number"
    if visible.startswith("#"):
        return "comment"
    if visible[0] in "\"'":
        return "string"
    if _WORD.match(visible):
        return "keyword" if keyword.iskeyword(visible) else "identifier"
    return "punctuation"


def python_tokens(source: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) character spans of Python's tokens in `source`, as far as the tokenizer reads it."""
    starts = [0] + [m.end() for m in re.finditer("\n", source)]  # offset of each line's first character

    def offset(row: int, col: int) -> int:
        return starts[row - 1] + col if row - 1 < len(starts) else len(source)

    spans = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NAME:
                kind = "keyword" if keyword.iskeyword(tok.string) or keyword.issoftkeyword(tok.string) else "identifier"
            elif tok.type in _PYTHON:
                kind = _PYTHON[tok.type]
            else:
                continue  # NEWLINE, NL, INDENT, DEDENT, ENDMARKER: whitespace, found from the text
            spans.append((offset(*tok.start), offset(*tok.end), kind))
    except (tokenize.TokenError, SyntaxError):
        pass  # the text ends mid-statement (or is not Python): what was read so far stands
    return spans


def code_kinds(source: str, tokens: list[tuple[int, str]]) -> list[str]:
    """The kind of each (offset, text) token of `source`: the Python token under its first visible character, or
    its own text where no Python token covers it."""
    spans = python_tokens(source)
    starts = [s for s, _, _ in spans]
    out = []
    for start, text in tokens:
        lead = len(text) - len(text.lstrip())
        if not text.strip():
            out.append("whitespace")
            continue
        at = start + lead
        i = bisect.bisect_right(starts, at) - 1
        if i >= 0 and spans[i][0] <= at < spans[i][1]:
            out.append(spans[i][2])
        else:
            out.append(text_kind(text, code=True))
    return out


# ---- span gating: where a rule may relax, decided live -------------------------------------------------------------


_OPENS = re.compile(r"[#\"']")


def python_span(text: str) -> str:
    """Where the end of `text` stands, read as Python by its quotes and comment marks alone: "comment" after a `#` on
    its line, "string" inside a quoted literal (triple-quoted ones across lines; an f-string's fields count as its
    text), else "code". A one-quote literal left open at a line's end closes there, as Python's tokenizer gives up on
    it. Pure text, so it reads a program cut off anywhere, as a decode sees it at each verified position; it skips
    from mark to mark, so a long program costs a few hundred steps."""
    i, n = 0, len(text)
    while True:
        found = _OPENS.search(text, i)
        if found is None:
            return "code"
        i = found.start()
        if text[i] == "#":
            end = text.find("\n", i)
            if end < 0:
                return "comment"
            i = end + 1
            continue
        quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else text[i]
        stops = re.compile(re.escape(quote) + r"|\\" + ("" if len(quote) == 3 else r"|\n"))
        i += len(quote)
        while True:
            stop = stops.search(text, i)
            if stop is None:
                return "string"
            if stop.group() == "\\":  # a backslash keeps the next character in the literal, raw or not
                if stop.end() >= n:
                    return "string"
                i = stop.end() + 1
                continue
            i = stop.end()  # the literal closes (or, one-quoted, gives up at the line's end)
            break


def gate_open(prefix: str, piece: str, code: bool) -> bool:
    """Whether span gating lets a rule relax at a draft token `piece` that follows `prefix`. Code: where the prefix
    stands inside a comment or a string (`python_span`), or the token is whitespace; never on an identifier, a number,
    a keyword or punctuation of the program itself. Prose (a chat turn), this project's choice: anywhere but a token
    that holds a digit, since a changed number changes an answer the way a changed identifier changes a program."""
    if code:
        return not piece.strip() or python_span(prefix) != "code"
    return not any(ch.isdigit() for ch in piece)
