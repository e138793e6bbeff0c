"""``python -m stablehlo_layout``: the stablehlo-layout command."""

from stablehlo_layout.frontends.cli import run

run()
