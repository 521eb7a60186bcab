"""``.. cli-reference::``: the command line's ``--help``, from its own parser.

The page shows what ``skdpval --help`` and ``skdpval SUBCOMMAND --help``
print, rendered when the site is built, so it cannot drift from the code.
The parser is found by asking, in order:

1. ``skdpval.cli.build_parser()`` (the module is the directive's argument,
   default ``skdpval.cli``): one parser, whose subcommands (an argparse
   subparsers action) are rendered each in turn, recursively;
2. failing that, every ``build_parser`` of the module's submodules
   (``skdpval.cli._demo``, ``skdpval.cli._cli``, ...): each parser is
   rendered under its ``prog``, the one of fewest words first.

A parser function may also return several parsers (a list, a tuple or a
dict of them). Help is formatted 79 columns wide, whatever the terminal.
"""

import argparse
import contextlib
import importlib
import os
import pkgutil

WIDTH = "79"


@contextlib.contextmanager
def _columns():
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _as_parsers(made):
    if isinstance(made, argparse.ArgumentParser):
        return [made]
    if isinstance(made, dict):
        made = list(made.values())
    if isinstance(made, (list, tuple)) and all(
            isinstance(p, argparse.ArgumentParser) for p in made):
        return list(made)
    raise TypeError(f"build_parser returned {type(made).__name__}, not parsers")


def find_parsers(module_name="skdpval.cli"):
    """The parsers of the command line, the top-level one first."""
    module = importlib.import_module(module_name)
    if callable(getattr(module, "build_parser", None)):
        return _as_parsers(module.build_parser())
    found = []
    for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
        sub = importlib.import_module(f"{module_name}.{info.name}")
        if callable(getattr(sub, "build_parser", None)):
            found += _as_parsers(sub.build_parser())
    if not found:
        raise LookupError(f"no build_parser in {module_name} or its submodules")
    return sorted(found, key=lambda parser: (len(_name(parser.prog).split()),
                                             _name(parser.prog)))


def _name(prog):
    """``skdpval value`` for ``python -m skdpval value``."""
    return prog.replace("python -m ", "")


def walk(parser):
    """``(prog, help text)`` of a parser and of each of its subcommands."""
    with _columns():
        yield parser.prog, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases once
                yield from walk(sub)


def help_texts(module_name="skdpval.cli"):
    seen, texts = set(), []
    for parser in find_parsers(module_name):
        for prog, text in walk(parser):
            if prog not in seen:
                seen.add(prog)
                texts.append((prog, text))
    return texts


def setup(app):
    # docutils is imported here, so that help_texts() runs without Sphinx
    # (tests/test_docs.py).
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class CliReference(Directive):
        optional_arguments = 1

        def run(self):
            module_name = self.arguments[0] if self.arguments else "skdpval.cli"
            section_nodes = []
            for prog, text in help_texts(module_name):
                name = _name(prog)
                section = nodes.section(ids=[nodes.make_id(f"cli {name}")])
                section += nodes.title(text=name)
                section += nodes.literal_block(text, text, language="text")
                section_nodes.append(section)
            return section_nodes

    app.add_directive("cli-reference", CliReference)
    return {"parallel_read_safe": True, "version": "1"}
