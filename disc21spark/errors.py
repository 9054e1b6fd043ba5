"""The one exception a user ever sees: a one-line message naming the file, row and reason."""

from __future__ import annotations


class InputError(Exception):
    """Bad input; str() is the complete one-line message shown to the user."""

    def __init__(self, source: str, reason: str, where: str | None = None) -> None:
        self.source = source
        self.where = where
        self.reason = reason
        location = f"{source}: {where}" if where else source
        super().__init__(f"{location}: {reason}")


class OutputError(Exception):
    """The output folder cannot be written as asked (exists, not a folder...)."""


def first_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of a (Java) error message, shortened."""
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return "unknown error"
