"""Every command of `python -m core` with its parser, for the CLI tests (help, fuzz)."""

import argparse

from core import registry
from core.commands import PLAIN, _plain_parser, spec_parser


def spec_commands() -> list[tuple[list[str], object]]:
    """``(command words, spec)`` of every spec command, and `demo build` (the demo-build spec)."""
    specs = registry.all_specs()
    return [([name], spec) for name, spec in specs.items()] + [(["demo", "build"],
                                                               specs["demo-build"])]


def _tree(parser: argparse.ArgumentParser, words: list[str]):
    yield words, parser
    for sub in (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)):
        for name, child in sub.choices.items():
            if child.prefix_chars == "-":  # `demo build` hands its words on to the spec
                yield from _tree(child, [*words, name])


def plain_commands() -> list[tuple[list[str], argparse.ArgumentParser]]:
    """``(command words, parser)`` of every plain command and subcommand (`runs`, `runs show`)."""
    found = []
    for command in PLAIN:
        found += [(words, parser) for words, parser in _tree(_plain_parser(command), [])
                  if words and words[0] == command]
    return found


def all_parsers() -> list[tuple[list[str], argparse.ArgumentParser]]:
    """Every command's parser: the spec commands' and the plain ones'."""
    return [(words, spec_parser(spec, " ".join(words))) for words, spec in spec_commands()] \
        + plain_commands()


def is_leaf(parser: argparse.ArgumentParser) -> bool:
    return not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
