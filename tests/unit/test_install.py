"""A plain (non-editable) ``pip install .`` gives a working command.

The tracked files that make the distribution are copied to a scratch
directory and installed with pip into a fresh virtual environment, so
nothing can come from the source tree: the command must find its modules,
its compiled core (built from ``cpp/`` by the install itself), its ``passes``
package and the trace page's files (package data) where pip put them.
Dependencies (jax, jaxlib, ...) are not reinstalled: the new environment
reads the running one's site-packages through a ``.pth`` line, which adds
that directory without running the ``.pth`` files in it (so the running
environment's editable install stays out of the way).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.support import ROOT

# pip builds and installs the package (or resolves its extras) into a fresh venv: minutes.
pytestmark = pytest.mark.install

SEED = ROOT / "examples" / "pinned_transpose.mlir"


def _tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", *paths], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to know which files the distribution is made of")
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    for rel in _tracked("pyproject.toml", "README.md", "CMakeLists.txt", "cpp", "stablehlo_layout", "passes"):
        dst = src / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dst)
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "running-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # A plain ``pip install .`` (the running environment's pip; the build backend
    # comes from pip's index and cache as for a user); --no-deps: the
    # dependencies are the running environment's.
    r = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--ignore-installed", str(src)],
                       cwd=tmp, capture_output=True, text=True, env=_clean_env())
    assert r.returncode == 0, r.stderr
    return env_dir


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["JAX_PLATFORMS"] = "cpu"
    return env


def _run(env_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(env_dir / "bin" / "stablehlo-layout"), *args], cwd=cwd, capture_output=True,
                          text=True, env=_clean_env())


def test_the_installed_package_is_not_the_source_tree(installed: Path):
    r = subprocess.run([str(installed / "bin" / "python"), "-c",
                        "import stablehlo_layout, stablehlo_layout.passes as p, stablehlo_layout._core as c;"
                        " print(stablehlo_layout.__file__); print(p.__file__); print(c.__file__)"],
                       cwd=installed, capture_output=True, text=True, env=_clean_env(), check=True)
    files = r.stdout.split()
    assert len(files) == 3 and all(Path(f).is_relative_to(installed) for f in files), files
    assert not any(Path(f).is_relative_to(ROOT) for f in files)


def test_the_installed_command_assigns_explains_and_draws(installed: Path, tmp_path: Path):
    r = _run(installed, "assign", str(SEED), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "stablehlo_layout.inserted" in r.stdout and 'mhlo.layout_mode = "{1,0}"' in r.stdout
    r = _run(installed, "explain", "--no-fixes", str(SEED), cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("copy #1: f32[16,4] {1,0} -> {0,1}"), r.stderr
    page = tmp_path / "seed.html"
    r = _run(installed, "trace", "--html", str(page), str(SEED), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    html = page.read_text(encoding="utf-8")
    # The page's files came from the installed package data and were inlined.
    for name in ("page.css", "page.js"):
        text = (ROOT / "stablehlo_layout" / "report" / "trace_page" / name).read_text(encoding="utf-8")
        assert text in html, name
    assert "%JS%" not in html and "%CSS%" not in html


def test_a_bad_input_is_still_one_line(installed: Path, tmp_path: Path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main(\n")
    r = _run(installed, "assign", str(bad), cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith(f"{bad}:"), r.stderr


def test_the_xla_gpu_extra_resolves_to_the_installed_jaxs_own_xla(tmp_path: Path) -> None:
    """pip resolves the xla-gpu extra, beside the installed jax, to jax-cuda12-plugin/-pjrt of jaxlib's version."""
    import importlib.metadata as md
    import json

    jax_version = md.version("jax")
    report = tmp_path / "report.json"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
                        "--report", str(report), "-e", f"{ROOT}[xla-gpu]", f"jax=={jax_version}"],
                       cwd=tmp_path, capture_output=True, text=True, env=_clean_env())
    if r.returncode != 0:
        pytest.skip(f"pip cannot resolve here (no package index?): {r.stderr.strip().splitlines()[-1:]}")
    got = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    jaxlib = got["jaxlib"]
    assert got["jax"] == jax_version
    assert got["jax-cuda12-plugin"] == got["jax-cuda12-pjrt"] == jaxlib, got
    assert not any(name.startswith("nvidia-") for name in got), "deviceless: no CUDA wheels"
