"""The tokenizer and token cursor shared by the two type-string parsers.

Paimon's schema-file type strings (:mod:`pyspark_paimon.metadata.types.json_codec`) and Spark DDL column lists
(:mod:`pyspark_paimon.metadata.types.ddl`) have the same lexical shape: words, integers, backtick-quoted
identifiers, quoted strings and the symbols ``(),<>:``. They differ only in string escapes
(``backslash_escapes``) and in the error each raises (``fail``), so one tokenizer serves both and keeps
their quoting rules in step. Pure Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

__all__ = ["Token", "tokenize", "Cursor"]


@dataclass(frozen=True)
class Token:
    """One lexical token; ``pos`` is its offset in the parsed text, for error messages."""

    kind: str  # WORD, INT, QIDENT, STRING, SYM, EOF
    value: str
    pos: int


_WORD_RE = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str, backslash_escapes: bool, fail: Callable[[str, int], Exception]) -> list[Token]:
    """Split ``text`` into tokens ending with an ``EOF`` token. ``backslash_escapes`` enables Spark's
    string syntax (``\\n``-style escapes, double-quoted strings); ``fail(msg, pos)`` builds the error."""
    toks: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in "(),<>:":
            toks.append(Token("SYM", c, i))
            i += 1
            continue
        if c == "`":
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise fail("unterminated `quoted` identifier", i)
                if text[j] == "`":
                    if j + 1 < n and text[j + 1] == "`":
                        buf.append("`")
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            toks.append(Token("QIDENT", "".join(buf), i))
            i = j + 1
            continue
        if c == "'" or (c == '"' and backslash_escapes):
            quote, j, buf = c, i + 1, []
            while True:
                if j >= n:
                    raise fail("unterminated string literal", i)
                ch = text[j]
                if backslash_escapes and ch == "\\" and j + 1 < n:
                    nxt = text[j + 1]
                    buf.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
                    j += 2
                    continue
                if ch == quote:
                    if j + 1 < n and text[j + 1] == quote:
                        buf.append(quote)
                        j += 2
                        continue
                    break
                buf.append(ch)
                j += 1
            toks.append(Token("STRING", "".join(buf), i))
            i = j + 1
            continue
        m = _WORD_RE.match(text, i)
        if m:
            word = m.group(0)
            toks.append(Token("INT" if word.isdigit() else "WORD", word, i))
            i = m.end()
            continue
        raise fail(f"unexpected character {c!r}", i)
    toks.append(Token("EOF", "", n))
    return toks


class Cursor:
    """A position in a token list with the accept/expect steps of a recursive-descent parser."""

    def __init__(self, toks: list[Token], fail: Callable[[str, int], Exception]) -> None:
        self.toks = toks
        self.i = 0
        self.fail = fail

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def advance(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "EOF":
            self.i += 1
        return t

    def is_word(self, *words: str) -> bool:
        t = self.tok
        return t.kind == "WORD" and t.value.upper() in words

    def accept_word(self, *words: str) -> bool:
        if self.is_word(*words):
            self.advance()
            return True
        return False

    def expect_word(self, word: str) -> None:
        if not self.accept_word(word):
            raise self.error(f"expected {word}")

    def is_sym(self, s: str) -> bool:
        return self.tok.kind == "SYM" and self.tok.value == s

    def accept_sym(self, s: str) -> bool:
        if self.is_sym(s):
            self.advance()
            return True
        return False

    def expect_sym(self, s: str) -> None:
        if not self.accept_sym(s):
            raise self.error(f"expected '{s}'")

    def expect_int(self, what: str) -> int:
        t = self.tok
        if t.kind != "INT":
            raise self.error(f"expected {what} (an integer)")
        self.advance()
        return int(t.value)

    def error(self, msg: str) -> Exception:
        t = self.tok
        found = "end of input" if t.kind == "EOF" else repr(t.value)
        return self.fail(f"{msg}, found {found}", t.pos)
