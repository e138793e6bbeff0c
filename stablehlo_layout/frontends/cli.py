"""The ``stablehlo-layout`` command (mirrors ``mlir-opt`` habits).

    stablehlo-layout assign  [--target T] [--gpu NAME|FILE] [--entry-layouts default|free]
                             [--as-compiled] [--mlir-print-debuginfo] [-o OUT] INPUT
    stablehlo-layout explain [same options] [--json] [--no-fixes] INPUT
    stablehlo-layout trace   [same options] INPUT
    stablehlo-layout fix     [--target T] [--gpu|--tpu] [--json] [--jobs N] [-o FIXED] INPUT

Bad input ends with one ``file:line:col: error: reason`` line on stderr and
exit code 1; the input file is never written (``-o`` naming it is refused),
and outputs are written as ``output.py`` says.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

from stablehlo_layout.model.errors import InputError, OptionError, PassError, UserTargetError
from stablehlo_layout.model.options import ENTRY_MODES

if TYPE_CHECKING:
    from stablehlo_layout.fix.report import FixResult
    from stablehlo_layout.ir.mlir import PrintedModule
    from stablehlo_layout.report.progress import Progress

# Set to show a user target's traceback, as --debug does.
DEBUG_ENV = "STABLEHLO_LAYOUT_DEBUG"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 1, like every other failure
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(1)


def _common(a: argparse.ArgumentParser) -> None:
    a.add_argument("inputs", metavar="INPUT", nargs="+",
                   help="MLIR text or bytecode, an HLO text module, or a jax.export artifact; - for stdin; "
                        "several files, a glob or an XLA dump folder give one report per module")
    from stablehlo_layout.targets import TARGET_NAMES

    a.add_argument("--target", default=None,
                   help=f"backend rules: {', '.join(TARGET_NAMES)} (default: the backend an XLA dump was "
                        "written by, from its file name and the files beside it; generic for StableHLO)")
    a.add_argument("--gpu", default=None, metavar="NAME|FILE",
                   help="with --target xla-gpu: the GPU XLA compiles for, one of XLA's target configs "
                        "(a100, b200, h100, h200, v100) or a GpuTargetConfigProto text file (default: h100)")
    a.add_argument("--tpu", default=None, metavar="GEN",
                   help="with --target xla-tpu: the TPU generation XLA compiles for: v4, v5e, v5p, v6e, tpu7x "
                        "(default: the generation an XLA:TPU dump names, else v5e)")
    a.add_argument("--entry-layouts", choices=ENTRY_MODES, default="default",
                   help="unstated entry layouts: pinned to the default, or chosen by propagation")
    a.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    a.add_argument("--as-compiled", action="store_true",
                   help="run XLA's own pipeline for the target (xla-cpu; xla-gpu, xla-tpu deviceless) up to layout "
                        "assignment and lay out the module XLA is about to lay out")
    a.add_argument("--arg", action="append", default=None, metavar="SHAPE",
                   help="for a MODULE:FUNCTION input: one argument's XLA shape, layout optional, "
                        "e.g. 'f32[8,128]{0,1}' (repeat per argument)")
    a.add_argument("--args-from", default=None, metavar="MODULE:CALLABLE",
                   help="for a MODULE:FUNCTION input: its example call, from a callable that takes no arguments "
                        "and returns (args, kwargs); arrays, pytrees of them and static values")
    a.add_argument("--static-argnums", default=None, metavar="N[,N...]",
                   help="with --args-from: the positional arguments that are static, as jax.jit's static_argnums")
    a.add_argument("--static-argnames", default=None, metavar="NAME[,NAME...]",
                   help="with --args-from: the arguments that are static by name, as jax.jit's static_argnames")
    a.add_argument("--mlir-print-debuginfo", action="store_true",
                   help="assign: print locations in the IR; explain, trace: name each op by its whole location "
                        "(every call-site frame) instead of the short form")
    a.add_argument("--debug", action="store_true",
                   help=f"on a user target's failure, show its traceback (also: {DEBUG_ENV}=1)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="stablehlo-layout", description="XLA-faithful layout assignment for StableHLO.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    a = sub.add_parser("assign", help="assign layouts and insert copies; print the module")
    _common(a)
    e = sub.add_parser("explain", help="explain every copy the pass inserts: where, why, cost, fix")
    _common(e)
    e.add_argument("--json", action="store_true", help=f"machine-readable output (schema {'stablehlo-layout.explain/1'})")
    e.add_argument("--no-fixes", action="store_true", help="skip the what-if reruns that find fixes")
    e.add_argument("--max-reruns", type=int, default=16, metavar="N",
                   help="how many what-if runs of the pass the fixes may cost (default: 16)")
    e.add_argument("--verify-fixes", action="store_true",
                   help="also find the changes to the program that XLA confirms remove copies, as fix does, "
                        "and list them with XLA's own numbers")
    f = sub.add_parser("fix", help="find the changes that remove XLA's copies, confirm each by compiling with XLA, "
                                   "write the fixed program (-o)")
    _common(f)
    f.add_argument("--json", action="store_true", help="machine-readable report (schema stablehlo-layout.fix/1)")
    f.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="XLA compiles run at once while verifying (default: one per core)")
    t = sub.add_parser("trace", help="print every worklist pop in order")
    _common(t)
    t.add_argument("--html", metavar="OUT.html",
                   help="write a self-contained page that replays the propagation pop by pop")
    t.add_argument("--no-fixes", action="store_true",
                   help="--html: skip the what-if reruns behind each copy's fix and the parameters' costs")
    t.add_argument("--max-reruns", type=int, default=16, metavar="N",
                   help="--html: how many what-if runs of the pass the fixes may cost (default: 16)")
    t.add_argument("--verify-fixes", action="store_true",
                   help="--html: add the changes XLA confirms remove copies (as fix finds them) to the summary")
    return p


def _progress(args: argparse.Namespace) -> "Progress":
    """The command's progress line (drawn on a terminal's stderr only); one per run, shared by every input."""
    progress = getattr(args, "progress", None)
    if progress is None:  # a caller that dispatches without main's block: a line that draws nothing
        from stablehlo_layout.report.progress import Progress

        progress = args.progress = Progress(args.command, stream=_NO_TERMINAL)
    return progress


class _NoTerminal:
    """A stream that is not a terminal: a Progress on it never draws."""

    def isatty(self) -> bool:
        return False


_NO_TERMINAL: Any = _NoTerminal()


def _say(args: argparse.Namespace, message: str) -> None:
    """One line on stderr, above the progress line where one is drawn."""
    progress = getattr(args, "progress", None)
    if progress is not None and progress.shown:
        progress.print(message)
    else:
        print(message, file=sys.stderr)


def _phase(args: argparse.Namespace, what: str) -> None:
    """Say on the progress line what the current input's work is doing now."""
    _progress(args).note(f"{getattr(args, 'module_name', '')}: {what}" if getattr(args, "module_name", "")
                         else what)


def _refuse_output_onto_input(args: argparse.Namespace) -> None:
    """`-o` or `--html` naming the input would destroy it: refuse before any work."""
    from stablehlo_layout.report.output import same_file

    if args.input == "-" or not os.path.exists(args.input):
        return
    for option, path in (("-o", args.output), ("--html", getattr(args, "html", None))):
        if path and path != "-" and same_file(path, args.input):
            raise InputError(path, f"{option} names the input file; the input is never overwritten, "
                                   "write elsewhere and move the result")


def _assign(args: argparse.Namespace) -> int:
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.frontends.api import assign_module, check_output
    from stablehlo_layout.targets import get_target

    target, warning = get_target(args.target, args.gpu, args.tpu)  # reject bad names before reading input
    ctx = mlir.make_context()
    _phase(args, "reading")
    module, _sources = _read_program(args, ctx, target)
    _phase(args, "laying out")
    # The copies' names show only as locations, which only --mlir-print-debuginfo prints;
    # nothing here asks why a copy is there, so the engine keeps no provenance.
    result = assign_module(module, target, args.entry_layouts, check=False, names=args.mlir_print_debuginfo,
                           provenance=False)
    notes, depth = [warning, *result.warnings], result.graph.region_depth
    # Nothing below needs the pass's answer: it goes, graph and all, before the
    # printer allocates on top of it.  Printing was the command's peak with
    # the graph held (~30 MB at 172k instructions); freeing it costs ~30 ms.
    # The copies point back at the result: they go first, and nothing else
    # of the run forms a cycle (driver.run empties the target's scratch), so
    # reference counting frees it all here, with the collector off.
    result.copies = []
    del result
    # Nothing reads the module after printing.  The printer verifies it first
    # (and falls back to the generic form if that fails): that is the output
    # check, which assign_module would otherwise have run once more.  The
    # text goes out from the printer's file in pieces, never whole in memory.
    with mlir.final_text(module, debuginfo=args.mlir_print_debuginfo) as printed:
        if mlir.printed_generic(printed):
            check_output(module)  # the verifier's own first diagnostic
            raise PassError("internal error: the rewritten module printed in MLIR's generic form; "
                            "please report this with the input")
        for note in filter(None, notes):
            _say(args, note)
        _emit(args, printed)
    mlir.discard(module, depth)
    return 0


_FILE_POS = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+)$")


def render_pass_error(path: str, e: PassError) -> str:
    """One ``file:line:col: error: reason`` line for an error found inside the pass.

    A position in the input itself (MLIR text names its file, or ``<stdin>``)
    becomes the line's ``file:line:col``; any other location (an HLO
    instruction's name, a position in another file or in the text bytecode
    was written from) is quoted after "at".
    """
    shown = "<stdin>" if path == "-" else path
    msg = " ".join(e.msg.split())
    loc = e.location or ""
    m = _FILE_POS.match(loc)
    if m and m.group("file") in (shown, path):
        return f"{shown}:{m.group('line')}:{m.group('col')}: error: {msg}"
    if loc:
        return f"{shown}: error: at {loc}: {msg}"
    return f"{shown}: error: {msg}"


def _names_a_function(path: str) -> bool:
    """``jax.is_reference``, without importing the JAX front door (~5 ms) for a file that exists.

    A path that exists is never a reference (``is_reference`` says so too).
    """
    if os.path.exists(path):
        return False
    from stablehlo_layout.frontends.jax import is_reference

    return is_reference(path)


def _read(args: argparse.Namespace, ctx, platforms=None):
    """A file, stdin, or a JAX function ``MODULE:FUNCTION`` exported at the ``--arg`` shapes."""
    from stablehlo_layout.ir import mlir

    if _calls_a_function(args) or _names_a_function(args.input):
        from stablehlo_layout.frontends.jax import read_input_or_reference

        return read_input_or_reference(args.input, _reference_call(args), ctx, platforms)
    _refuse_python_source(args.input)
    module = mlir.read_input(args.input, ctx)
    if getattr(args, "refused", None) is not None:
        raise args.refused
    return module


def _calls_a_function(args: argparse.Namespace) -> bool:
    """Whether the options describe a call of a ``MODULE:FUNCTION`` input."""
    return bool(args.arg or args.args_from or args.static_argnums or args.static_argnames)


def _reference_call(args: argparse.Namespace):
    """``--arg``, ``--args-from`` and ``--static-*`` as the JAX front door takes them."""
    from stablehlo_layout.frontends.jax import ReferenceCall

    nums: list[int] = []
    for text in (args.static_argnums or "").split(","):
        if text.strip():
            try:
                nums.append(int(text))
            except ValueError:
                raise InputError(args.input, f"--static-argnums: {text.strip()!r} is not an index; "
                                             "give comma-separated integers such as 1,2") from None
    names = tuple(n.strip() for n in (args.static_argnames or "").split(",") if n.strip())
    return ReferenceCall(tuple(args.arg or ()), args.args_from, tuple(nums), names)


def _refuse_python_source(path: str) -> None:
    """A ``.py`` file is the program's source, not a module to lay out: say how to name a function in it."""
    if not (path.endswith(".py") and os.path.isfile(path)):
        return
    module = os.path.splitext(os.path.relpath(path))[0].replace(os.sep, ".")
    raise InputError(path, f"is Python source, not a module: name a function in it as {module}:FUNCTION "
                           "with one --arg SHAPE per argument (e.g. --arg 'f32[8,128]'), run from the folder "
                           "that imports it")


def _read_program(args: argparse.Namespace, ctx, target):
    """The module to lay out and, with ``--as-compiled``, where its instructions came from.

    With ``--as-compiled`` that module is XLA's own, right before its layout
    assignment, compiled from the input for the target.
    """
    if not args.as_compiled:
        return _read(args, ctx), None
    from stablehlo_layout.xla import pipeline as xla_compile
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.ir.metadata import read_sources
    from stablehlo_layout.ir.entry_modes import entry_function
    from stablehlo_layout.ir.sharding import program_sharding

    backend = xla_compile.backend_of(target)
    # A JAX function is lowered for the platform it is compiled for.
    module = _read(args, ctx, xla_compile.lowering_platforms(backend))
    path = "<stdin>" if args.input == "-" else args.input
    _phase(args, f"compiling with XLA ({backend}) up to its layout assignment")
    compiled = xla_compile.compile_module(module, path, backend, args.entry_layouts,
                                          **xla_compile.gpu_options(target))
    if compiled.note:
        _say(args, compiled.note)
    args.compiled_by = compiled.backend
    # The axis names a partitioned program's mesh gives its devices, and its entry shardings:
    # XLA's module keeps no names, and newer XLAs no entry shardings.
    args.program_sharding = program_sharding(module, entry_function(module))
    return (mlir.load(compiled.before, path, ctx, hlo_sources=True, hlo_proto=compiled.before_proto),
            read_sources(compiled.before, path))


def _read_dump(args: argparse.Namespace, ctx):
    """The input, and where its instructions came from when it is an XLA dump.

    An HLO module XLA dumped carries each instruction's op name and the
    user's source line in its metadata, as the module ``--as-compiled``
    takes does: explanations name them for a dump too.  Other inputs have
    their own locations (``None``).
    """
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.ir.metadata import read_sources

    if _calls_a_function(args) or args.input == "-" or _names_a_function(args.input) or not os.path.isfile(args.input):
        return _read(args, ctx), None
    try:
        with open(args.input, "rb") as f:
            data = f.read()
    except OSError:
        return _read(args, ctx), None  # reading it fails again there, with the reason
    if mlir.detect_kind(data) != mlir.HLO_TEXT:
        return _read(args, ctx), None
    module = mlir.load(data, args.input, ctx, hlo_sources=True, file=args.input)
    if getattr(args, "refused", None) is not None:
        raise args.refused
    return module, read_sources(data.decode("utf-8", "replace"), args.input)


def _analysis(args: argparse.Namespace, trace: bool):
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.frontends.api import analyze
    from stablehlo_layout.targets import get_target

    target, warning = get_target(args.target, args.gpu, args.tpu)
    ctx = mlir.make_context()
    _phase(args, "reading")
    module, sources = _read_program(args, ctx, target) if args.as_compiled else _read_dump(args, ctx)
    _phase(args, "laying out")
    # Explanations quote XLA's rounds and priorities: run every round.
    # The module is dropped below: the import may inline into it rather than a copy.
    graph, assignment, notes = analyze(module, target, args.entry_layouts, trace=trace, exact=True, consume=True)
    if getattr(args, "program_sharding", None) is not None:
        from stablehlo_layout.ir.sharding import adopt_program_sharding

        adopt_program_sharding(graph, args.program_sharding)
    if args.mlir_print_debuginfo:
        from stablehlo_layout.ir.locations import show_full_locations

        show_full_locations(graph)
    mlir.discard(module, graph.region_depth)
    if sources is not None:
        from stablehlo_layout.ir.metadata import name_by_instruction

        name_by_instruction(graph)
    for note in filter(None, [warning, *notes]):
        _say(args, note)
    return assignment, sources


def _emit(args: argparse.Namespace, text: "str | bytes | PrintedModule") -> None:
    from stablehlo_layout.report.output import write_output

    sink = getattr(args, "sink", None)
    if sink is None:
        _progress(args).clear()  # the output may go to the same terminal
    if isinstance(text, (str, bytes)):
        data = text.encode() if isinstance(text, str) else text
    elif sink is not None:
        data = text.read()
    else:
        write_output(args.output, text.chunks())  # a printed module, straight from the printer's file
        return
    if sink is not None:  # one of several modules: the caller writes them all at once
        sink.append(data)
        return
    write_output(args.output, data)


def _explain(args: argparse.Namespace) -> int:
    import json

    from stablehlo_layout.report.explain import explain

    assignment, sources = _analysis(args, trace=False)
    _phase(args, "explaining the copies" + ("" if args.no_fixes else " and finding their fixes"))
    report = explain(assignment, fixes=not args.no_fixes, max_reruns=args.max_reruns, sources=sources)
    confirmed = _fixes_confirmed(args, assignment.target) if args.verify_fixes else None
    path = "<stdin>" if args.input == "-" else args.input
    if args.json:
        data = report.to_json()
        data["input"] = path
        if getattr(args, "compiled_by", None):
            data["compiled_by"] = args.compiled_by
        if confirmed is not None:
            data["verified_fixes"] = confirmed.to_json()
        _emit(args, json.dumps(data, indent=2) + "\n")
    else:
        from stablehlo_layout.fix.report import verified_section

        _emit(args, report.render() + ("\n" + verified_section(confirmed) if confirmed is not None else ""))
    return 0


def _fix_target(args: argparse.Namespace) -> None:
    """``fix`` and ``--verify-fixes`` compile with XLA: a target that names XLA, XLA:CPU unless told;
    a raw program, not a dump."""
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.xla import pipeline as xla_compile

    who = "fix" if args.command == "fix" else "--verify-fixes"
    if args.command == "fix" and (args.as_compiled or args.mlir_print_debuginfo):
        raise OptionError("fix takes neither --as-compiled nor --mlir-print-debuginfo: it always compiles "
                          "with XLA, and writes the fixed program with its locations")
    if args.command == "trace" and not args.html:
        raise OptionError("trace --verify-fixes adds the confirmed changes to the page: give --html OUT.html")
    if args.command != "fix" and args.input == "-":
        raise OptionError("--verify-fixes reads its input twice (to lay it out, and to compile each change "
                          "with XLA): give a file, not stdin")
    if args.target == "generic":
        raise OptionError(f"{who} compiles with XLA: give --target xla-cpu, xla-gpu --gpu NAME or "
                          "xla-tpu --tpu GEN")
    if args.input != "-" and not args.arg and os.path.isfile(args.input):
        try:
            with open(args.input, "rb") as f:
                head = f.read(1 << 16)
        except OSError:
            head = b""
        if mlir.detect_kind(head) == mlir.HLO_TEXT:
            raise InputError(args.input, f"is an XLA dump: {who} changes the program XLA compiles, so give the "
                                         "StableHLO module, the jax.export artifact or MODULE:FUNCTION --arg that "
                                         "made it")
    if args.target is None:
        args.target = "xla-cpu"
        _say(args, f"note: {who} compiles with XLA:CPU (give --target xla-gpu --gpu NAME or --target xla-tpu "
                   "--tpu GEN for another XLA)")
    xla_compile.check_target(args.target)
    xla_compile.prepare_environment(args.target)


def _fix(args: argparse.Namespace) -> int:
    import json

    from stablehlo_layout.fix.report import render_fix
    from stablehlo_layout.report.output import write_output
    from stablehlo_layout.targets import get_target

    target, warning = get_target(args.target, args.gpu, args.tpu)
    if warning:
        _say(args, warning)
    path = "<stdin>" if args.input == "-" else args.input
    result = _fixes_confirmed(args, target)
    _progress(args).clear()  # the report goes to stdout, maybe the same terminal
    written = None
    if args.output != "-":
        write_output(args.output, result.fixed_text.encode())
        written = args.output
    if args.json:
        data = result.to_json()
        data["input"] = path
        data["output"] = written
        _emit_report(json.dumps(data, indent=2) + "\n")
    else:
        _emit_report(render_fix(result, path, written))
    return 0


def _fixes_confirmed(args: argparse.Namespace, target: Any) -> FixResult:
    """fix's search on the input as given (read again: ``--as-compiled`` laid out XLA's module)."""
    from stablehlo_layout.fix.search import fix_module
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.xla.pipeline import lowering_platforms

    ctx = mlir.make_context()
    _phase(args, "reading")
    module = _read(args, ctx, lowering_platforms(args.target))
    path = "<stdin>" if args.input == "-" else args.input
    _phase(args, "finding the changes and confirming each by compiling with XLA")
    return fix_module(module, path, target, args.entry_layouts, jobs=getattr(args, "jobs", None),
                      step=lambda what: _phase(args, what))


def _emit_report(text: str) -> None:
    """fix's report: always on stdout (``-o`` names the fixed program)."""
    from stablehlo_layout.report.output import write_output

    write_output("-", text.encode())


def _trace(args: argparse.Namespace) -> int:
    from stablehlo_layout.report.explain import explain, render_trace

    path = "<stdin>" if args.input == "-" else args.input
    assignment, sources = _analysis(args, trace=True)
    if args.html:
        from stablehlo_layout.report.html import write_trace_html

        # Each copy's click-through and the entry parameters' "if left free"
        # are explain's own: its fixes, found by the same what-if reruns
        # (--no-fixes skips them, --max-reruns bounds them, as for explain).
        _phase(args, "explaining the copies" + ("" if args.no_fixes else " and finding their fixes"))
        report = explain(assignment, fixes=not args.no_fixes, max_reruns=args.max_reruns, sources=sources)
        tables = []
        if args.verify_fixes:
            from stablehlo_layout.fix.report import verified_table

            tables.append(verified_table(_fixes_confirmed(args, assignment.target)))
        _phase(args, "writing the page")
        write_trace_html(assignment.graph, assignment, report, args.html,
                         f"stablehlo-layout trace: {os.path.basename(path)}", sources, tables)
        return 0
    _emit(args, render_trace(assignment, sources))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return _on_deep_stack(lambda: _dispatch_inputs(args))


def _expand_inputs(inputs: list[str]) -> list[str]:
    """Files named, globs the shell left alone, and XLA dump folders' before dumps, in order."""
    import glob

    from stablehlo_layout.xla.dump_files import BEFORE_SUFFIX, folder_without_before_dumps

    out: list[str] = []
    for item in inputs:
        if item != "-" and os.path.isdir(item):
            # XLA names them module_0000.jit_f.0000.<pipeline>.after_x.before_layout-assignment.txt;
            # a dump renamed to the bare suffix (as examples/xla_dump/ holds it) counts too.
            dumps = sorted(glob.glob(os.path.join(glob.escape(item), "*" + BEFORE_SUFFIX)))
            if not dumps:
                raise InputError(item, folder_without_before_dumps(item))
            out.extend(dumps)
        elif not os.path.exists(item) and glob.has_magic(item):
            found = sorted(glob.glob(item))
            if not found:
                raise InputError(item, "no file matches")
            out.extend(found)
        else:
            out.append(item)
    return out


def module_name(path: str) -> str:
    """What a report for ``path`` is called: the HLO module's name, else the file's."""
    if path != "-":
        try:
            with open(path, "rb") as f:
                head = f.read(4096).decode("utf-8", "replace")
        except OSError:
            head = ""
        m = re.match(r"\s*HloModule\s+([\w.\-]+)", head)
        if m:
            return m.group(1)
        m = re.search(r"^\s*module\s+@([\w.$\-]+)", head, re.M)
        if m:
            return m.group(1)
    return "<stdin>" if path == "-" else os.path.basename(path)


def _dispatch_inputs(args: argparse.Namespace) -> int:
    from stablehlo_layout.report.progress import Progress

    args.noted = set()  # the target notes said so far, shared by every input's namespace
    try:
        paths = _expand_inputs(args.inputs)
    except InputError as e:
        _say(args, str(e))
        return 1
    # One line for the whole run: a step per input, a note per phase of it.
    with Progress(args.command, total=len(paths)) as args.progress:
        if len(paths) == 1:
            args.input = paths[0]
            args.progress.step(os.path.basename(args.input))
            return _dispatch(args)
        return _several(args, paths)


def _several(args: argparse.Namespace, paths: list[str]) -> int:
    """One report (or module) per input, each headed by its module's name; one output."""
    from stablehlo_layout.report.output import write_output

    if _calls_a_function(args) or "-" in paths:
        _say(args, f"{args.command}: error: several inputs cannot include stdin or MODULE:FUNCTION")
        return 1
    pieces: list[bytes] = []
    docs: list[Any] = []
    code = 0
    as_json = getattr(args, "json", False)
    names: dict[str, int] = {}
    for path in paths:
        name = module_name(path)
        names[name] = names.get(name, 0) + 1
        if names[name] > 1:  # XLA dumps every compile of a function under its name
            name = f"{name}.{names[name]}"
        sub = argparse.Namespace(**vars(args))
        sub.input, sub.sink, sub.module_name = path, [], name
        args.progress.step(name)
        if getattr(args, "html", None):
            stem = args.html[:-5] if args.html.endswith(".html") else args.html
            sub.html = f"{stem}.{name}.html"
        status = _dispatch(sub)
        code = code or status
        if status != 0:
            continue
        body = b"".join(sub.sink)
        if as_json:
            import json

            doc = json.loads(body)
            doc["module"] = name
            docs.append(doc)
        elif args.command == "assign":
            pieces.append((b"// -----\n" if pieces else b"") + f"// module {name}: {path}\n".encode() + body)
        elif body or not getattr(args, "html", None):
            pieces.append((b"\n" if pieces else b"") + f"== module {name}: {path} ==\n".encode() + body)
    args.progress.clear()  # the output may go to the same terminal
    try:
        if as_json:
            import json

            write_output(args.output, (json.dumps(docs, indent=2) + "\n").encode())
        elif pieces:
            write_output(args.output, b"".join(pieces))
    except InputError as e:
        _say(args, str(e))
        return 1
    return code


def _reads_through_jax(path: str) -> bool:
    """Whether reading ``path`` imports jax: a JAX function, or a jax.export artifact."""
    if _names_a_function(path):
        return True
    if path == "-" or not os.path.isfile(path):
        return False
    from stablehlo_layout.ir import mlir

    try:
        with open(path, "rb") as f:
            head = f.read(4096)
            if head.startswith(mlir.BYTECODE_MAGIC) or mlir.detect_kind(head) in (mlir.MLIR_TEXT, mlir.HLO_TEXT):
                return False  # text may be cut mid-character in the head; it is still not binary
            return mlir.detect_kind(head + f.read()) == mlir.JAX_EXPORT
    except OSError:
        return False  # reading it fails later, with the reason


def _choose_target(args: argparse.Namespace) -> None:
    """Refuse a dump file that is not layout assignment's input; then, without --target, the
    backend an XLA dump names (said on stderr, once per finding), and generic for StableHLO,
    which names none.  HLO text that names no backend is refused: generic's answer is no
    backend's, and a dump's user asked for XLA's."""
    from stablehlo_layout.xla import dump_files

    path = args.input
    if path != "-" and not _calls_a_function(args):
        reason = dump_files.wrong_file(path)
        if reason:
            raise InputError(path, reason)
    if args.target is not None:
        return
    args.target = "generic"
    if path == "-" or _calls_a_function(args) or not os.path.isfile(path):
        return
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16).decode("utf-8", "replace")
    except OSError:
        return  # reading it fails later, with the reason
    found = dump_files.origin(path, head)
    if found is None:
        if re.match(r"\s*HloModule\b", head):
            # Said once the module has parsed: a malformed module's own error comes first.
            args.refused = InputError(path, "is an HLO module that names no XLA backend (neither its file name nor the "
                                   "files beside it say which XLA wrote it): give --target xla-cpu, "
                                   "--target xla-gpu with --gpu NAME|FILE, --target xla-tpu with --tpu GEN, "
                                   "or --target generic")
        return
    from stablehlo_layout.targets import TARGET_NAMES

    if found.target not in TARGET_NAMES:
        raise InputError(path, f"is an {found.evidence}: that backend is not supported yet; give --target "
                               "to lay it out as another backend would")
    chosen = f"--target {found.target}"
    if found.target == "xla-gpu" and args.gpu is None:
        if found.gpu is None:
            raise InputError(path, f"is an {found.evidence}, and no file beside it names its GPU: "
                                   "give --gpu NAME|FILE (a shipped GPU or XLA's gpu_target_config.pbtxt)")
        args.gpu = found.gpu
        chosen += f" --gpu {found.gpu}"
    if found.target == "xla-tpu" and args.tpu is None:
        from stablehlo_layout.targets.xla_tpu import DEFAULT_GENERATION

        # XLA:TPU's pass decided alike on every generation tested (docs/XLA.md):
        # a dump that does not name its chip is still laid out right.
        args.tpu = found.tpu or DEFAULT_GENERATION
        chosen += f" --tpu {args.tpu}" + ("" if found.tpu else
                                         " (no file beside it names the generation; give --tpu to name it)")
    args.target = found.target
    note = f"note: {found.evidence}: laid out as {chosen} (give --target to choose another)"
    if note not in args.noted:
        args.noted.add(note)
        _say(args, note)


def _dispatch(args: argparse.Namespace) -> int:
    try:
        if args.command == "fix" or getattr(args, "verify_fixes", False):
            _fix_target(args)
        _choose_target(args)
        _refuse_output_onto_input(args)
        if args.command == "fix":
            return _fix(args)
        if getattr(args, "as_compiled", False):
            from stablehlo_layout.xla import pipeline as xla_compile

            if args.target == "generic":  # before reading (and maybe exporting) the input
                xla_compile.check_target(args.target)
            xla_compile.prepare_environment(args.target)
        elif _reads_through_jax(args.input):
            from stablehlo_layout.xla import pipeline as xla_compile

            # Backends start on first use: start them here, so that a plugin's
            # probe (the CUDA one, on a machine without a GPU) says nothing.
            xla_compile.start_jax_quietly(lambda: __import__("jax").devices())
        if args.command == "assign":
            return _assign(args)
        if args.command == "explain":
            return _explain(args)
        if args.command == "trace":
            return _trace(args)
    except InputError as e:
        _say(args, str(e))
        return 1
    except OptionError as e:
        _say(args, f"stablehlo-layout: error: {' '.join(e.msg.split())}")
        return 1
    except UserTargetError as e:
        if getattr(args, "debug", False) or os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            import traceback

            _progress(args).clear()
            traceback.print_exception(e.cause, file=sys.stderr)
        _say(args, render_pass_error(getattr(args, "input", "-"), e))
        return 1
    except PassError as e:
        _say(args, render_pass_error(getattr(args, "input", "-"), e))
        return 1
    except KeyboardInterrupt as e:
        # The shell's convention: 128 + the signal's number (SIGINT 2, SIGTERM 15).
        return 143 if e.args == (_TERMINATED,) else 130
    return 1


# MLIR's parser, verifier and printer recurse once per nested region in C++;
# the main thread's 8 MiB stack ends near 1,000 nested whiles (a segfault, not
# an error).  The command runs on a thread whose stack is reserved, not
# committed: pages are only touched as deep as the module nests (~100k levels).
_STACK_BYTES = 1 << 30


def _on_deep_stack(work: Callable[[], int]) -> int:
    outcome: list[Any] = []
    done = threading.Event()

    def body() -> None:
        try:
            outcome.append(work())
        except BaseException as e:  # a bug's traceback belongs to the caller's thread
            outcome.append(e)
        finally:
            done.set()

    try:
        previous = threading.stack_size(_STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform that fixes thread stacks
        return work()
    try:
        worker = threading.Thread(target=body, name="stablehlo-layout", daemon=True)
        worker.start()
    finally:
        threading.stack_size(previous)
    # Only the main thread may install signal handlers: SIGTERM is turned into
    # the Ctrl-C path below, so the worker's clean-up (temporary files, XLA's
    # dump folder for --as-compiled) runs for it too.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _term_as_interrupt)
    # Wait on an event, not on join(): a join cut short by Ctrl-C may report
    # the thread finished while it still runs.
    terminated = False
    while not done.is_set():
        try:
            done.wait()
        except KeyboardInterrupt as e:
            # Signals reach the main thread only: hand Ctrl-C to the worker, whose
            # handlers remove temporary files; the exit code says which signal it was.
            terminated = terminated or e.args == (_TERMINATED,)
            _raise_in(worker, KeyboardInterrupt)
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    # The worker saw an interrupt (130); it was SIGTERM's.
    return 143 if terminated and result == 130 else result


_TERMINATED = "SIGTERM"  # the argument a KeyboardInterrupt made from SIGTERM carries


def _term_as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(_TERMINATED)


def _raise_in(thread: threading.Thread, error: type[BaseException]) -> None:
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident or 0), ctypes.py_object(error))


def run() -> NoReturn:
    """The console command: ``main`` as a short-lived process.

    The pass builds millions of small acyclic objects.  A command never
    needs the cyclic collector (reference counting frees what it drops, and
    the process ends right after), and tearing the heap down object by object
    at exit took longer than printing the module (1.7 s at 170k
    instructions), so the process leaves with ``os._exit`` once its output is
    flushed, as mypy's command does.  It imports the MLIR bindings with
    numpy deferred (``deferred_numpy``): the process is the command's own.
    """
    gc.disable()
    from stablehlo_layout.ir.deferred_numpy import import_bindings

    import_bindings()  # before anything imports jaxlib.mlir.ir: numpy waits for its first use
    try:
        code = main()
    except SystemExit as e:  # argparse's --help and usage errors
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away (`| head`) or the device is full: already reported
        pass
    os._exit(code)


if __name__ == "__main__":
    run()
