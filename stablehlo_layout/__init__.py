"""stablehlo-layout: XLA's layout assignment for StableHLO, with the reasons kept.

The heavy pieces import MLIR bindings; import them from their modules
(``stablehlo_layout.frontends.api``, ``stablehlo_layout.passes``) so that
``import stablehlo_layout`` stays cheap.
"""

__version__ = "0.1.0"
