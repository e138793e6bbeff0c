"""The one module that touches jaxlib's MLIR internals.

It builds contexts, recognises and loads every input kind the tool accepts
(MLIR text, MLIR bytecode including StableHLO portable artifacts, XLA HLO text,
serialized `jax.export` artifacts), and prints or serializes modules.
Everything that can go wrong with an input becomes an `InputError` carrying the
line and column of the first diagnostic when the input has lines.

Only `jaxlib.mlir` is imported eagerly: `import jax` costs ~0.6 s and is paid
only when a `jax.export` artifact is read; jaxlib's HLO bindings are likewise
loaded only for HLO text.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import BinaryIO
from dataclasses import dataclass

from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
# jaxlib 0.12's native `_sdy` imports the Python `jaxlib.mlir.dialects.sdy`
# while it is itself half initialised, so importing `_sdy` first would leave
# the user's `sdy` module without DimMappingAttr and later attributes for the
# rest of the process (and jax could no longer lower a Cholesky solve). The
# Python module first lets it import `_sdy` itself, completely.
from jaxlib.mlir.dialects import sdy as _sdy_dialect  # noqa: F401  (import order)
# The dialects' native registration hooks, not their Python op modules: the
# generated op classes cost ~80 ms to import and nothing here builds ops
# through them.
from jaxlib.mlir._mlir_libs import _chlo, _mlirHlo, _sdy, _sdyMpmd, _stablehlo

from stablehlo_layout.model.errors import InputError, PassError

__all__ = [
    "BYTECODE_MAGIC",
    "HLO_TEXT",
    "JAX_EXPORT",
    "MLIR_BYTECODE",
    "MLIR_TEXT",
    "detect_kind",
    "load",
    "make_context",
    "name_buffer",
    "prepare_hlo_text",
    "print_module",
    "read_input",
    "to_bytecode",
]

BYTECODE_MAGIC = b"ML\xefR"
# The producer string StableHLO writes into a portable artifact's bytecode header.
_PORTABLE_PRODUCER = b"StableHLO_v"

MLIR_BYTECODE = "mlir-bytecode"
MLIR_TEXT = "mlir-text"
HLO_TEXT = "hlo-text"
JAX_EXPORT = "jax-export"

_UNKNOWN_INPUT = "not MLIR text, MLIR bytecode, HLO text or a jax.export artifact"
_STDIN_NAME = "<stdin>"


# --------------------------------------------------------------------------
# Contexts


def make_context() -> ir.Context:
    """A fresh context that knows every dialect JAX and XLA emit.

    Mirrors `jax._src.interpreters.mlir.make_ir_context()` without importing
    jax. Nothing is shared between contexts, so several can live side by side.
    """
    # jaxlib's `ir.Context()` already appends and loads its site registry
    # (builtin, func, arith, ...); the jax registry adds the rest jax uses.
    ctx = ir.Context()
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    for register in (
        _sdy.register_dialect,
        _sdyMpmd.register_dialect,
        _mlirHlo.register_mhlo_dialect,
        _chlo.register_dialect,
        _stablehlo.register_dialect,
    ):
        register(ctx)
    # Modules may carry custom or vendor ops; they must still load (the pass
    # treats unknown ops conservatively).
    ctx.allow_unregistered_dialects = True
    return ctx


# --------------------------------------------------------------------------
# Printing and serialization


def print_module(module: ir.Module, debuginfo: bool = False) -> str:
    """The module in pretty (custom) form, with locations if `debuginfo`."""
    return module.operation.get_asm(  # type: ignore[return-value]  # jaxlib types get_asm as object
        enable_debug_info=debuginfo, print_generic_op_form=False
    )


def module_text_bytes(module: ir.Module, debuginfo: bool = False, verified: bool = False) -> bytes:
    """`print_module` as UTF-8 bytes, for writing out.

    `verified` says the module was just verified: the printer then skips the
    verification it otherwise runs first (to choose the generic form for a
    broken module), which costs as much as the printing itself.
    """
    return module.operation.get_asm(  # type: ignore[return-value]  # jaxlib types get_asm as object
        binary=True, enable_debug_info=debuginfo, print_generic_op_form=False,
        assume_verified=verified,
    )


_DUMP_HEADER = b"// -----// IR Dump After "


def final_text_bytes(module: ir.Module, debuginfo: bool = False) -> bytes:
    """The same bytes as `module_text_bytes`, printed through a C++ file stream (`final_text`)."""
    with final_text(module, debuginfo) as printed:
        return printed.read()


class PrintedModule:
    """A printed module, read out of the file the printer wrote it to, in one go or in pieces.

    The command copies it to its output in pieces: holding the whole text
    (33 MB at 170k instructions) on top of the module was the command's
    peak memory.
    """

    CHUNK = 1 << 20

    def __init__(self, file: BinaryIO, start: int, size: int) -> None:
        self._file, self._start, self.size = file, start, size

    def read(self) -> bytes:
        self._file.seek(self._start)
        return self._file.read(self.size)

    def chunks(self) -> Iterator[bytes]:
        """The text in pieces of at most ``CHUNK`` bytes, in order."""
        self._file.seek(self._start)
        left = self.size
        while left > 0:
            piece = self._file.read(min(left, self.CHUNK))
            if not piece:
                raise PassError("internal error: the printed module ended early while it was copied out")
            left -= len(piece)
            yield piece

    def lines(self) -> Iterator[bytes]:
        """The text line by line (each with its newline, the last one maybe without)."""
        self._file.seek(self._start)
        left = self.size
        while left > 0:
            line = self._file.readline(left)
            if not line:
                return
            left -= len(line)
            yield line


@contextlib.contextmanager
def final_text(module: ir.Module, debuginfo: bool = False) -> Iterator[PrintedModule]:
    """The module printed as `module_text_bytes` prints it, through a C++ file stream.

    The bindings' printer hands every token to a Python callback (their
    stream is unbuffered), which made printing cost more than parsing: 2.2 s
    for 170k ops.  A pass manager's IR printer writes through LLVM's buffered
    file stream instead (0.9 s), so the module is printed by running a pass
    that does nothing with IR printing into a temporary directory, which
    lives as long as the context.

    Call it last: running a pass manager invalidates the Python handles to
    the module's ops.  Where no temporary directory can be written, the
    module is printed the slow way, into memory; the bytes are the same.
    """
    with contextlib.ExitStack() as stack:
        try:
            printed = _print_into_folder(module, debuginfo, stack)
        except OSError:
            # Not told it is verified: this printer too verifies first (printed_generic).
            text = module_text_bytes(module, debuginfo)
            printed = PrintedModule(io.BytesIO(text), 0, len(text))
        yield printed


def _print_into_folder(module: ir.Module, debuginfo: bool, stack: contextlib.ExitStack) -> PrintedModule:
    """`final_text`'s pass-manager print; the folder and the open dump belong to ``stack``."""
    import glob
    import tempfile

    from jaxlib.mlir import passmanager

    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="stablehlo-layout-", ignore_cleanup_errors=True))
    with module.context:
        pm = passmanager.PassManager("builtin.module")
        pm.add(lambda op, pass_: None, name="stablehlo-layout-print")
        pm.enable_verifier(False)  # the printer verifies the module (printed_generic)
        pm.enable_ir_printing(print_after_all=True, enable_debug_info=debuginfo, tree_printing_dir_path=folder)
        pm.run(module.operation)
    dumps = glob.glob(f"{glob.escape(folder)}/**/*.mlir", recursive=True)
    if len(dumps) == 1:
        f = stack.enter_context(open(dumps[0], "rb"))
        # The dump is a header line, the module as the printer prints it, and two newlines.
        header = f.readline()
        size = os.fstat(f.fileno()).st_size - len(header) - 2
        if size >= 0 and header.startswith(_DUMP_HEADER) and header.endswith(b"\n"):
            f.seek(len(header) + size)
            if f.read() == b"\n\n":
                return PrintedModule(f, len(header), size)
    raise PassError(f"internal error: the pass manager's IR printer wrote {len(dumps)} dump(s) "
                    "or an unexpected layout")


# What MLIR's printer writes first when it prints a module in the generic
# form: after alias definitions (``#loc3 = ...``, ``!t = ...``), one per line.
_GENERIC_MODULE = re.compile(rb'(?:[#!][^\n]*\n)*"builtin\.module"\(')
_GENERIC_START = b'"builtin.module"('


def printed_generic(text: bytes | PrintedModule) -> bool:
    """Whether ``text``, printed by ``final_text`` (or ``final_text_bytes``), is the module in MLIR's generic form.

    MLIR's printer verifies what it prints unless told the IR is verified,
    which its pass manager's IR printer cannot be told, and prints the
    generic form, silently, exactly when the module fails to verify.  The
    command lets that verification check its output, instead of verifying a
    second time before printing; this says whether it failed.
    """
    if isinstance(text, bytes):
        return _GENERIC_MODULE.match(text) is not None
    for line in text.lines():
        if line[:1] not in (b"#", b"!"):
            return line.startswith(_GENERIC_START)
    return False


# Below this many nested regions, MLIR's own teardown is quick.
_DEEP = 64


def discard(module: ir.Module | ir.Operation, depth: int) -> None:
    """Empty a module whose regions nest ``depth`` deep, innermost ops first.

    MLIR destroys a nested op by walking everything below it, at every level,
    so dropping a 10,000-deep module cost 5 s.  Erasing the ops in reverse
    pre-order (users before the values they read, children before parents)
    makes each erase shallow.  Shallow modules are left to MLIR.
    """
    if depth < _DEEP:
        return
    for op in reversed(nested_ops(module.operation)):
        op.erase()


def to_bytecode(module: ir.Module) -> bytes:
    """The module as MLIR bytecode."""
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return buffer.getvalue()


# --------------------------------------------------------------------------
# Reading inputs


def read_input(path: str, ctx: ir.Context) -> ir.Module:
    """Read `path` and load it into `ctx`.

    `-` reads stdin as bytes; errors then name the input `<stdin>`.
    """
    if path == "-":
        return load(sys.stdin.buffer.read(), _STDIN_NAME, ctx, file="-")
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except OSError as error:
        raise InputError(path, _os_reason(error)) from None
    return load(data, path, ctx, file=path)


def _os_reason(error: OSError) -> str:
    text = error.strerror or str(error)
    return text[:1].lower() + text[1:]


def detect_kind(data: bytes) -> str | None:
    """Which input kind `data` is, or None when it is none of them.

    Order matters: bytecode is recognised by its magic; anything that decodes
    as text is HLO (first non-blank line starts with `HloModule`) or MLIR text;
    only then is binary data tried as a `jax.export` flatbuffer, whose embedded
    StableHLO bytecode can never decode as UTF-8.
    """
    return _classify(data)[0]


def _classify(data: bytes) -> tuple[str | None, str | None]:
    """(kind, decoded text for the text kinds)."""
    if data.startswith(BYTECODE_MAGIC):
        return MLIR_BYTECODE, None
    text = _as_text(data)
    if text is not None:
        kind = HLO_TEXT if _HLO_HEADER.match(text) else MLIR_TEXT
        return kind, text
    if _looks_like_jax_export(data):
        return JAX_EXPORT, None
    return None, None


def load(data: bytes | bytearray | memoryview | str, path: str, ctx: ir.Context,
         hlo_sources: bool = False, *, file: str | None = None, hlo_proto: bytes | None = None) -> ir.Module:
    """Load any supported input kind into `ctx` as a verified module.

    `path` only names the input in errors.  `file`, when `data` is that file's
    contents (`-`: stdin's), makes the locations of MLIR text name the file
    (`x.mlir:7:8`, `<stdin>:7:8`) and not the parser's anonymous buffer,
    which MLIR calls `-`; without it they keep `-`, which reports show as
    "line 7:8 of the parsed text" (`ir.locations.location_text`).  With `hlo_sources`, ops read from HLO text keep their
    HLO instruction names and also carry the user's call stack from XLA's
    metadata as the name's child location
    (``loc("dot.3"(callsite("model.py":12:8 at ...)))``).  `hlo_proto`, the
    HloProto of the same HLO text (an XLA dump writes it beside the text as
    `<stem>.hlo.pb`, which `file` finds), gives XLA's instruction list order
    (`hlo_proto.list_order`).  Raises `InputError`.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    data = bytes(data)
    if not data or data.isspace():
        raise InputError(path, "empty input")
    kind, text = _classify(data)
    if kind == MLIR_BYTECODE:
        return _load_bytecode(data, path, ctx)
    if kind == JAX_EXPORT:
        return _load_bytecode(_bytecode_from_jax_export(data, path), path, ctx)
    if kind == HLO_TEXT and text is not None:
        if hlo_proto is None and file is not None and file != "-":
            hlo_proto = _proto_beside(file)
        return _load_hlo_text(text, path, ctx, hlo_sources, hlo_proto)
    if kind == MLIR_TEXT and text is not None:
        if file is not None and not data.startswith(b"\xef\xbb\xbf") and file != "-":
            return _parse_file(file, path, ctx)  # verified by the parse
        module = _parse(text, path, ctx, _text_locator)  # verified by the parse
        if file is not None:
            # Stdin, or a file MLIR's lexer cannot read itself (a byte-order
            # mark): the text went through the anonymous buffer.
            name_buffer(module, _STDIN_NAME if file == "-" else file)
        return module
    raise _not_an_input(data, path)


def _not_an_input(data: bytes, path: str) -> InputError:
    """Why `data` is no input: text in another encoding (Latin-1, say) is told apart from binary data."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        head = data[: error.start].decode("utf-8")
        if head.strip() and not _CONTROL_CHARS.search(head):
            line = head.count("\n") + 1
            col = len(head) - (head.rfind("\n") + 1) + 1
            return InputError(path, f"not UTF-8 text: byte 0x{data[error.start]:02x} is no UTF-8 character "
                                    "(MLIR and HLO text are UTF-8)", line, col)
    return InputError(path, _UNKNOWN_INPUT)


# Bytes that never occur in MLIR or HLO text; they mark binary data even when
# it happens to be valid UTF-8.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def _as_text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _CONTROL_CHARS.search(text):
        return None
    return text.removeprefix("\ufeff")


# The first non-blank line of HLO text starts with this keyword.
_HLO_HEADER = re.compile(r"\s*HloModule\b")


def _looks_like_jax_export(data: bytes) -> bool:
    # A flatbuffer starts with the little-endian offset of its root table, and
    # an export always embeds a StableHLO bytecode blob. Checking both keeps us
    # from importing jax (0.6 s) for every piece of binary garbage.
    if len(data) < 8 or BYTECODE_MAGIC not in data:
        return False
    root = int.from_bytes(data[:4], "little")
    return 4 <= root < len(data)


# --------------------------------------------------------------------------
# Diagnostics -> InputError


@dataclass(frozen=True)
class _Diagnostic:
    location: str  # str(ir.Location), e.g. 'loc("-":3:5)' or 'loc("add.1")'
    message: str


# Maps a diagnostic's location to a (line, column) in the input, if it has one.
_Locator = Callable[[str], tuple[int, int | None] | None]

_FILE_POSITION = re.compile(r'"-":(\d+):(\d+)')
# Where bytecode readers report problems with the bytes themselves.
_READER_LOCATION = re.compile(r'loc\("-":0:0\)|loc\(unknown\)')
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"(:\d+:\d+)?')


def _text_locator(location: str) -> tuple[int, int | None] | None:
    # The MLIR parser names its input buffer "-".
    match = _FILE_POSITION.search(location)
    if match is None or int(match.group(1)) == 0:
        return None
    return int(match.group(1)), int(match.group(2))


def _no_locator(location: str) -> None:
    # Bytecode has no lines; its "-":0:0 positions and stored locations do not
    # point into the input file.
    return None


def _describe_location(location: str) -> str | None:
    """The leading name or file:line:col of a location, for a reason's suffix."""
    match = _QUOTED.search(location)
    if match is None:
        return None
    name = match.group(1)
    if name == "-":  # the parse buffer itself: no useful place to name
        return None
    return name + (match.group(2) or "")


def _input_error(
    path: str,
    diagnostics: Sequence[_Diagnostic],
    fallback: str,
    locate: _Locator,
    prefix: str = "",
) -> InputError:
    if not diagnostics:
        return InputError(path, prefix + fallback)
    first = diagnostics[0]
    position = locate(first.location)
    # The prefix says which reader failed; a verifier complaint about an op
    # (any real location) is not the reader's fault.
    if not _READER_LOCATION.fullmatch(first.location):
        prefix = ""
    reason = prefix + first.message
    if position is None:
        where = _describe_location(first.location)
        if where:
            reason += f" (at {where})"
        return InputError(path, reason)
    return InputError(path, reason, position[0], position[1])


def _from_mlir_error(error: ir.MLIRError) -> list[_Diagnostic]:
    return [_Diagnostic(str(d.location), d.message) for d in error.error_diagnostics]


@contextlib.contextmanager
def _collected_errors(ctx: ir.Context) -> Iterator[list[_Diagnostic]]:
    """Collect error diagnostics that C++ entry points emit instead of raising."""
    errors: list[_Diagnostic] = []

    def handler(diagnostic: ir.Diagnostic) -> bool:
        if diagnostic.severity != ir.DiagnosticSeverity.ERROR:
            return False  # let warnings reach stderr as usual
        # A Diagnostic is only valid during the callback: copy it out.
        errors.append(_Diagnostic(str(diagnostic.location), diagnostic.message))
        return True

    attached = ctx.attach_diagnostic_handler(handler)
    try:
        yield errors
    finally:
        attached.detach()  # type: ignore[attr-defined]  # jaxlib types the handler as object


# --------------------------------------------------------------------------
# MLIR text and bytecode


def _parse(
    source: str | bytes, path: str, ctx: ir.Context, locate: _Locator, prefix: str = ""
) -> ir.Module:
    # Module.parse also verifies, so verifier errors surface here with the
    # parser's positions.
    with _collected_errors(ctx) as collected:
        try:
            return ir.Module.parse(source, context=ctx)
        except ir.MLIRError as error:
            diagnostics = _from_mlir_error(error) or collected
            raise _input_error(path, diagnostics, error.message, locate, prefix) from None


def _parse_file(file: str, path: str, ctx: ir.Context) -> ir.Module:
    """MLIR text parsed from `file`: the parser names its buffer, and so every location, after it."""
    buffer = re.escape(file.replace("\\", "\\\\").replace('"', '\\"'))
    position = re.compile(rf'"{buffer}":(\d+):(\d+)')

    def locate(location: str) -> tuple[int, int | None] | None:
        match = position.search(location) or _FILE_POSITION.search(location)
        if match is None or int(match.group(1)) == 0:
            return None
        return int(match.group(1)), int(match.group(2))

    with _collected_errors(ctx) as collected:
        try:
            return ir.Module.parseFile(file, context=ctx)
        except ir.MLIRError as error:
            diagnostics = _from_mlir_error(error) or collected
            raise _input_error(path, diagnostics, error.message, locate) from None


def name_buffer(module: ir.Module, name: str) -> None:
    """Make every location in the parser's anonymous buffer (`"-":7:8`) name `name` instead.

    As MLIR's own tools name stdin `<stdin>`; positions elsewhere (another
    file, a call site in the user's code) and names are kept.
    """
    with module.context:
        renamed: dict[str, ir.Location | None] = {}

        def rename(loc: ir.Location) -> ir.Location | None:
            key = str(loc)
            if '"-":' not in key:
                return None
            if key not in renamed:
                renamed[key] = _renamed(loc, name)
            return renamed[key]

        ops = [module.operation, *nested_ops(module.operation)]
        for op in ops:
            new = rename(op.location)
            if new is not None:
                op.location = new
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.arguments:
                        new = rename(arg.location)
                        if new is not None:
                            arg.set_location(new)


def _renamed(loc: ir.Location, name: str) -> ir.Location | None:
    """`loc` with the anonymous buffer renamed, or None when nothing in it names that buffer."""
    if isinstance(loc, ir.FileLineColLoc):
        if loc.filename != "-":
            return None
        return ir.Location.file(name, loc.start_line, loc.start_col, loc.end_line, loc.end_col)
    if isinstance(loc, ir.NameLoc):
        child = _renamed(loc.child_loc, name)
        return None if child is None else ir.Location.name(loc.name_str, child)
    if isinstance(loc, ir.CallSiteLoc):
        callee, caller = _renamed(loc.callee, name), _renamed(loc.caller, name)
        if callee is None and caller is None:
            return None
        return ir.Location.callsite(callee or loc.callee, [caller or loc.caller])
    if isinstance(loc, ir.FusedLoc):
        parts = [_renamed(part, name) for part in loc.locations]  # type: ignore[arg-type]  # typed list[object]
        if all(part is None for part in parts):
            return None
        return ir.Location.fused([new or old for new, old in zip(parts, loc.locations)], loc.metadata)  # type: ignore[misc]
    return None


def _verified(module: ir.Module, path: str, locate: _Locator) -> ir.Module:
    try:
        module.operation.verify()
    except ir.MLIRError as error:
        raise _input_error(
            path, _from_mlir_error(error), "module does not verify", locate
        ) from None
    return module


def _load_bytecode(data: bytes, path: str, ctx: ir.Context) -> ir.Module:
    if _is_portable_artifact(data):
        return _verified(_deserialize_portable_artifact(data, path, ctx), path, _no_locator)
    # Module.parse verified it already (bytecode too); a second verification
    # cost a third of the parse.
    return _parse(data, path, ctx, _no_locator, prefix="bad MLIR bytecode: ")


def _is_portable_artifact(data: bytes) -> bool:
    # Header: magic, a varint version, then the null-terminated producer name.
    return _PORTABLE_PRODUCER in data[len(BYTECODE_MAGIC) : len(BYTECODE_MAGIC) + 16]


def _deserialize_portable_artifact(data: bytes, path: str, ctx: ir.Context) -> ir.Module:
    # Parsed as plain bytecode a portable artifact would yield versioned `vhlo`
    # ops; StableHLO's deserializer upgrades them to `stablehlo`.
    with _collected_errors(ctx) as collected:
        try:
            return _stablehlo.deserialize_portable_artifact(ctx, data)
        except (ValueError, ir.MLIRError) as error:
            raise _input_error(
                path,
                collected,
                str(error),
                _no_locator,
                prefix="bad StableHLO portable artifact: ",
            ) from None


# --------------------------------------------------------------------------
# jax.export artifacts


def _bytecode_from_jax_export(data: bytes, path: str) -> bytes:
    try:
        from jax import export as jax_export  # lazy: importing jax costs ~0.6 s
    except ImportError as error:
        raise InputError(path, f"reading a jax.export artifact needs jax ({error})") from None
    blob: bytes | None
    try:
        blob = bytes(jax_export.deserialize(bytearray(data)).mlir_module_serialized)
    except ImportError as error:  # flatbuffers is an optional dependency of jax
        raise InputError(
            path, f"reading a jax.export artifact needs the flatbuffers package ({error})"
        ) from None
    except Exception as error:
        blob = _raw_export_bytecode(data)
        if blob is None:
            raise InputError(path, _export_failure(error)) from None
    if not blob.startswith(BYTECODE_MAGIC):
        raise InputError(path, "jax.export artifact without a StableHLO module")
    return blob


def _export_failure(error: Exception) -> str:
    # Reading a corrupt flatbuffer fails with whatever the reader tripped on
    # (struct.error, IndexError, TypeError ...); only jax's own ValueErrors say
    # something a user can act on (e.g. an unsupported serialization version).
    if type(error) is ValueError:
        return f"cannot read jax.export artifact: {error}"
    return f"{_UNKNOWN_INPUT} (a truncated or corrupt jax.export artifact?)"


def _raw_export_bytecode(data: bytes) -> bytes | None:
    """The module field of an export that `jax.export.deserialize` rejects.

    Full deserialization also rebuilds pytrees and shardings, and fails e.g.
    on custom pytree nodes not registered in this process; the module itself
    is still fine.
    """
    try:
        from jax._src.export import serialization_generated as flatbuffer

        root = flatbuffer.Exported.GetRootAsExported(bytearray(data))
        if root.MlirModuleSerializedIsNone():
            return None
        blob = root.MlirModuleSerializedAsNumpy().tobytes()
    except Exception:
        return None
    return blob if blob.startswith(BYTECODE_MAGIC) else None


# --------------------------------------------------------------------------
# HLO text

# Possessive quantifiers keep these linear on 100k-instruction dumps.
_HLO_STRING = r'"(?:[^"\\\n]++|\\.)*+"'
_HLO_NAME_CHAR = r"[\w.\-]"

# `, metadata={...}`, allowing one nested brace level (profile_type={...}) and
# braces inside quoted strings.
_METADATA = re.compile(
    rf",[ \t]*metadata=\{{(?:[^{{}}\"\n]++|{_HLO_STRING}"
    rf"|\{{(?:[^{{}}\"\n]++|{_HLO_STRING})*+\}})*+\}}"
)
_NAME = re.compile(r"[A-Za-z_][\w.\-]*")

# Names the HLO lexer reads as primitive types (s1 ... u64, f16, bf16, f8e4m3fn,
# pred, token, ...): an instruction called that way is rejected.
_TYPE_LIKE = (
    r"(?:pred|token|opaque|bf16|c64|c128|[su](?:1|2|4|8|16|32|64)|f(?:16|32|64)"
    r"|f\d+e\d+m\d+[a-z]*)"
)
# Definitions of such names, with and without the usual `%`.
_TYPE_LIKE_DEFINITIONS = (
    re.compile(rf"%({_TYPE_LIKE})[ \t]*="),
    re.compile(rf"^[ \t]*(?:ROOT[ \t]+)?({_TYPE_LIKE})[ \t]*=", re.M),
)

_HLO_POSITION = re.compile(r"was parsing (\d+):(\d+): error: ([^\n]*)")
_ILLEGAL_NAME = re.compile(r"illegal instruction name: ([^;\s]+)")
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_MAX_RENAME_ROUNDS = 32


def prepare_hlo_text(text: str, sources: bool = False) -> str:
    """HLO text as `hlo_to_stablehlo` should see it.

    Drops `metadata={...}` so that ops are located by their HLO instruction
    names (with metadata, XLA names them after `op_name` and stack frames), and
    renames instructions whose names the HLO parser takes for types. Line
    numbers are unchanged.  With `sources`, metadata that points into the
    module's stack frames stays, its `op_name` replaced by the instruction's
    name: the converter then locates the op by that name with the call stack
    as its child.
    """
    text = _METADATA.sub(_name_stack_frame if sources else _drop_metadata, text)
    type_like = {m.group(1) for regex in _TYPE_LIKE_DEFINITIONS for m in regex.finditer(text)}
    if not type_like:
        return text
    return _rename(text, sorted(type_like), _definitions(text))


def _drop_metadata(match: re.Match[str]) -> str:
    text, start = match.string, match.start()
    line_start = text.rfind("\n", 0, start) + 1
    # Inside another attribute's string (odd number of unescaped quotes before
    # it on the line) it is not a metadata clause: keep it.
    quotes = text.count('"', line_start, start) - text.count('\\"', line_start, start)
    return "" if quotes % 2 == 0 else match.group()


_STACK_FRAME_ID = re.compile(r"\bstack_frame_id=(\d+)")


def _name_stack_frame(match: re.Match[str]) -> str:
    """``, metadata={op_name="<instruction>" stack_frame_id=N}`` for a clause with a stack frame."""
    dropped = _drop_metadata(match)
    if dropped:  # not a metadata clause
        return dropped
    text, start = match.string, match.start()
    line_start = text.rfind("\n", 0, start) + 1
    definition = _definition(text[line_start:start])
    frame = _STACK_FRAME_ID.search(match.group())
    if definition is None or frame is None or frame.group(1) == "0":
        return ""
    return f', metadata={{op_name="{definition[0]}" stack_frame_id={frame.group(1)}}}'


def _definition(line: str) -> tuple[str, bool] | None:
    """(name, written with `%`) when `line` defines an instruction."""
    head = line.lstrip(" \t")
    if head.startswith("ROOT "):
        head = head[5:].lstrip(" \t")
    equals = head.find("=")
    if equals <= 0:
        return None
    head = head[:equals].rstrip(" \t")
    percent = head.startswith("%")
    name = head[1:] if percent else head
    return (name, percent) if _NAME.fullmatch(name) else None


def _definitions(text: str) -> dict[str, bool]:
    """Instruction name -> whether it is written with a `%`."""
    found = (_definition(line) for line in text.split("\n"))
    return {d[0]: d[1] for d in found if d is not None}


def _rename(text: str, names: Iterable[str], definitions: dict[str, bool]) -> str:
    taken = set(definitions)
    mapping: dict[str, str] = {}
    for old in names:
        new = old + "_"
        while new in taken:
            new += "_"
        taken.add(new)
        mapping[old] = new
    # Longest first so that `s16` is not read as `s1` + `6`.
    ordered = "|".join(re.escape(n) for n in sorted(mapping, key=len, reverse=True))
    patterns = [f"({_HLO_STRING})", rf"%({ordered})(?!{_HLO_NAME_CHAR})"]
    bare = [n for n in mapping if definitions.get(n) is False]
    if bare:
        # A bare use is a name token not followed by `[`, which would make it
        # a type in a shape (`s1[2]`).
        alternatives = "|".join(re.escape(n) for n in sorted(bare, key=len, reverse=True))
        patterns.append(rf"(?<![\w.\-%])({alternatives})(?![\w.\-\[])")

    def replace(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        if match.group(2) is not None:
            return "%" + mapping[match.group(2)]
        return mapping[match.group(3)]

    return re.compile("|".join(patterns)).sub(replace, text)


def _proto_beside(file: str) -> bytes | None:
    from stablehlo_layout.ir.hlo_proto import beside

    proto = beside(file)
    if proto is None:
        return None
    try:
        with open(proto, "rb") as f:
            return f.read()
    except OSError:
        return None  # the order is a refinement; the text alone is a complete input


def _load_hlo_text(text: str, path: str, ctx: ir.Context, sources: bool = False,
                   proto: bytes | None = None) -> ir.Module:
    # Lazy: the HLO bindings are only needed for this input kind.
    from jaxlib import _jax

    prepared = prepare_hlo_text(text, sources)
    hlo_module, prepared = _parse_hlo(prepared, text, path)
    try:
        bytecode = _jax.mlir.hlo_to_stablehlo(hlo_module.as_serialized_hlo_module_proto())  # type: ignore[attr-defined]
    except Exception as error:  # XLA raises JaxRuntimeError with a status text
        raise InputError(path, f"HLO to StableHLO conversion failed: {_status_text(error)}") from None
    locate = _hlo_locator(prepared)
    module = _parse(bytecode, path, ctx, locate)  # verified by the parse
    _restore_entry_layout_modes(module, text, path)
    _restore_parameter_layouts(module, prepared)
    _restore_cudnn_conv_attributes(module, prepared, path)
    from stablehlo_layout.ir.marks import mark_loop_ranks, mark_pass_created, mark_user_orders

    mark_pass_created(module, text)
    mark_user_orders(module, text)
    mark_loop_ranks(module, text)
    if proto is not None:
        from stablehlo_layout.ir.hlo_proto import list_order
        from stablehlo_layout.ir.marks import mark_list_order

        try:
            names = list_order(proto)
        except (ValueError, IndexError, UnicodeDecodeError):
            raise InputError(path, "the HloProto beside it is not one XLA wrote") from None
        mark_list_order(module, names)
    return module


# An entry parameter instruction may carry another layout than the entry
# computation layout pins (XLA's own unit tests write them; XLA:GPU's dumps
# give every parameter the default).  The converter keeps only the entry
# layout; the instruction's own is its existing layout for XLA:GPU's dot rules.
HLO_PARAMETER_LAYOUT = "stablehlo_layout.hlo_layout"
_ENTRY_PARAMETER = re.compile(
    r"^[ \t]*%?[A-Za-z_][\w.\-]*[ \t]*=[ \t]*\w+\[([\d,]*)\]\{([\d,]*)[}:][^=\n]*?\bparameter\((\d+)\)", re.M)


def _restore_parameter_layouts(module: ir.Module, text: str) -> None:
    entry = re.search(r"^ENTRY\b", text, re.M)
    if entry is None:
        return
    end = re.search(r"^\}", text[entry.end():], re.M)
    body = text[entry.end(): entry.end() + end.start() if end else len(text)]
    found: dict[int, list[int]] = {}
    for m in _ENTRY_PARAMETER.finditer(body):
        dims = [d for d in m.group(1).split(",") if d]
        layout = [int(x) for x in m.group(2).split(",") if x]
        if len(layout) == len(dims) >= 2 and layout != list(range(len(dims) - 1, -1, -1)):
            found[int(m.group(3))] = layout
    main = next((f for f in module.body.operations if f.operation.name == "func.func"
                 and ir.StringAttr(f.attributes["sym_name"]).value == "main"), None)
    if not found or main is None:
        return
    with module.context:
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        existing = list(ir.ArrayAttr(main.attributes["arg_attrs"])) if "arg_attrs" in main.attributes else []
        entries = []
        for i in range(len(ftype.inputs)):
            d = ir.DictAttr(existing[i]) if i < len(existing) else ir.DictAttr.get({})
            values = {d[k].name: d[k].attr for k in range(len(d))}
            if i in found:
                values[HLO_PARAMETER_LAYOUT] = ir.Attribute.parse(
                    f"dense<[{', '.join(map(str, found[i]))}]> : tensor<{len(found[i])}xindex>")
            entries.append(ir.DictAttr.get(values))
        main.attributes["arg_attrs"] = ir.ArrayAttr.get(entries)


# XLA:GPU forms cuDNN convolutions as custom calls before layout assignment;
# the layouts they need follow from their convolution dimension numbers, which
# the HLO text spells `dim_labels=`.  A stablehlo.custom_call has no place for
# them, so the converter drops them (with the window and the group counts):
# they are read back from the text and kept as attributes of the custom call.
CONV_ATTRIBUTES = {
    "dim_labels": "stablehlo_layout.dim_labels",
    "window": "stablehlo_layout.window",
    "feature_group_count": "stablehlo_layout.feature_group_count",
    "batch_group_count": "stablehlo_layout.batch_group_count",
}
KEPT_CONVOLUTION = "stablehlo_layout.not_a_cudnn_call"
_CUDNN_TARGET = 'custom_call_target="__cudnn$conv'
_DEFINED_NAME = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?%?([A-Za-z_][\w.\-]*)[ \t]*=")
_CONV_FIELDS = re.compile(
    r",[ \t]*(?:window=\{(?P<window>[^{}]*)\}|dim_labels=(?P<dim_labels>[\w>-]+)"
    r"|feature_group_count=(?P<feature_group_count>\d+)|batch_group_count=(?P<batch_group_count>\d+))")


def _restore_cudnn_conv_attributes(module: ir.Module, text: str, path: str) -> None:
    if _CUDNN_TARGET not in text:
        return
    found: dict[str, tuple[int, dict[str, str]]] = {}
    for number, line in enumerate(text.split("\n"), 1):
        at = line.find(_CUDNN_TARGET)
        if at < 0:
            continue
        name = _DEFINED_NAME.match(line)
        if name is None:
            continue
        # Only the instruction's own attributes: backend_config's JSON follows the target.
        fields = {k: v for m in _CONV_FIELDS.finditer(line, 0, at) for k, v in m.groupdict().items() if v}
        if "dim_labels" not in fields:
            raise InputError(path, f"cuDNN convolution %{name.group(1)} has no dim_labels", number)
        found[name.group(1)] = (number, fields)
    if not found:
        return
    with module.context:
        i64 = ir.IntegerType.get_signless(64)
        for op in _walk(module.operation):
            if op.name == "stablehlo.convolution":
                # The dump is past XLA:GPU's convolution rewriting: a convolution
                # still here is one cuDNN cannot run, and no GPU rule applies to it.
                op.attributes[KEPT_CONVOLUTION] = ir.UnitAttr.get()
                continue
            if op.name != "stablehlo.custom_call":
                continue
            loc = _QUOTED.search(str(op.location))
            entry = found.get(loc.group(1)) if loc else None
            if entry is None:
                continue
            for key, value in entry[1].items():
                attr = ir.IntegerAttr.get(i64, int(value)) if key.endswith("count") else ir.StringAttr.get(value)
                op.attributes[CONV_ATTRIBUTES[key]] = attr


def _walk(op: ir.Operation) -> Iterator[ir.Operation]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _walk(inner.operation)


def _entry_computation_layout(text: str) -> str | None:
    """The text inside ``entry_computation_layout={...}`` on the HloModule line."""
    header = text[: text.find("\n")] if "\n" in text else text
    start = header.find("entry_computation_layout={")
    if start < 0:
        return None
    i = start + len("entry_computation_layout={")
    depth = 1
    for j in range(i, len(header)):
        if header[j] == "{":
            depth += 1
        elif header[j] == "}":
            depth -= 1
            if depth == 0:
                return header[i:j]
    return None


def _restore_entry_layout_modes(module: ir.Module, text: str, path: str) -> None:
    """Say on @main which entry layouts the HLO module set and which it left open.

    XLA's converter writes entry layouts only as module attributes, and only
    when some are non-default; a layout the HLO left unset (JAX's
    ``Layout.AUTO``) comes back looking like the default.  The HLO header
    still knows: a leaf with ``{...}`` is set, one without is free.
    """
    from stablehlo_layout.model.layout import ArrayShape, TupleShape, format_layout, parse_shape

    body = _entry_computation_layout(text)
    if body is None or "->" not in body:
        return
    body = re.sub(r"/\*.*?\*/", "", body)  # XLA marks every fifth entry: /*index=5*/
    depth = 0
    split = -1
    for k, ch in enumerate(body):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "-" and depth == 0 and body[k:k + 2] == "->":
            split = k
            break
    try:
        params = parse_shape(body[:split])
        result = parse_shape(body[split + 2:])
    except ValueError as error:
        raise InputError(path, f"cannot read entry_computation_layout: {error}", 1) from None
    param_shapes = params.elements if isinstance(params, TupleShape) else (params,)
    result_shapes = result.elements if isinstance(result, TupleShape) else (result,)
    main = next((f for f in module.body.operations if f.operation.name == "func.func"
                 and ir.StringAttr(f.attributes["sym_name"]).value == "main"), None)
    if main is None:
        return
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    shapes: Sequence[ArrayShape | TupleShape]
    with module.context:
        for key, shapes, count in (("arg_attrs", param_shapes, len(ftype.inputs)),
                                   ("res_attrs", result_shapes, len(ftype.results))):
            if len(shapes) != count:
                # A tuple-shaped parameter or result: the converter passes its leaves.
                shapes = _leaves(shapes)
            if len(shapes) != count:
                raise InputError(path, f"entry_computation_layout has {len(shapes)} "
                                 f"{'parameters' if key == 'arg_attrs' else 'results'}, the entry "
                                 f"function {count}", 1)
            existing = list(ir.ArrayAttr(main.attributes[key])) if key in main.attributes else []
            entries = []
            for i, shape in enumerate(shapes):
                d = ir.DictAttr(existing[i]) if i < len(existing) else ir.DictAttr.get({})
                values = {d[k].name: d[k].attr for k in range(len(d))}
                # A scalar prints no layout whether or not one was set.
                if isinstance(shape, ArrayShape) and shape.dims:
                    mode = "auto" if shape.layout is None else format_layout(shape.layout)
                    values["mhlo.layout_mode"] = ir.StringAttr.get(mode)
                entries.append(ir.DictAttr.get(values))
            main.attributes[key] = ir.ArrayAttr.get(entries)


def open_scalar_entries(module: ir.Module, open_params: Sequence[bool], open_results: Sequence[bool]) -> None:
    """Mark the entry's scalar leaves the caller left open (``auto``), which an HLO header cannot show.

    A scalar prints no layout whether or not one was set (``_restore_entry_layout_modes``), but
    for XLA an open scalar result leaves the whole result layout unset (XLA §8.5): a caller
    that knows the requests (the JAX front door) restores them here.  Lists of another length
    than the entry's parameters / results are ignored.
    """
    main = next((f for f in module.body.operations if f.operation.name == "func.func"
                 and ir.StringAttr(f.attributes["sym_name"]).value == "main"), None)
    if main is None:
        return
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    with module.context:
        for key, types, flags in (("arg_attrs", ftype.inputs, open_params), ("res_attrs", ftype.results, open_results)):
            if len(flags) != len(types) or not any(flags):
                continue
            existing = list(ir.ArrayAttr(main.attributes[key])) if key in main.attributes else []
            entries = []
            for i, t in enumerate(types):
                d = ir.DictAttr(existing[i]) if i < len(existing) else ir.DictAttr.get({})
                values = {d[k].name: d[k].attr for k in range(len(d))}
                if flags[i] and isinstance(t, ir.RankedTensorType) and t.rank == 0:
                    values["mhlo.layout_mode"] = ir.StringAttr.get("auto")
                entries.append(ir.DictAttr.get(values))
            main.attributes[key] = ir.ArrayAttr.get(entries)


def _leaves(shapes) -> list:
    """The array (and token) leaves of shapes, tuples flattened in order, without recursion."""
    from stablehlo_layout.model.layout import TupleShape

    out = []
    pending = list(reversed(shapes))
    while pending:
        shape = pending.pop()
        if isinstance(shape, TupleShape):
            pending.extend(reversed(shape.elements))
        else:
            out.append(shape)
    return out


# XLA's HLO parser does not return an error for every malformed instruction:
# some reach a CHECK in the instruction's constructor and abort the whole
# process (seen: a reshape whose element count differs from its operand's).
# Those are checked here first, so the user gets a line, not a core dump.
_HLO_DEFINITION = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?%?([A-Za-z_][\w.\-]*)[ \t]*=[ \t]*\w+\[([^\]]*)\]([^\n]*)", re.M)
_HLO_RESHAPE = re.compile(r"[ \t]*(?:\{[^}\n]*\})?[ \t]*reshape\(([^)\n]*)\)")
_HLO_SIGNATURE_PARAMETER = re.compile(r"%?([A-Za-z_][\w.\-]*):[ \t]*\w+\[([^\]]*)\]")


def _static_elements(dims: str) -> int | None:
    """The element count of an HLO shape's ``[...]``; None if a dim is dynamic."""
    count = 1
    for d in filter(None, (x.strip() for x in dims.split(","))):
        if not d.isdigit():
            return None
        count *= int(d)
    return count


def _check_fatal_hlo(text: str, path: str) -> None:
    """Refuse, with file:line, what XLA's HLO parser would abort the process on."""
    dims: dict[str, str] = {}
    for m in _HLO_SIGNATURE_PARAMETER.finditer(text):
        dims.setdefault(m.group(1), m.group(2))
    for m in _HLO_DEFINITION.finditer(text):
        name, shape, rest = m.groups()
        dims[name] = shape
        call = _HLO_RESHAPE.match(rest) if "reshape(" in rest else None
        if call is None or not call.group(1).strip():
            continue
        operands = call.group(1)
        operand = operands.split()[-1].lstrip("%")
        inline = re.match(r"\s*\w+\[([^\]]*)\]", operands)
        source = inline.group(1) if inline else dims.get(operand)
        want, have = _static_elements(shape), _static_elements(source) if source is not None else None
        if want is not None and have is not None and want != have:
            line = text.count("\n", 0, m.start(1)) + 1
            raise InputError(path, f"reshape {name} has {want} elements but its operand {operand} has {have}",
                             line, None)


def _parse_hlo(prepared: str, original: str, path: str) -> tuple[object, str]:
    """The parsed HloModule and the text it was parsed from."""
    import jaxlib._hlo as _hlo

    _check_fatal_hlo(original, path)
    for _ in range(_MAX_RENAME_ROUNDS):
        try:
            return _hlo.hlo_module_from_text(prepared), prepared
        except Exception as error:
            message = str(error)
            illegal = _ILLEGAL_NAME.search(message)
            if illegal is None:
                raise _hlo_parse_error(message, prepared, original, path) from None
            # A type-like name our pattern does not know yet: rename and retry.
            prepared = _rename(prepared, [illegal.group(1)], _definitions(prepared))
    raise InputError(path, "too many HLO instruction names that spell types")


def _hlo_parse_error(message: str, prepared: str, original: str, path: str) -> InputError:
    positions = _HLO_POSITION.findall(message)
    if not positions:
        return InputError(path, _status_text(message))
    # XLA reports a stack of errors; a message ending in ':' only introduces
    # the next, more specific one.
    line, col, reason = next(
        (p for p in positions if not p[2].rstrip().endswith(":")), positions[0]
    )
    line_no = int(line)
    # Our rewrites keep lines but may shift columns on the lines they touch.
    column = int(col) if _same_line(prepared, original, line_no) else None
    reason = reason.strip()
    lines = prepared.splitlines()
    if 0 < line_no <= len(lines) and _ELEMENT_OPERAND.search(lines[line_no - 1]):
        # XLA 0.11 and later print tuple elements as operands `%t#i` instead of
        # get-tuple-element instructions; older jaxlibs cannot parse that.
        from importlib.metadata import version

        reason += (f" (the line uses XLA 0.11+'s tuple-element operands `%t#i`, which "
                   f"jaxlib {version('jaxlib')} cannot read; install jaxlib >= 0.11)")
    return InputError(path, reason, line_no, column)


_ELEMENT_OPERAND = re.compile(r"%[\w.\-]+#\d")


def _same_line(a: str, b: str, line_no: int) -> bool:
    a_lines, b_lines = a.splitlines(), b.splitlines()
    if not (0 < line_no <= len(a_lines) and line_no <= len(b_lines)):
        return False
    return a_lines[line_no - 1] == b_lines[line_no - 1]


def _status_text(error: object) -> str:
    # "INVALID_ARGUMENT: ..." -> "...", first line only.
    text = str(error).strip()
    return _STATUS_PREFIX.sub("", text.splitlines()[0] if text else "unknown error")


def _hlo_locator(text: str) -> _Locator:
    """Locate diagnostics on converted HLO by their NameLoc: the instruction."""

    def locate(location: str) -> tuple[int, int | None] | None:
        match = _QUOTED.search(location)
        if match is None:
            return None
        definition = re.search(
            rf"^[ \t]*(?:ROOT[ \t]+)?(%?{re.escape(match.group(1))})[ \t]*=", text, re.M
        )
        if definition is None:
            return None
        line_start = text.rfind("\n", 0, definition.start()) + 1
        line = text.count("\n", 0, definition.start()) + 1
        return line, definition.start(1) - line_start + 1

    return locate


def nested_ops(op: ir.Operation) -> list[ir.Operation]:
    """Every operation nested in ``op``, in pre-order (a list: a generator per
    op costs more than the walk itself on large modules)."""
    out: list[ir.Operation] = []
    # A stack of op iterators, one per open block: pre-order without recursion.
    stack = [iter(_block_ops(op))]
    while stack:
        inner = next(stack[-1], None)
        if inner is None:
            stack.pop()
            continue
        out.append(inner)
        if len(inner.regions):
            stack.append(iter(_block_ops(inner)))
    return out


def _block_ops(op: ir.Operation) -> list[ir.Operation]:
    """The ops directly inside ``op``'s regions, in order."""
    return [view.operation for region in op.regions for block in region.blocks for view in block.operations]
