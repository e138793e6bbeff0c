"""GPU models for the xla-gpu target: XLA's ``GpuTargetConfigProto`` text files.

XLA:GPU decides some layouts by the device it compiles for (the compute
capability picks NCHW or NHWC convolutions and the FP8 GEMM rule) and
describes that device with a ``GpuTargetConfigProto``, in protobuf text
format.  XLA keeps one per GPU model (``xla/backends/gpu/target_config/
specs/``); the ones we ship live in ``stablehlo_layout/gpus/`` and are
named by their file stem.  A user may pass any such file instead.

The reader below understands protobuf text format's structure (fields,
nested messages, strings, numbers, enum names, comments) without knowing the
proto schema: it keeps every field it meets and reads only what the rules
need, so a config written for a newer XLA still loads.  Anything that is not
text format is an error naming the file and line.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar, Union

from stablehlo_layout.model.errors import InputError, OptionError

DEFAULT_GPU = "h100"
_SHIPPED = Path(__file__).resolve().parent / "gpus"


@dataclass(frozen=True)
class GpuModel:
    """What XLA:GPU's layout decisions read from the device description."""

    name: str  # the shipped name, or the file it was read from
    description: str  # device_description_str, e.g. "NVIDIA H100 80GB HBM3"
    platform: str  # "cuda" or "rocm"
    compute_capability: tuple[int, int]  # CUDA SM version (major, minor); (0, 0) on ROCm
    dnn_version: tuple[int, int, int]  # cuDNN / MIOpen (major, minor, patch)
    rocm_arch: str = ""  # gcn_arch_name on ROCm, e.g. "gfx90a:sramecc+:xnack-"
    # The config text itself, as XLA reads it (e.g. for
    # jax.experimental.topologies.get_topology_desc(target_config=...)).
    text: str = field(default="", repr=False, compare=False)

    @property
    def label(self) -> str:
        cc = ".".join(map(str, self.compute_capability))
        dnn = ".".join(map(str, self.dnn_version))
        if self.platform == "cuda":
            return f"{self.name} (sm_{cc}, cuDNN {dnn})"
        return f"{self.name} ({self.rocm_arch or 'ROCm'}, MIOpen {dnn})"


def shipped_gpus() -> list[str]:
    """Names of the configs that ship with the package, sorted."""
    return sorted(p.stem for p in _SHIPPED.glob("*.txtpb"))


def load_gpu(spec: str | None) -> GpuModel:
    """The GPU model ``spec`` names: a shipped name, or a path to a text config."""
    if spec is None:
        spec = DEFAULT_GPU
    if "/" not in spec and os.sep not in spec and not os.path.exists(spec) \
            and (_SHIPPED / f"{spec.lower()}.txtpb").is_file():
        return _shipped(spec.lower())  # H100 as h100: the names are the configs' files
    if not os.path.exists(spec):
        if "/" in spec or os.sep in spec or "." in spec:
            raise InputError(spec, "no such file (expected a GpuTargetConfigProto text file)")
        raise OptionError(f"--gpu: unknown GPU {spec!r} (expected one of {', '.join(shipped_gpus())}, "
                          "or a GpuTargetConfigProto text file)")
    try:
        with open(spec, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(spec, f"cannot read GPU config: {e.strerror or e}") from None
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise InputError(spec, "GPU config is not text (expected a GpuTargetConfigProto in text format)") from None
    return model_from_text(text, spec, name=spec)


@functools.cache
def _shipped(name: str) -> GpuModel:
    path = _SHIPPED / f"{name}.txtpb"
    return model_from_text(path.read_text(), str(path), name=name)


def model_from_text(text: str, path: str, name: str) -> GpuModel:
    """Read the fields the GPU rules need from a ``GpuTargetConfigProto`` in text form."""
    root = parse_text_proto(text, path)
    info = _field(root, "gpu_device_info", dict, path)
    if info is None:
        raise InputError(path, "no gpu_device_info message (is this a GpuTargetConfigProto?)")
    cuda = _field(info.value, "cuda_compute_capability", dict, path)
    rocm = _field(info.value, "rocm_compute_capability", dict, path)
    if cuda is not None and rocm is not None:
        raise InputError(path, "gpu_device_info has both cuda_compute_capability and "
                               "rocm_compute_capability", rocm.line)
    arch = ""
    if cuda is not None:
        platform = "cuda"
        cc = (_int(cuda.value, "major", path), _int(cuda.value, "minor", path))
    elif rocm is not None:
        platform, cc = "rocm", (0, 0)
        found = _field(rocm.value, "gcn_arch_name", str, path)
        arch = found.value if found is not None else ""
    else:
        raise InputError(path, "gpu_device_info has no cuda_compute_capability or "
                               "rocm_compute_capability", info.line)
    platform_name = _field(root, "platform_name", str, path)
    if platform_name is not None and platform_name.value.upper() != platform.upper():
        raise InputError(path, f"platform_name {platform_name.value!r} does not match the "
                               f"{platform.upper()} compute capability", platform_name.line)
    dnn_msg = _field(root, "dnn_version_info", dict, path)
    if dnn_msg is not None:
        dnn = (_int(dnn_msg.value, "major", path), _int(dnn_msg.value, "minor", path), _int(dnn_msg.value, "patch", path))
    else:  # XLA 0.12 writes its configs with the version in the device description only
        written = _field(info.value, "dnn_version", str, path)
        parts = written.value.split(".") if written is not None else []
        ok = len(parts) == 3 and all(p.isdigit() for p in parts)
        dnn = (int(parts[0]), int(parts[1]), int(parts[2])) if ok else (0, 0, 0)
    found = _field(root, "device_description_str", str, path)
    return GpuModel(name, found.value if found is not None else "", platform, cc, dnn, arch, text)


# -- protobuf text format, schema-free -------------------------------------------

_V = TypeVar("_V")


@dataclass(frozen=True)
class Field(Generic[_V]):
    value: _V
    line: int


# A message: each field name with its values in order (a field may repeat).
Message = dict[str, list[Field["Scalar | Message"]]]
Scalar = Union[int, float, str, bool]

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+) | (?P<nl>\n) | (?P<comment>\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?(?![\w.]))
  | (?P<ident>-?[A-Za-z_][\w.]*)
  | (?P<punct>[{}<>:;,\[\]])
""", re.X)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}
_CLOSE = {"{": "}", "<": ">"}


class _Reader:
    """Recursive descent over the tokens of one text-format message."""

    def __init__(self, text: str, path: str) -> None:
        self.path = path
        self.toks: list[tuple[str, str, int]] = []
        pos, line = 0, 1
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise InputError(path, f"unexpected character {text[pos]!r}", line)
            kind = m.lastgroup or ""
            if kind == "nl":
                line += 1
            elif kind not in ("ws", "comment"):
                self.toks.append((kind, m.group(), line))
            pos = m.end()
        self.toks.append(("eof", "", line))
        self.i = 0

    def error(self, reason: str) -> InputError:
        return InputError(self.path, reason, self.toks[self.i][2])

    def peek(self) -> tuple[str, str, int]:
        return self.toks[self.i]

    def message(self, close: str | None) -> Message:
        fields: Message = {}
        while True:
            kind, tok, line = self.peek()
            if kind == "punct" and tok == close:
                self.i += 1
                return fields
            if kind == "eof":
                if close is None:
                    return fields
                raise self.error(f"missing {close!r} before the end of the file")
            if kind != "ident":
                raise self.error(f"expected a field name, found {tok!r}")
            name = tok
            self.i += 1
            kind, tok, _ = self.peek()
            if tok == ":":
                self.i += 1
                kind, tok, _ = self.peek()
                if kind == "punct" and tok in _CLOSE:
                    self.i += 1
                    value: Scalar | Message = self.message(_CLOSE[tok])
                else:
                    value = self.scalar()
            elif kind == "punct" and tok in _CLOSE:
                self.i += 1
                value = self.message(_CLOSE[tok])
            else:
                shown = repr(tok) if tok else "the end of the file"
                raise self.error(f"expected ':' or '{{' after field {name!r}, found {shown}")
            fields.setdefault(name, []).append(Field(value, line))
            kind, tok, _ = self.peek()
            if kind == "punct" and tok in (",", ";"):
                self.i += 1

    def scalar(self) -> Scalar:
        kind, tok, _ = self.peek()
        if kind == "str":
            parts = []
            while self.peek()[0] == "str":  # adjacent literals concatenate, as in C
                body = self.peek()[1][1:-1]
                parts.append(re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body))
                self.i += 1
            return "".join(parts)
        if kind == "num":
            self.i += 1
            if re.fullmatch(r"[-+]?(0[xX][0-9a-fA-F]+|\d+)", tok):
                return int(tok, 0)
            return float(tok.rstrip("fF"))
        if kind == "ident":
            self.i += 1
            if tok in ("true", "True", "t"):
                return True
            if tok in ("false", "False", "f"):
                return False
            return tok  # an enum value
        if kind == "punct" and tok == "[":
            raise self.error("list values ([...]) are not supported; repeat the field instead")
        raise self.error(f"expected a value, found {repr(tok) if tok else 'the end of the file'}")


def parse_text_proto(text: str, path: str) -> Message:
    """A text-format protobuf message as nested dicts; errors name ``path`` and the line."""
    return _Reader(text, path).message(None)


def _field(msg: Message, name: str, kind: type[_V], path: str) -> Field[_V] | None:
    """The one value of a singular field, checked to be of ``kind`` (dict for a message)."""
    values = msg.get(name, [])
    if not values:
        return None
    if len(values) > 1:
        raise InputError(path, f"{name} is given more than once", values[1].line)
    v = values[0].value
    ok = isinstance(v, dict) if kind is dict else (
        isinstance(v, int) and not isinstance(v, bool) if kind is int else isinstance(v, kind))
    if not ok:
        what = {dict: "a message", int: "an integer", str: "a string"}[kind]
        raise InputError(path, f"{name} must be {what}, not {v!r}", values[0].line)
    return values[0]  # type: ignore[return-value]  # its value is of kind


def _int(msg: Message, name: str, path: str) -> int:
    found = _field(msg, name, int, path)
    return found.value if found is not None else 0
