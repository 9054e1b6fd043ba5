"""What every command's parser shares: the parser and help layout, the Spark run options,
defaults from defaults.ini, value lists, and the old spellings of renamed options.

The option vocabulary (docs/reference/vocabulary.md) is kept here in code form: a value
list is one option followed by values separated by spaces, or joined by commas in one word;
a renamed option keeps its old spelling for one release, hidden from --help, with a
one-line warning.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from disc21spark.core import config
from disc21spark.core.version import __version__


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The command's own line breaks in its description, and every option's default at
    the end of its help (an option whose help already says what its empty default means,
    or a flag that is off unless given, shows none)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text or not action.option_strings:
            return text
        if default in (None, False, [], "", argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


class _NotGiven:
    def __repr__(self) -> str:
        return "<not given>"


NOT_GIVEN: Any = _NotGiven()


class Parser(argparse.ArgumentParser):
    """argparse's parser with a help epilog computed only when --help is asked for (an
    epilog may list what a library defines: building the parser must not import it).

    With ``tell_given`` set, a parse leaves each option the command line does not give
    at ``NOT_GIVEN``, and ``given`` then tells the options given and puts the defaults
    in: the command line is parsed once."""

    def __init__(self, *args: Any, epilog_source: Callable[[], str] | None = None, **kwargs: Any):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.epilog_source = epilog_source
        self.tell_given = False

    def format_help(self) -> str:
        if self.epilog_source is not None:
            self.epilog, self.epilog_source = self.epilog_source(), None
        return super().format_help()

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if namespace is None and self.tell_given:  # argparse then sets no default
            namespace = argparse.Namespace(**dict.fromkeys(self._defaulted(), NOT_GIVEN))
        return super().parse_known_args(args, namespace)

    def given(self, args: argparse.Namespace) -> frozenset[str]:
        """The dests of the options ``args`` (this parser's, with ``tell_given``) gives;
        each other one set to its default as argparse sets it (a text default converted
        by the option's type; a bad one is the usage error)."""
        given = {d for d in self._defaulted() if getattr(args, d) is not NOT_GIVEN}
        for action in self._actions:  # an old name shares its dest, with no default
            if action.default is argparse.SUPPRESS or action.dest is argparse.SUPPRESS:
                continue
            if getattr(args, action.dest) is NOT_GIVEN:
                default = action.default
                try:
                    value = (
                        self._get_value(action, default) if isinstance(default, str) else default
                    )
                except argparse.ArgumentError as exc:
                    self.error(str(exc))
                setattr(args, action.dest, value)
        return frozenset(given)

    def _defaulted(self) -> set[str]:
        """The dests argparse gives a default (an option's, not --help's or --version's)."""
        return {
            a.dest
            for a in self._actions
            if a.dest is not argparse.SUPPRESS and a.default is not argparse.SUPPRESS
        }


def version_text() -> str:

    return f"disc21spark {__version__}"


def add_run_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """The options every job shares: where Spark runs, how much it says, the version."""
    parser.add_argument(
        "--master",
        default=config.default(command, "master"),
        metavar="URL",
        help="Spark master, such as local[4] or spark://host:7077 (default: spark-submit's, "
        "else the profile's)",
    )
    parser.add_argument(
        "--profile",
        default=config.default(command, "profile"),
        metavar="NAME",
        help="Spark profile: a file NAME.conf of disc21spark/conf/spark/",
    )
    parser.add_argument("--quiet", action="store_true", help="no phase log lines")
    parser.add_argument("--debug", action="store_true", help="full traces and Spark logs")
    parser.add_argument("--version", action="version", version=version_text())


def add_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    conf: dict[str, Any],
    name: str,
    key: str | None = None,
    **kwargs: Any,
) -> argparse.Action:
    """``parser.add_argument(name, ...)`` with the command's default of that name
    (``--curve-points`` → ``conf["curve_points"]``; ``key`` names another entry)."""
    key = key or name.lstrip("-").replace("-", "_")
    return parser.add_argument(name, default=conf[key], **kwargs)


class ValueList(argparse.Action):
    """Several values after one option: ``--tests crop:50 jumble:4x4`` or
    ``--tests crop:50,jumble:4x4``; stored comma-joined (a str), or as ``convert``
    makes of that text. Paths are not value lists: a comma is legal in a path."""

    def __init__(self, *args: Any, convert: Callable[[str], Any] | None = None, **kwargs: Any):
        kwargs.setdefault("nargs", "+")
        super().__init__(*args, **kwargs)
        self.convert = convert

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        words = [values] if isinstance(values, str) else list(values)
        joined = ",".join(words)  # as given: an empty item stays, for the command's check
        if self.convert is not None:
            try:
                setattr(namespace, self.dest, self.convert(joined))
            except (argparse.ArgumentTypeError, ValueError) as e:
                parser.error(f"argument {option_string}: {e}")
            return
        setattr(namespace, self.dest, joined)


class _Renamed(argparse.Action):
    """An option's old spelling: does what the new one does, after one warning line."""

    def __init__(self, *args: Any, renamed: argparse.Action, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.renamed = renamed

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        new = self.renamed.option_strings[0]
        print(
            f"warning: {option_string} is deprecated, use {new} "
            "(the old name will be removed in the next release)",
            file=sys.stderr,
        )
        self.renamed(parser, namespace, values, new)


def add_old_name(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, old: str, new: argparse.Action
) -> None:
    """``old`` keeps working as ``new`` for one release, hidden from --help."""
    parser.add_argument(
        old,
        action=_Renamed,
        renamed=new,
        dest=new.dest,
        nargs=new.nargs,
        type=new.type,
        choices=new.choices,
        metavar=new.metavar,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )


def add_image_partitions(
    parser: argparse.ArgumentParser, conf: dict[str, Any], images_a_task: int
) -> None:
    """``--image-partitions N`` (old name ``--partitions``) of the commands that describe
    or alter images on Spark; ``images_a_task``: what its default aims at, for --help."""
    tasks = add_option(
        parser,
        conf,
        "--image-partitions",
        type=int,
        metavar="N",
        help=f"Spark tasks the images are split into (default: about {images_a_task} images a task)",
    )
    add_old_name(parser, "--partitions", tasks)


def defaults(command: str) -> dict[str, str | None]:
    """A command's defaults.ini values by key, as argparse defaults: text that argparse
    converts with the option's own type (so the file and the command line read alike),
    None where the file leaves the value empty."""
    return {key: text or None for key, text in config.section(command).items()}
