"""The one exception a user ever sees: a one-line message naming the file, row and reason."""

from __future__ import annotations


class InputError(Exception):
    """Bad input; str() is the complete one-line message shown to the user. An empty
    source is for a message that names no file (a bad option value, an unknown name)."""

    def __init__(self, source: str, reason: str, where: str | None = None) -> None:
        self.source = source
        self.where = where
        self.reason = reason
        location = f"{source}: {where}" if where else source
        super().__init__(f"{location}: {reason}" if location else reason)


def column_list(names: object) -> str:
    """The column names of a header, comma separated, as an error message quotes them:
    a name with an invisible character (a byte-order mark, a tab) as its repr."""
    return ", ".join(n if n.isprintable() else repr(n) for n in map(str, names))


class WorkersLost(RuntimeError):
    """A worker process of a pool scored on this machine ended before its file was
    scored: killed (the system's out-of-memory killer, a signal), or unable to start (a
    script with no ``if __name__ == "__main__":``). str() is the one-line message."""


class OutputError(Exception):
    """The output folder cannot be written as asked (exists, not a folder...)."""


def first_line(exc: object, limit: int | None = 300, empty: str = "unknown error") -> str:
    """One line saying why a (Java) call failed: the root cause when Spark wraps one;
    at most ``limit`` characters (None: all of the line), ``empty`` when there is none."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    if java is not None:
        try:
            cause = java
            while cause.getCause() is not None:
                cause = cause.getCause()
            message = cause.getMessage()
            name = cause.getClass().getSimpleName()
            return _first(f"{name}: {message}" if message else name, limit, empty)
        except Exception:  # the gateway may be gone; fall back to the text we have
            pass
    return _first(str(exc), limit, empty)


READ_FAILURES = (
    "FAILED_READ_FILE",
    "IOException",
    "EOFException",
    "ZipException",
    "FileNotFoundException",
    "AccessDeniedException",
    "PATH_NOT_FOUND",
)


def failure_texts(exc: object) -> list[str]:
    """The Python message and every Java cause's class and message."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    texts = [str(exc)]
    try:
        while java is not None:
            texts.append(f"{java.getClass().getName()} {java.getMessage()}")
            java = java.getCause()
    except Exception:  # the gateway may be gone; the Python text is enough
        pass
    return texts


def is_read_failure(exc: object) -> bool:
    """Whether a Spark failure comes from reading input (rather than from our plan)."""
    return any(marker in text for text in failure_texts(exc) for marker in READ_FAILURES)


def _first(text: str, limit: int | None, empty: str) -> str:
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line if limit is None or len(line) <= limit else line[: limit - 3] + "..."
    return empty
