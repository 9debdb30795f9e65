"""Partition values to time (Java's ``PartitionTimeExtractor``): a subset of Java's date patterns.

Paimon turns partition values into a timestamp with two table options: ``partition.timestamp-pattern``
substitutes the partition columns into a text (``'$dt $hour:00:00'``) and ``partition.timestamp-formatter``
parses that text with a Java ``DateTimeFormatter`` pattern (``'yyyyMMdd HH:mm:ss'``). Python's ``strptime``
directives are a different language, so this module implements the numeric subset of Java patterns that
Paimon allows for chain tables, in both directions: parsing (partition -> time) and formatting (time ->
the partition values Paimon's time stepping would produce). The chain planner uses it to choose the delta
partitions between an anchor and a target; the definition validation uses it to refuse bad patterns;
partition expiration (``partition.expiration-time``, values-time strategy) uses :func:`partition_timestamp`.

It lives in the metadata layer (post-commit maintenance needs it) and depends only on the errors module, the
option declarations and the standard library.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.schema.options import PARTITION_TIMESTAMP_FORMATTER, PARTITION_TIMESTAMP_PATTERN

__all__ = ["JavaDateFormat", "PartitionTimeResolver", "partition_timestamp"]

# The two table options this module interprets (named in its error messages).
TIMESTAMP_PATTERN = PARTITION_TIMESTAMP_PATTERN.key  # for messages
TIMESTAMP_FORMATTER = PARTITION_TIMESTAMP_FORMATTER.key


# ------------------------------------------------------------------------------------------------------
# Java DateTimeFormatter subset
# ------------------------------------------------------------------------------------------------------
_ALLOWED_LETTERS = frozenset("yuMLdDHkms")


@dataclass(frozen=True)
class _Tok:
    letter: str  # "" for a literal
    count: int = 0
    text: str = ""


class JavaDateFormat:
    """The numeric subset of Java's ``DateTimeFormatter`` patterns that Paimon allows for chain tables.

    Letters ``y u M L d D H k m s`` (numeric forms) and literals (plain characters or ``'quoted'`` text).
    Anything else is refused with a :class:`ChainTableError`, as Paimon's validation does: the formatter
    must step by whole seconds at least and must pin a complete date.
    """

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.tokens = self._tokenize(pattern)
        letters = {t.letter for t in self.tokens if t.letter}
        has_year = bool(letters & {"y", "u"})
        has_month_day = bool(letters & {"M", "L"}) and "d" in letters
        if not (has_year and (has_month_day or "D" in letters)):
            raise ChainTableError(
                f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' must contain a complete date: a year (y or u) and "
                "either month and day (M and d) or the day of the year (D), e.g. 'yyyyMMdd'."
            )
        self._regex = re.compile("".join(self._regex_of(t) for t in self.tokens) + r"\Z")

    @staticmethod
    def _tokenize(pattern: str) -> list[_Tok]:
        tokens: list[_Tok] = []
        i, n = 0, len(pattern)
        while i < n:
            c = pattern[i]
            if c == "'":
                j = i + 1
                buf = []
                while True:
                    if j >= n:
                        raise ChainTableError(
                            f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' has an unterminated quote."
                        )
                    if pattern[j] == "'":
                        if j + 1 < n and pattern[j + 1] == "'":
                            buf.append("'")
                            j += 2
                            continue
                        break
                    buf.append(pattern[j])
                    j += 1
                tokens.append(_Tok("", 0, "'" if j == i + 1 else "".join(buf)))
                i = j + 1
                continue
            if c.isascii() and c.isalpha():
                if c not in _ALLOWED_LETTERS:
                    raise ChainTableError(
                        f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' uses the pattern letter '{c}'. Chain tables "
                        "allow only y u M L d D H k m s (numeric) plus literals; the smallest step is one second."
                    )
                j = i
                while j < n and pattern[j] == c:
                    j += 1
                count = j - i
                if c in "ML" and count >= 3:
                    raise ChainTableError(
                        f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' uses a text month ('{c * count}'); use the "
                        "numeric form 'MM' (text months cannot be partition-sortable)."
                    )
                if c in "dHkms" and count > 2 or c == "D" and count > 3:
                    raise ChainTableError(
                        f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}': '{c * count}' is too many pattern letters."
                    )
                tokens.append(_Tok(c, count))
                i = j
                continue
            if c in "[]{}#":
                raise ChainTableError(
                    f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' uses the reserved character "
                    f"'{c}'; quote it ('{c}') to use it as a literal."
                )
            if tokens and not tokens[-1].letter:
                tokens[-1] = _Tok("", 0, tokens[-1].text + c)
            else:
                tokens.append(_Tok("", 0, c))
            i += 1
        return tokens

    @staticmethod
    def _regex_of(t: _Tok) -> str:
        if not t.letter:
            return re.escape(t.text)
        c, k = t.letter, t.count
        if c in "yu":
            body = r"\d{2}" if k == 2 else r"\d{%d,9}" % k
        elif c == "D":
            body = {1: r"\d{1,3}", 2: r"\d{2,3}"}.get(k, r"\d{3}")
        else:
            body = r"\d{1,2}" if k == 1 else r"\d{2}"
        return f"({body})"

    def parse(self, text: str) -> _dt.datetime:
        m = self._regex.match(text)
        if m is None:
            raise ValueError(f"'{text}' does not match the formatter '{self.pattern}'")
        fields = [t for t in self.tokens if t.letter]
        year = month = day = doy = None
        hour = minute = second = 0
        for t, g in zip(fields, m.groups()):
            v = int(g)
            if t.letter in "yu":
                year = 2000 + v if t.count == 2 else v
            elif t.letter in "ML":
                month = v
            elif t.letter == "d":
                day = v
            elif t.letter == "D":
                doy = v
            elif t.letter == "H":
                hour = v
            elif t.letter == "k":
                if not 1 <= v <= 24:
                    raise ValueError(f"clock hour {v} out of range")
                hour = 0 if v == 24 else v
            elif t.letter == "m":
                minute = v
            elif t.letter == "s":
                second = v
        assert year is not None
        if month is not None and day is not None:
            base = _dt.datetime(year, month, day)
        else:
            assert doy is not None
            if not 1 <= doy <= (366 if _is_leap(year) else 365):
                raise ValueError(f"day of year {doy} out of range")
            base = _dt.datetime(year, 1, 1) + _dt.timedelta(days=doy - 1)
        return base.replace(hour=hour, minute=minute, second=second)

    def format(self, value: _dt.datetime) -> str:
        out = []
        for t in self.tokens:
            if not t.letter:
                out.append(t.text)
                continue
            c, k = t.letter, t.count
            if c in "yu":
                out.append(f"{value.year % 100:02d}" if k == 2 else f"{value.year:0{k}d}")
            elif c in "ML":
                out.append(f"{value.month:0{k}d}")
            elif c == "d":
                out.append(f"{value.day:0{k}d}")
            elif c == "D":
                out.append(f"{value.timetuple().tm_yday:0{k}d}")
            elif c == "H":
                out.append(f"{value.hour:0{k}d}")
            elif c == "k":
                out.append(f"{value.hour or 24:0{k}d}")
            elif c == "m":
                out.append(f"{value.minute:0{k}d}")
            elif c == "s":
                out.append(f"{value.second:0{k}d}")
        return "".join(out)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


class PartitionTimeResolver:
    """Partition values <-> a timestamp, via ``partition.timestamp-pattern`` and ``-formatter``.

    The pattern references partition columns as ``$col`` (``'$dt $hour:00:00'``); substituting the values
    gives a text the formatter parses. :meth:`render` goes back: format a timestamp and read the column
    values out of the text by matching the pattern, so a partition is *canonical* when rendering its own
    timestamp gives its own values (e.g. hour ``'09'``, not ``'9'``).
    """

    def __init__(self, pattern: str, formatter: str, partition_keys: Sequence[str]):
        self.pattern = pattern
        self.format = JavaDateFormat(formatter)
        keys = sorted(partition_keys, key=len, reverse=True)  # '$dtx' must not be read as '$dt' + 'x'
        parts: list[tuple[str, str]] = []  # ("key", name) or ("lit", text)
        i = 0
        while i < len(pattern):
            if pattern[i] == "$":
                name = next((k for k in keys if pattern.startswith(k, i + 1)), None)
                if name is not None:
                    parts.append(("key", name))
                    i += 1 + len(name)
                    continue
            if parts and parts[-1][0] == "lit":
                parts[-1] = ("lit", parts[-1][1] + pattern[i])
            else:
                parts.append(("lit", pattern[i]))
            i += 1
        self.columns = list(dict.fromkeys(name for kind, name in parts if kind == "key"))
        if not self.columns:
            raise ChainTableError(
                f"Option '{TIMESTAMP_PATTERN}' = '{pattern}' references no partition column; write it with $col, "
                f"e.g. '${partition_keys[-1] if partition_keys else 'dt'}' (partition columns: "
                f"{', '.join(partition_keys)})."
            )
        self._parts = parts
        regex: list[str] = []
        seen: dict[str, int] = {}
        for kind, text in parts:
            if kind == "lit":
                regex.append(re.escape(text))
            elif text in seen:
                regex.append(f"(?P=g{seen[text]})")
            else:
                seen[text] = len(seen)
                regex.append(f"(?P<g{seen[text]}>.+?)")
        self._groups = {name: f"g{idx}" for name, idx in seen.items()}
        self._regex = re.compile("".join(regex) + r"\Z", re.DOTALL)

    def text_of(self, values: Mapping[str, Any]) -> str:
        return "".join(_value_text(values.get(text)) if kind == "key" else text for kind, text in self._parts)

    def to_time(self, values: Mapping[str, Any]) -> _dt.datetime:
        """The timestamp of a partition; ValueError when its values do not fit the pattern/formatter."""
        if any(values.get(c) is None for c in self.columns):
            raise ValueError("a referenced partition value is NULL")
        return self.format.parse(self.text_of(values))

    def render(self, value: _dt.datetime) -> dict[str, str] | None:
        m = self._regex.match(self.format.format(value))
        if m is None:
            return None
        return {name: m.group(g) for name, g in self._groups.items()}

    def canonical_time(self, values: Mapping[str, Any]) -> _dt.datetime | None:
        """The timestamp of a partition that time stepping would produce, else None."""
        try:
            t = self.to_time(values)
        except (ValueError, OverflowError):
            return None
        rendered = self.render(t)
        if rendered is None or any(rendered[c] != _value_text(values.get(c)) for c in self.columns):
            return None
        return t


def _value_text(v: Any) -> str:
    if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
        return v.isoformat()
    return "" if v is None else str(v)


# Java's default when no formatter is set: 'yyyy-M-d' optionally followed by ' H:m:s' and a fraction.
_DEFAULT_TIMESTAMP = re.compile(r"(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?\Z")


def _substitute(pattern: str, keys: Sequence[str], values: Sequence[Any]) -> str:
    """``pattern`` with each ``$key`` replaced by that partition value (longer keys first, so ``$dt`` does not
    match inside ``$dt1``); a ``$`` naming no key stays as it is."""
    by_length = sorted(range(len(keys)), key=lambda i: len(keys[i]), reverse=True)
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "$":
            idx = next((j for j in by_length if pattern.startswith(keys[j], i + 1)), None)
            if idx is not None:
                if values[idx] is None:
                    raise ValueError(f"partition value of '{keys[idx]}' is NULL")
                out.append(_value_text(values[idx]))
                i += 1 + len(keys[idx])
                continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def partition_timestamp(
    keys: Sequence[str], values: Sequence[Any], pattern: str | None, formatter: str | None
) -> _dt.datetime:
    """The local time of a partition, as Java's ``PartitionTimeExtractor`` reads it: the text is the first
    partition value, or ``pattern`` with ``$key`` substituted; it is parsed with ``formatter`` (a date-only
    formatter gives midnight), or without one as ``yyyy-M-d[ H:m:s[.fraction]]``.

    Raises ValueError when the values do not fit (NULL, or not a date in that form) and
    :class:`ChainTableError` when ``formatter`` is outside the supported subset of Java patterns."""
    if pattern is None:
        if not values or values[0] is None:
            raise ValueError("the first partition value is NULL")
        text = _value_text(values[0])
    else:
        text = _substitute(pattern, keys, values)
    if formatter is not None:
        return JavaDateFormat(formatter).parse(text)
    m = _DEFAULT_TIMESTAMP.match(text)
    if m is None:
        raise ValueError(f"'{text}' is not a date 'yyyy-MM-dd' nor a timestamp 'yyyy-MM-dd HH:mm:ss'")
    y, mo, d, h, mi, s, frac = m.groups()
    micros = int((frac or "0").ljust(9, "0")[:6])
    return _dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), micros)
