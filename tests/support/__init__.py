"""What the tests share beyond conftest.py's MLIR helpers.

``ROOT`` is the repository's root (the checkout, not an installed copy);
``command`` runs the ``stablehlo-layout`` command as a subprocess;
``deep`` and ``equivalence`` build deep programs and run modules on XLA:CPU.
"""

from __future__ import annotations

from pathlib import Path

# tests/support/__init__.py -> tests/support -> tests -> the repository.
ROOT = Path(__file__).resolve().parents[2]
