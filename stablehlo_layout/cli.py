"""The ``stablehlo-layout`` command (mirrors ``mlir-opt`` habits).

    stablehlo-layout assign [--target T] [--entry-layouts default|free]
                            [--mlir-print-debuginfo] [-o OUT] INPUT

Bad input ends with one ``file:line:col: error: reason`` line on stderr and
exit code 1; the input file is never written, and ``-o`` is written
atomically.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from typing import Sequence

from .errors import InputError, PassError

TARGETS = ("generic", "xla-cpu", "xla-gpu")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 1, like every other failure
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(1)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="stablehlo-layout", description="XLA-faithful layout assignment for StableHLO.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    a = sub.add_parser("assign", help="assign layouts and insert copies; print the module")
    a.add_argument("input", metavar="INPUT",
                   help="MLIR text or bytecode, an HLO text module, or a jax.export artifact; - for stdin")
    a.add_argument("--target", default="generic",
                   help=f"backend rules: {', '.join(TARGETS)} (default: generic)")
    a.add_argument("--entry-layouts", choices=("default", "free"), default="default",
                   help="unstated entry layouts: pinned to the default, or chosen by propagation")
    a.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations")
    a.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    return p


def _write_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path)) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=".stablehlo-layout-", dir=directory)
    except OSError as e:
        raise InputError(path, f"cannot write output: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        os.unlink(tmp)
        raise InputError(path, f"cannot write output: {e.strerror or e}") from None


def _assign(args: argparse.Namespace) -> int:
    from . import mlir
    from .assignment import assign_module
    from .targets import get_target

    target, warning = get_target(args.target)  # reject a bad name before reading input
    ctx = mlir.make_context()
    module = mlir.read_input(args.input, ctx)
    result = assign_module(module, target, args.entry_layouts)
    for note in filter(None, [warning, *result.warnings]):
        print(note, file=sys.stderr)
    text = mlir.print_module(module, debuginfo=args.mlir_print_debuginfo)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        _write_atomically(args.output, text)
    return 0


_FILE_POS = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+)$")


def render_pass_error(path: str, e: PassError) -> str:
    """One ``file:line:col: error: reason`` line for an error found inside the pass.

    Locations come from the parsed buffer (named ``-``) or from NameLocs
    (HLO instruction names); either way the line names the input file.
    """
    shown = "<stdin>" if path == "-" else path
    msg = " ".join(e.msg.split())
    loc = e.location or ""
    m = _FILE_POS.match(loc)
    if m and m.group("file") in ("-", "", path):
        return f"{shown}:{m.group('line')}:{m.group('col')}: error: {msg}"
    if loc:
        return f"{shown}: error: at {loc}: {msg}"
    return f"{shown}: error: {msg}"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "assign":
            return _assign(args)
    except InputError as e:
        print(str(e), file=sys.stderr)
        return 1
    except PassError as e:
        print(render_pass_error(getattr(args, "input", "-"), e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
