"""What a user asks of each image command, typed: one frozen dataclass a command, every
option by its option's name, defaults from defaults.ini. The command line parses into
one (``Request.of_namespace``), the Python API builds one from its keywords
(``api.inputs.request``); ``checked()`` applies the rules no single option can say, in
the command line's words (UsageError), and the command's ``job_of`` builds its job from
the checked request. ``disc21spark evaluate``'s is ``evaluate_request.EvaluateRequest``.
Each request names the options of the paths it reads (``READS``) and writes
(``WRITES``) once; ``checked(request)`` holds them to ``core/keep.py``'s rules.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from disc21spark.core import config, keep
from disc21spark.core.config import from_defaults

# make-library: a library this large is refused before anything is planned
MAX_SIZE = 10_000_000


class UsageError(ValueError):
    """A request the command refuses, in the command line's words (the command line
    prints its usage and exits 2; the API raises InputError with the same words)."""


@dataclass(frozen=True, kw_only=True)
class Request:
    """The options every command shares (where Spark runs, how much it says), and
    ``given``: the options set explicitly, the others being defaults."""

    SECTION: ClassVar[str] = ""
    # the options that name paths the command reads, and those it writes (core/keep.py)
    READS: ClassVar[tuple[str, ...]] = ()
    WRITES: ClassVar[tuple[str, ...]] = ("output",)

    master: str | None = from_defaults()
    profile: str = from_defaults()
    quiet: bool = False
    debug: bool = False
    given: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        config.fill_defaults(self, self.SECTION)

    @classmethod
    def of_namespace(cls, args: Any) -> Request:
        """The request an argparse Namespace of the command's parser holds."""
        names = [f.name for f in dataclasses.fields(cls) if hasattr(args, f.name)]
        return cls(**{name: getattr(args, name) for name in names})

    def checked(self) -> Request:
        """This request, once the rules no single option can say hold (UsageError)."""
        return self

    def paths(self, names: tuple[str, ...]) -> dict[str, list[str]]:
        """The paths the options ``names`` give, by option (``--predictions`` → its
        paths); an option not given is left out."""
        found = {}
        for name in names:
            value = getattr(self, name)
            if value is not None:
                given = [value] if isinstance(value, str) else list(value)
                found["--" + name.replace("_", "-")] = [str(v) for v in given]
        return found


def checked(request: Request) -> Request:
    """``request`` once every rule holds: no path option empty (UsageError), the rules
    of its ``checked()``, then no output over a path it reads or a frozen board
    (OutputError, ``core/keep.py``). The one check of the command line and the API."""
    paths = request.paths(request.READS + request.WRITES)
    for option, given in paths.items():
        if any(not text.strip() for text in given):
            raise UsageError(f"{option}: an empty path (give a file or folder)")
    request = request.checked()
    writes = {option: given[0] for option, given in request.paths(request.WRITES).items()}
    keep.check(request.paths(request.READS), writes, getattr(request, "overwrite", False))
    return request


@dataclass(frozen=True)
class LibraryRequest(Request):
    """``disc21spark make-library``."""

    SECTION: ClassVar[str] = "make-library"

    output: str
    size: int
    seed: int = from_defaults(int)
    width: int = from_defaults(int)
    height: int = from_defaults(int)
    leaves: str = from_defaults()
    no_photos: bool = False
    overwrite: bool = False

    def checked(self) -> LibraryRequest:
        # the library's own rules (size, seed, dimensions) are the job's to check
        if self.size > MAX_SIZE:
            raise UsageError(f"--size must be at most {MAX_SIZE:,}")
        return self


@dataclass(frozen=True)
class QueriesRequest(Request):
    """``disc21spark make-queries``."""

    SECTION: ClassVar[str] = "make-queries"
    READS: ClassVar[tuple[str, ...]] = ("images",)

    images: list[str]
    output: str
    overwrite: bool = False
    tests: str = from_defaults()  # comma-joined, as --tests stores them
    queries_per_test: int = from_defaults(int)
    distractors: float = from_defaults(float)
    seed: int = from_defaults(int)
    query_format: str = from_defaults()
    sheet_per_test: int = from_defaults(int)
    image_partitions: int | None = from_defaults(int)

    def checked(self) -> QueriesRequest:
        if self.seed < 0 or below_one(self.image_partitions):
            raise UsageError("--seed must be ≥ 0 and --image-partitions ≥ 1")
        if self.sheet_per_test < 0:
            raise UsageError("--sheet-per-test must be ≥ 0")
        return self


@dataclass(frozen=True)
class ExtractRequest(Request):
    """``disc21spark extract``."""

    SECTION: ClassVar[str] = "extract"
    READS: ClassVar[tuple[str, ...]] = ("images", "bench")

    method: str
    output: str
    images: list[str] | None = None
    bench: str | None = None
    overwrite: bool = False
    image_partitions: int | None = from_defaults(int)

    def checked(self) -> ExtractRequest:
        if below_one(self.image_partitions):
            raise UsageError("--image-partitions must be ≥ 1")
        return self


@dataclass(frozen=True)
class FreezeRequest(Request):
    """``disc21spark freeze``."""

    SECTION: ClassVar[str] = "freeze"
    READS: ClassVar[tuple[str, ...]] = ("board",)

    board: str
    output: str


@dataclass(frozen=True)
class RankRequest(Request):
    """``disc21spark rank-eval``."""

    SECTION: ClassVar[str] = "rank-eval"
    READS: ClassVar[tuple[str, ...]] = ("bench",)

    bench: str
    output: str
    methods: str = from_defaults()  # comma-joined, as --methods stores them
    overwrite: bool = False
    knn: int = from_defaults(int)
    subsets: int = from_defaults(int)
    sizes: list[int] = field(default_factory=list)
    seed: int = from_defaults(int)
    resamples: int = from_defaults(int)
    query_partitions: int | None = from_defaults(int)
    ties: str = from_defaults()
    distance: str = ""  # METHOD=DISTANCE,...: each method's own unless given

    def checked(self) -> RankRequest:
        if self.knn < 1 or self.subsets < 1 or self.resamples < 10 or self.seed < 0:
            raise UsageError("--knn and --subsets must be ≥ 1, --resamples ≥ 10, --seed ≥ 0")
        if below_one(self.query_partitions):
            raise UsageError("--query-partitions must be ≥ 1")
        return self


def below_one(value: int | None) -> bool:
    # None: the job decides; 0 is a value given, and refused
    return value is not None and value < 1
