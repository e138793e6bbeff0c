"""XLA:TPU's compiler with no TPU: compile for a named topology, in a child process.

libtpu (the ``xla-tpu`` extra: ``jax[tpu]`` of the installed jax's version,
which pins its libtpu) compiles for a topology that
``jax.experimental.topologies.get_topology_desc(topology_name=..., platform="tpu")``
describes, writing the same pass dumps as on a chip.  Each generation
compiles for a small topology of its own (``TOPOLOGIES``); device 0 is one
chip.

The compile runs in a child process (``python -m stablehlo_layout.xla.tpu_deviceless``):
deviceless libtpu aborts the process (``Check failed``) in some passes long
after layout assignment, and a command must outlive that with the dumps it
wanted.  The child reads the module's bytecode on stdin and the debug options
as JSON in its arguments; its exit status and stderr say how the compile
ended.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from typing import Any

from stablehlo_layout.model.errors import InputError

# A generation -> the topology compiled for (the smallest each generation's
# compiler takes whole; a chip per device).
TOPOLOGIES: dict[str, str] = {
    "v4": "v4:2x2x1",
    "v5e": "v5e:2x2",
    "v5p": "v5p:2x2x1",
    "v6e": "v6e:2x2",
    "tpu7x": "tpu7x:2x2x1",
}

INSTALL_HINT = ("pip install 'stablehlo-layout[xla-tpu]' (jax[tpu] of the installed jax's version, which "
                "pins its libtpu; the tpu-oracle test extra is the same)")

# libtpu warns that it cannot tell which accelerator or workers it runs on;
# any valid values silence it, whatever topology is compiled for.
QUIET_ENV = {"TPU_ACCELERATOR_TYPE": "v5litepod-4", "TPU_WORKER_HOSTNAMES": "localhost"}
# libtpu takes /tmp/libtpu_lockfile so that two processes never drive one
# chip; a deviceless compile drives none, and must not fail because another
# compile (or a user's TPU job) holds the lock.
CHILD_ENV = {**QUIET_ENV, "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:4])


def _satisfies(version: str, spec: str) -> bool:
    """``version`` against a pip specifier of ``==``, ``>=``, ``<`` and ``==x.*`` clauses."""
    for clause in (c.strip() for c in spec.split(",") if c.strip()):
        m = re.match(r"(==|>=|<=|<|>|~=)\s*(\S+)", clause)
        if not m:
            return False
        op, want = m.groups()
        if op == "==" and want.endswith(".*"):
            if not (version + ".").startswith(want[:-1]):
                return False
            continue
        a, b = _version_key(version), _version_key(want)
        ok = {"==": a == b, ">=": a >= b, "<=": a <= b, "<": a < b, ">": a > b, "~=": a >= b}[op]
        if not ok:
            return False
    return True


def libtpu_pin() -> str | None:
    """The libtpu specifier the installed jax's ``tpu`` extra pins, from jax's metadata."""
    import importlib.metadata as md

    for req in md.requires("jax") or []:
        if re.search(r"""extra\s*==\s*["']tpu["']""", req):
            m = re.match(r"\s*libtpu\s*(?:\[[^\]]*\])?\s*([^;]*)", req)
            if m:
                return m.group(1).strip()
    return None


def unavailable() -> str | None:
    """Why XLA:TPU's compiler cannot be used here, or None when it can (nothing is imported)."""
    import importlib.metadata as md
    import importlib.util

    try:
        jax_version = md.version("jax")
    except md.PackageNotFoundError:
        return f"jax is not installed: {INSTALL_HINT}"
    try:
        libtpu_version = md.version("libtpu")
    except md.PackageNotFoundError:
        return f"XLA:TPU's compiler (libtpu) is not installed: {INSTALL_HINT}"
    if importlib.util.find_spec("libtpu") is None:
        return f"libtpu {libtpu_version} is listed as installed but cannot be imported: {INSTALL_HINT}"
    pin = libtpu_pin()
    if pin is None:
        return f"jax {jax_version} names no libtpu in its tpu extra, so which XLA:TPU is its own is unknown"
    if not _satisfies(libtpu_version, pin):
        # Another libtpu is another XLA:TPU: it would answer for the wrong compiler.
        return (f"libtpu {libtpu_version} is not the one jax {jax_version} pins (libtpu{pin}); "
                f"pip install 'jax[tpu]=={jax_version}'")
    return None


def tpu_device(generation: str) -> Any:
    """Device 0 of ``generation``'s deviceless topology (imports jax and libtpu)."""
    for k, v in QUIET_ENV.items():
        os.environ.setdefault(k, v)
    from jax.experimental import topologies

    return topologies.get_topology_desc(topology_name=TOPOLOGIES[generation], platform="tpu").devices[0]


# A mesh of N chips: the slices each generation grows from its smallest
# (``TOPOLOGIES``, one host), one dimension at a time, as TPU slices are named:
# 2x2, 2x4, 4x4, 4x8 ... planar; 2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4 ... in 3-D.
def _next_dimension(rank: int, step: int) -> int:
    if rank == 2:
        return (1, 0)[step % 2]
    return 2 if step == 0 else (2, 1, 0)[(step - 1) % 3]


def mesh_topology(generation: str, n: int) -> str:
    """The smallest deviceless slice of ``generation`` with at least ``n`` chips (a mesh uses its first ``n``)."""
    name, _, shape = TOPOLOGIES[generation].partition(":")
    dims = [int(x) for x in shape.split("x")]
    step = 0
    while math.prod(dims) < n:
        dims[_next_dimension(len(dims), step)] *= 2
        step += 1
    return f"{name}:{'x'.join(map(str, dims))}"


def compile_in_child(bytecode: bytes, generation: str, flags: dict[str, Any], n_params: int, n_results: int,
                     path: str, mesh: tuple[int, list[bool], list[bool]] | None = None) -> None:
    """Compile ``bytecode`` for ``generation`` with debug options ``flags`` in a child process.

    ``mesh``: for a module partitioned for N devices, (N, per argument and per
    result whether the module states its sharding); compiled for N chips of
    ``mesh_topology``.

    Returns when the child compiled; raises RuntimeError with libtpu's own
    message when it failed or died (the dumps written by then are kept by the
    caller).
    """
    why = unavailable()
    if why:
        raise InputError("stablehlo-layout", f"--as-compiled --target xla-tpu needs XLA:TPU's compiler: {why}")
    env = {**os.environ, **CHILD_ENV, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")}
    args = json.dumps({"generation": generation, "flags": flags, "params": n_params, "results": n_results,
                       "mesh": mesh})
    done = subprocess.run([sys.executable, "-m", __name__, args], input=bytecode, capture_output=True, env=env)
    if done.returncode == 0:
        return
    lines = [x.strip() for x in done.stderr.decode("utf-8", "replace").splitlines() if x.strip()]
    check = next((x for x in lines if "Check failed" in x), None)
    message = check or (lines[-1] if lines else f"the compile process ended with status {done.returncode}")
    raise RuntimeError(re.sub(r"^\S+\.cc:\d+\]\s*", "", message))


def _child(argv: list[str]) -> int:
    """The child's side: read bytecode on stdin, compile, exit 0 or print XLA's message and exit 1."""
    spec = json.loads(argv[0])
    from jax._src import compiler
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client as xc
    from jax._src.lib.mlir import ir

    module = ir.Module.parse(sys.stdin.buffer.read(), mlir.make_ir_context())
    if spec.get("mesh"):
        from stablehlo_layout.xla.partitioned import options as mesh_options

        n, stated_params, stated_results = spec["mesh"]
        for k, v in QUIET_ENV.items():
            os.environ.setdefault(k, v)
        from jax.experimental import topologies

        devices: list[Any] = list(topologies.get_topology_desc(topology_name=mesh_topology(spec["generation"], n),
                                                               platform="tpu").devices)[:n]
        device: Any = devices[0]
        options = mesh_options(device.client, devices, spec["flags"], ["stated" if s else None for s in stated_params],
                               ["stated" if s else None for s in stated_results])
    else:
        device = tpu_device(spec["generation"])
        devices = [device]
        options = compiler.get_compile_options(num_replicas=1, num_partitions=1, device_assignment=[device],
                                               backend=device.client)
        build = options.executable_build_options
        build.allow_spmd_sharding_propagation_to_parameters = [True] * max(spec["params"], 1)
        build.allow_spmd_sharding_propagation_to_output = [True] * max(spec["results"], 1)
        for name, value in spec["flags"].items():
            setattr(build.debug_options, name, value)
    try:
        device.client.compile(module, executable_devices=xc.DeviceList(tuple(devices)), compile_options=options)
    except Exception as e:  # XLA's status error: its message is the answer
        lines = [x.strip() for x in str(e).splitlines() if x.strip()]
        print(re.sub(r"^[A-Z_]+: ", "", lines[0] if lines else type(e).__name__), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
