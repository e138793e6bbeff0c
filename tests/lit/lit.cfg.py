# lit configuration: IR in, IR out, checked with PyPI's Python FileCheck.
import os
import shutil
import sys

import lit.formats

config.name = "stablehlo-layout"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")
config.excludes = ["Inputs", "Output", "lit.cfg.py"]

bindir = os.path.dirname(sys.executable)
search = bindir + os.pathsep + os.environ.get("PATH", "")
# PyPI ships FileCheck as the lower-case `filecheck`.
filecheck = shutil.which("filecheck", path=search)
tool = shutil.which("stablehlo-layout", path=search)
if filecheck is None or tool is None:
    lit_config.fatal("filecheck and stablehlo-layout must be installed: pip install -e '.[test]'")
config.substitutions.append(("FileCheck", filecheck))
config.substitutions.append(("stablehlo-layout", tool))
config.substitutions.append(("%python", sys.executable))
config.environment["PATH"] = search
for var in ("HOME", "TMPDIR", "JAX_PLATFORMS", "XLA_FLAGS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.environment["JAX_PLATFORMS"] = "cpu"
