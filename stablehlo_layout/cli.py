"""The ``stablehlo-layout`` command (mirrors ``mlir-opt`` habits).

    stablehlo-layout assign  [--target T] [--gpu NAME|FILE] [--entry-layouts default|free]
                             [--mlir-print-debuginfo] [-o OUT] INPUT
    stablehlo-layout explain [same options] [--json] [--no-fixes] INPUT
    stablehlo-layout trace   [same options] INPUT

Bad input ends with one ``file:line:col: error: reason`` line on stderr and
exit code 1; the input file is never written, and ``-o`` is written
atomically.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import tempfile
from typing import NoReturn, Sequence

from .errors import InputError, OptionError, PassError

TARGETS = ("generic", "xla-cpu", "xla-gpu")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 1, like every other failure
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(1)


def _common(a: argparse.ArgumentParser) -> None:
    a.add_argument("input", metavar="INPUT",
                   help="MLIR text or bytecode, an HLO text module, or a jax.export artifact; - for stdin")
    a.add_argument("--target", default="generic",
                   help=f"backend rules: {', '.join(TARGETS)} (default: generic)")
    a.add_argument("--gpu", default=None, metavar="NAME|FILE",
                   help="with --target xla-gpu: the GPU XLA compiles for, one of XLA's target configs "
                        "(a100, b200, h100, h200, v100) or a GpuTargetConfigProto text file (default: h100)")
    a.add_argument("--entry-layouts", choices=("default", "free"), default="default",
                   help="unstated entry layouts: pinned to the default, or chosen by propagation")
    a.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    a.add_argument("--arg", action="append", default=None, metavar="SHAPE",
                   help="for a MODULE:FUNCTION input: one argument's XLA shape, layout optional, "
                        "e.g. 'f32[8,128]{0,1}' (repeat per argument)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="stablehlo-layout", description="XLA-faithful layout assignment for StableHLO.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    a = sub.add_parser("assign", help="assign layouts and insert copies; print the module")
    _common(a)
    a.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations")
    e = sub.add_parser("explain", help="explain every copy the pass inserts: where, why, cost, fix")
    _common(e)
    e.add_argument("--json", action="store_true", help=f"machine-readable output (schema {'stablehlo-layout.explain/1'})")
    e.add_argument("--no-fixes", action="store_true", help="skip the what-if reruns that find fixes")
    e.add_argument("--max-reruns", type=int, default=16, metavar="N",
                   help="how many what-if runs of the pass the fixes may cost (default: 16)")
    t = sub.add_parser("trace", help="print every worklist pop in order")
    _common(t)
    t.add_argument("--html", metavar="OUT.html",
                   help="write a self-contained page that replays the propagation pop by pop")
    return p


def _write_atomically(path: str, data: bytes) -> None:
    if os.path.exists(path) and not os.path.isfile(path):
        # A device or pipe (-o /dev/null, a FIFO): renaming over it would
        # replace it with a file, so write to it directly.
        try:
            with open(path, "wb") as f:
                f.write(data)
        except OSError as e:
            raise InputError(path, f"cannot write output: {e.strerror or e}") from None
        return
    directory = os.path.dirname(os.path.abspath(path)) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=".stablehlo-layout-", dir=directory)
    except OSError as e:
        raise InputError(path, f"cannot write output: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        os.unlink(tmp)
        raise InputError(path, f"cannot write output: {e.strerror or e}") from None


def _assign(args: argparse.Namespace) -> int:
    from . import mlir
    from .assignment import assign_module
    from .targets import get_target

    target, warning = get_target(args.target, args.gpu)  # reject bad names before reading input
    ctx = mlir.make_context()
    module = _read(args, ctx)
    result = assign_module(module, target, args.entry_layouts)
    for note in filter(None, [warning, *result.warnings]):
        print(note, file=sys.stderr)
    # assign_module verified its output, and nothing reads the module after this.
    _emit(args, mlir.final_text_bytes(module, debuginfo=args.mlir_print_debuginfo))
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


def _read(args: argparse.Namespace, ctx):
    """A file, stdin, or a JAX function ``MODULE:FUNCTION`` exported at the ``--arg`` shapes."""
    from . import mlir
    from .jax import is_reference, read_input_or_reference

    if args.arg or is_reference(args.input):
        return read_input_or_reference(args.input, args.arg, ctx)
    return mlir.read_input(args.input, ctx)


def _analysis(args: argparse.Namespace, trace: bool):
    from . import mlir
    from .assignment import analyze
    from .targets import get_target

    target, warning = get_target(args.target, args.gpu)
    ctx = mlir.make_context()
    module = _read(args, ctx)
    # Explanations quote XLA's rounds and priorities: run every round.
    graph, assignment, notes = analyze(module, target, args.entry_layouts, trace=trace, exact=True)
    for note in filter(None, [warning, *notes]):
        print(note, file=sys.stderr)
    return assignment


def _emit(args: argparse.Namespace, text: str | bytes) -> None:
    data = text.encode() if isinstance(text, str) else text
    if args.output == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        _write_atomically(args.output, data)


def _explain(args: argparse.Namespace) -> int:
    import json

    from .explain import explain

    report = explain(_analysis(args, trace=False), fixes=not args.no_fixes, max_reruns=args.max_reruns)
    path = "<stdin>" if args.input == "-" else args.input
    if args.json:
        data = report.to_json()
        data["input"] = path
        _emit(args, json.dumps(data, indent=2) + "\n")
    else:
        _emit(args, _with_path(report.render(), path))
    return 0


def _trace(args: argparse.Namespace) -> int:
    from .explain import explain, render_trace

    path = "<stdin>" if args.input == "-" else args.input
    assignment = _analysis(args, trace=True)
    if args.html:
        from .html import write_trace_html

        # Explanations power the click-through on each copy; their what-if
        # reruns are skipped here to keep large modules quick.
        report = explain(assignment, fixes=False)
        try:
            write_trace_html(assignment.graph, assignment, report, args.html,
                             f"stablehlo-layout trace: {os.path.basename(path)}", input_name=path)
        except OSError as e:
            raise InputError(args.html, f"cannot write output: {e.strerror or e}") from None
        return 0
    _emit(args, _with_path(render_trace(assignment), path))
    return 0


def _with_path(text: str, path: str) -> str:
    """Locations from a parsed buffer read "-:line:col"; show the input's name instead."""
    return re.sub(r"(?<![\w./-])-:(\d+):(\d+)", lambda m: f"{path}:{m.group(1)}:{m.group(2)}", text)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "assign":
            return _assign(args)
        if args.command == "explain":
            return _explain(args)
        if args.command == "trace":
            return _trace(args)
    except InputError as e:
        print(str(e), file=sys.stderr)
        return 1
    except OptionError as e:
        print(f"stablehlo-layout: error: {' '.join(e.msg.split())}", file=sys.stderr)
        return 1
    except PassError as e:
        print(render_pass_error(getattr(args, "input", "-"), e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 1


def run() -> NoReturn:
    """The console command: ``main`` as a short-lived process.

    The pass builds millions of small acyclic objects.  A command never
    needs the cyclic collector (reference counting frees what it drops, and
    the process ends right after), and tearing the heap down object by object
    at exit took longer than printing the module (1.7 s at 170k
    instructions), so the process leaves with ``os._exit`` once its output is
    flushed, as mypy's command does.
    """
    gc.disable()
    try:
        code = main()
    except SystemExit as e:  # argparse's --help and usage errors
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to tell it
        pass
    os._exit(code)


if __name__ == "__main__":
    run()
