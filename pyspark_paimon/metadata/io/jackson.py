"""JSON spelled the way Java Paimon's Jackson writes it (schema and tag files).

Readers do not care about whitespace, but byte-identical files make diffs against tables written by Java
trivial; this is the one serialiser for files Java writes with Jackson's default pretty printer.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _json_string(s: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES.get(m.group(0), "\\u%04X" % ord(m.group(0))), s) + '"'


def _write_json(value: Any, level: int, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append("{ }")
            return
        out.append("{")
        first = True
        for k, v in value.items():
            out.append("\n" if first else ",\n")
            out.append("  " * (level + 1))
            out.append(_json_string(str(k)))
            out.append(" : ")
            _write_json(v, level + 1, out)
            first = False
        out.append("\n" + "  " * level + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, v in enumerate(value):
            if i:
                out.append(", ")
            _write_json(v, level, out)
        out.append(" ]")
    elif isinstance(value, str):
        out.append(_json_string(value))
    elif value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(json.dumps(value))
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")


def to_jackson_json(value: Any) -> str:
    """Serialise like Jackson's default pretty printer (``"key" : value``, 2-space object indent,
    arrays inline as ``[ a, b ]``, empty ``[ ]``/``{ }``), which is what Java Paimon writes for schema,
    snapshot and tag files. Readers do not care, but identical bytes make diffs against Java trivial."""
    out: list[str] = []
    _write_json(value, 0, out)
    return "".join(out)
