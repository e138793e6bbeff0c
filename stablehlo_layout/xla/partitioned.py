"""Compiling a partitioned module: a mesh over N compile-only devices, as the sharded oracle does.

A module that JAX lowered for a mesh says so (``mhlo.num_partitions = N``);
XLA partitions it (SPMD) and lays out the per-device module, so the module
layout assignment receives exists only in a compile for N devices.

- XLA:CPU: N host devices.  jax makes them only when
  ``--xla_force_host_platform_device_count=N`` is in ``XLA_FLAGS`` before it
  starts.  Where this process has N CPU devices the compile runs here; else
  in a child process started with that flag
  (``python -m stablehlo_layout.xla.partitioned_child``), which hands the dumps back.
- XLA:GPU: deviceless, topology ``1x1xN`` of the described GPU (one partition,
  one host, N devices).
- XLA:TPU: deviceless, a topology of N chips of the generation
  (``tpu_deviceless.mesh_topology``: ``v5e:2x4`` for 8), in libtpu's child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from stablehlo_layout.model.errors import InputError

# Beyond this many devices a compile-only mesh is refused with one line: the
# child would make that many host devices, and nobody lays out a mesh that large by hand.
MAX_DEVICES = 4096
# The child's side (it compiles through pipeline.py, which imports this module).
CHILD = "stablehlo_layout.xla.partitioned_child"


def partitions(module: Any) -> int:
    """The number of devices a module is partitioned for (``mhlo.num_partitions``; 1 when unsaid)."""
    from jaxlib.mlir import ir

    attrs = module.operation.attributes
    if "mhlo.num_partitions" not in attrs:
        return 1
    return ir.IntegerAttr(attrs["mhlo.num_partitions"]).value


def check_partitions(n: int, path: str) -> None:
    """One line where the mesh is too large to compile for."""
    if n > MAX_DEVICES:
        raise InputError(path, f"the module is partitioned for {n} devices; --as-compiled makes at most "
                               f"{MAX_DEVICES} compile-only devices")


def cpu_devices(n: int) -> list[Any] | None:
    """N XLA:CPU devices of this process, or None where jax started with fewer."""
    import jax

    devices = jax.devices("cpu")
    return list(devices[:n]) if len(devices) >= n else None


def gpu_devices(config_text: str, n: int) -> list[Any]:
    """N deviceless XLA:GPU devices of the described GPU (topology ``1x1xN``)."""
    from jax.experimental import topologies

    topology = topologies.get_topology_desc(platform="cuda", target_config=config_text, topology=f"1x1x{n}")
    devices = list(topology.devices)
    if len(devices) < n:
        raise InputError("stablehlo-layout", f"XLA:GPU's topology 1x1x{n} has {len(devices)} devices, not {n}")
    return devices


def options(client: Any, devices: list[Any], flags: dict[str, Any], params: list[str | None],
            results: list[str | None]) -> Any:
    """The compile options jax.jit uses for a mesh of ``devices``: one replica, a partition per device.

    XLA may choose the sharding of an argument or result the program leaves
    unstated (None in ``params`` / ``results``), as jit lets it; a stated one is kept.
    """
    import numpy as np
    from jax._src import compiler

    assignment = np.array(devices, dtype=object).reshape(1, len(devices))
    opts = compiler.get_compile_options(num_replicas=1, num_partitions=len(devices), device_assignment=assignment,
                                        backend=client)
    build = opts.executable_build_options
    build.allow_spmd_sharding_propagation_to_parameters = [s is None for s in params] or [True]
    build.allow_spmd_sharding_propagation_to_output = [s is None for s in results] or [True]
    for name, value in flags.items():
        setattr(build.debug_options, name, value)
    return opts


def child_env(n: int) -> dict[str, str]:
    """The environment a child starts jax in with N host devices."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")}
    flags = " ".join(f for f in env.get("XLA_FLAGS", "").split()
                     if not f.startswith("--xla_force_host_platform_device_count"))
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()
    return env


def compile_cpu_in_child(bytecode: bytes, n: int, path: str, entry_layouts: str) -> tuple[str, str | None, str | None]:
    """XLA:CPU's dumps (before, after, a late failure) for N host devices, compiled in a child process."""
    spec = json.dumps({"path": path, "entry_layouts": entry_layouts})
    done = subprocess.run([sys.executable, "-m", CHILD, spec], input=bytecode, capture_output=True,
                          env=child_env(n))
    if done.returncode != 0:
        lines = [x.strip() for x in done.stderr.decode("utf-8", "replace").splitlines() if x.strip()]
        raise InputError(path, lines[-1] if lines else f"the compile for {n} devices ended with status "
                                                        f"{done.returncode}")
    answer = json.loads(done.stdout.decode("utf-8"))
    return answer["before"], answer["after"], answer["note"]
