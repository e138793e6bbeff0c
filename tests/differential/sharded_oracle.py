"""Compile sharded programs with XLA on 8 devices and keep the per-device module's layout dumps.

    python -m tests.differential.sharded_oracle --backend cpu|gpu|tpu --seed S --indices 0,1,2 --cache DIR

Run as a child process by ``sharded_run.py`` (one per backend and batch): the
backend's 8 devices must be set up before jax starts.

- ``cpu``: XLA:CPU with ``--xla_force_host_platform_device_count=8`` in ``XLA_FLAGS``;
- ``gpu``: XLA:GPU deviceless, ``get_topology_desc(platform="cuda", target_config=<h100>,
  topology="1x1x8")`` (one partition, one host, 8 devices);
- ``tpu``: XLA:TPU deviceless through libtpu, topology ``v5e:2x4`` (8 chips).

XLA partitions the program (SPMD) and lays out the per-device module: its
``before_layout-assignment`` dump is our input, its ``after`` the answer.
Each program's dumps go to ``DIR/<index>/before.txt`` / ``after.txt`` with a
``meta.json`` (status, skip reason, program) as ``oracle.py`` writes them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

DEVICES = 8
GPU = "h100"
TPU_TOPOLOGY = "v5e:2x4"
BACKENDS = ("cpu", "gpu", "tpu")


def child_env(backend: str) -> dict[str, str]:
    """The environment the child starts jax in."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    if backend == "cpu":
        flags = env.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={DEVICES}".strip()
    if backend == "tpu":
        from .tpu_oracle import QUIET_ENV, SHARED_ENV

        env.update({**QUIET_ENV, **SHARED_ENV})
    return env


def devices(backend: str) -> list[Any]:
    """The 8 devices a program is compiled for."""
    import jax

    if backend == "cpu":
        ds = jax.devices("cpu")
        if len(ds) < DEVICES:
            raise RuntimeError(f"XLA:CPU has {len(ds)} devices, not {DEVICES}: XLA_FLAGS was set after jax started")
        return ds[:DEVICES]
    from jax.experimental import topologies

    if backend == "gpu":
        from .gpu_oracle import config_path, oracle_available

        ok, why = oracle_available()
        if not ok:
            raise RuntimeError(why)
        with open(config_path(GPU)) as f:
            topo = topologies.get_topology_desc(platform="cuda", target_config=f.read(), topology=f"1x1x{DEVICES}")
        return list(topo.devices)
    from .tpu_oracle import oracle_available as tpu_available

    ok, why = tpu_available()
    if not ok:
        raise RuntimeError(why)
    topo = topologies.get_topology_desc(topology_name=TPU_TOPOLOGY, platform="tpu")
    return list(topo.devices)


def compile_one(seed: int, index: int, devs: list[Any], out_dir: str) -> None:
    from stablehlo_layout.xla.dumps import run_to_layout_assignment

    from .oracle import OracleResult, _short, _skip_reason, finish
    from .sharded_programs import generate

    os.makedirs(out_dir, exist_ok=True)
    prog = generate(seed, index)
    res = OracleResult("skipped", program=prog.describe())
    start = time.perf_counter()
    try:
        try:
            lowered = prog.lower(devs)
        except Exception as e:
            res.reason = f"lowering refused: {_short(e)[:160]}"
            return
        dumps = run_to_layout_assignment(lambda flags: lowered.compile(compiler_options=flags))
        if dumps.failure is not None:
            res.jax_error = _short(dumps.failure)
            res.reason = _skip_reason(dumps.failure)
        if dumps.before is None or dumps.after is None:
            res.reason = f"no dumps ({res.reason})" if res.jax_error else "no layout-assignment dumps"
            return
        res.before, res.after = os.path.join(out_dir, "before.txt"), os.path.join(out_dir, "after.txt")
        with open(res.before, "w") as f:
            f.write(dumps.before)
        with open(res.after, "w") as f:
            f.write(dumps.after)
        res.status, res.reason = "ok", ""
    finally:
        # finish() removes a dump folder: ours is already gone, so it gets a name that is not there.
        finish(res, start, os.path.join(out_dir, ".no-dump-folder"), out_dir)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=BACKENDS, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--indices", required=True, help="comma-separated program indices")
    ap.add_argument("--cache", required=True, help="the folder of this backend and seed")
    a = ap.parse_args(argv)
    try:
        devs = devices(a.backend)
    except Exception as e:
        print(f"sharded_oracle: no {DEVICES} {a.backend} devices: {type(e).__name__}: {str(e).splitlines()[0][:200]}",
              file=sys.stderr)
        return 2
    for i in (int(x) for x in a.indices.split(",")):
        compile_one(a.seed, i, devs, os.path.join(a.cache, f"{i:04d}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
