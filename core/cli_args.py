"""One grammar for the folder a command reads: ``npuprof VERB DIR`` or msprof's ``npuprof VERB -dir DIR``
(``--collection-dir DIR``, msprof.pyc's), on every verb, with one help text.

Example::

    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_folder_argument(p, "path")
    >>> args = p.parse_args(["-dir", "./prof"])
    >>> resolve_folder_argument(args)
    >>> args.path
    './prof'
"""
from __future__ import annotations

import argparse

from .errors import ProfilerConfigError

RUN_FOLDER_HELP = "a run folder, or a folder with runs below it (give it as DIR or as msprof's -dir DIR)"
_DEST = "_folder_dest"


def add_folder_argument(parser: argparse.ArgumentParser, dest: str, help: str = RUN_FOLDER_HELP) -> None:
    """Add the folder as an optional positional ``DIR`` and as ``-dir/--dir DIR``; after parsing,
    :func:`resolve_folder_argument` puts the one given into ``args.<dest>``."""
    parser.add_argument(f"_{dest}_positional", nargs="?", default=None, metavar="DIR", help=help)
    parser.add_argument("-dir", "--dir", "--collection-dir", dest=f"_{dest}_option", default=None, metavar="DIR",
                        help="the same as DIR (msprof's spelling; msprof.pyc's --collection-dir)")
    parser.set_defaults(**{_DEST: dest})


def take_late_folder(args: argparse.Namespace, extras: list[str]) -> list[str]:
    """argparse matches a verb's positionals in one go: in ``export summary --format json DIR`` the
    optional DIR was already passed over when DIR comes. Take it from the unrecognised ``extras``
    (the first one not an option); returns the rest."""
    dest = getattr(args, _DEST, None)
    if dest is None or getattr(args, f"_{dest}_positional", None) is not None:
        return extras
    for i, text in enumerate(extras):
        if not text.startswith("-"):
            setattr(args, f"_{dest}_positional", text)
            return extras[:i] + extras[i + 1:]
    return extras


def resolve_folder_argument(args: argparse.Namespace) -> None:
    """Set ``args.<dest>`` from DIR or -dir DIR; a usage error (:class:`ProfilerConfigError`) when
    neither is given, or both name different folders."""
    dest = getattr(args, _DEST, None)
    if dest is None:
        return
    positional, option = getattr(args, f"_{dest}_positional"), getattr(args, f"_{dest}_option")
    if positional is None and option is None:
        raise ProfilerConfigError("DIR", None, "the folder to read, as DIR or as -dir DIR")
    if positional is not None and option is not None and positional != option:
        raise ProfilerConfigError("-dir", option, f"one folder: DIR {positional!r} was given as well")
    setattr(args, dest, positional if positional is not None else option)
