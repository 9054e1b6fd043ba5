"""SQL text for Spark expressions: a plan written as SQL reaches the JVM in one py4j
call, where the same plan built from ``pyspark.sql.functions`` costs a call (and a later
release) for every column, literal and operator."""

from __future__ import annotations

import re

_PLAIN = re.compile(r"[ -~]*")  # printable ASCII


def text(value: str) -> str:
    """A SQL expression whose value is the string ``value``, whatever its characters and
    whatever the session's ``spark.sql.parser.escapedStringLiterals``: plain ASCII
    quoted, anything else as its UTF-8 bytes decoded (a constant the optimizer folds)."""
    if _PLAIN.fullmatch(value) and "'" not in value and "\\" not in value:
        return f"'{value}'"
    return f"decode(unhex('{value.encode('utf-8').hex()}'), 'UTF-8')"
