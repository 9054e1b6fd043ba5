"""The command-line reference in Markdown, written from the parsers themselves (the docs
site's CLI page), so that it cannot drift from what the commands accept."""

from __future__ import annotations

import argparse

from disc21spark.commands import COMMANDS, main_parser
from disc21spark.commands.common import HelpFormatter, _Renamed


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _sentence(text: str) -> str:
    text = _cell(text)
    return text[:1].upper() + text[1:] + "."


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "flag"
    if action.choices:
        return " \\| ".join(f"`{c}`" for c in action.choices)
    metavar = action.metavar or action.dest.upper()
    return f"`{metavar} ...`" if action.nargs == "+" else f"`{metavar}`"


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.default in (None, False, [], "", argparse.SUPPRESS):
        return "—"
    value = action.default
    if isinstance(value, list | tuple):
        value = ",".join(str(v) for v in value)
    return f"`{value}`"


def _help(action: argparse.Action) -> str:
    text = (action.help or "").replace("(default: %(default)s)", "")
    if "%(" in text:
        text = text % {"default": action.default, "prog": "disc21spark"}
    return _cell(text)


def options_table(parser: argparse.ArgumentParser) -> list[str]:
    """One row per option: name, value, default, help; old spellings in their own column."""
    renamed = {
        a.renamed.dest + a.renamed.option_strings[0]: a.option_strings[0]
        for a in parser._actions
        if isinstance(a, _Renamed)
    }
    rows = ["| option | value | default | what it does | old name |", "|---|---|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, _Renamed) or action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._HelpAction | argparse._VersionAction):
            continue
        name = ", ".join(f"`{o}`" for o in action.option_strings)
        old = renamed.get(action.dest + action.option_strings[0], "")
        old = f"`{old}`" if old else ""
        cells = (name, _value(action), _default(action), _help(action), old)
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def command_markdown(name: str) -> str:
    """The reference of one command: usage, description, options, epilog."""
    _, parsers = main_parser()
    parser = parsers[name]
    usage = HelpFormatter(prog=parser.prog, width=88)
    usage.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    epilog = parser.epilog_source() if getattr(parser, "epilog_source", None) else parser.epilog
    parts = [
        f"## `disc21spark {name}`",
        "",
        _sentence(COMMANDS[name].SUMMARY),
        "",
        "```text",
        usage.format_help().strip(),
        "```",
        "",
        "```text",
        (parser.description or "").strip(),
        "```",
        "",
        *options_table(parser),
    ]
    if epilog:
        parts += ["", "```text", epilog.strip(), "```"]
    return "\n".join(parts) + "\n"


def markdown() -> str:
    """Every command's reference, in the order of ``disc21spark --help``."""
    return "\n".join(command_markdown(name) for name in COMMANDS)
