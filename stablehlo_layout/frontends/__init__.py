"""The ways in: the Python API (``api.py``), the ``stablehlo-layout`` command
(``cli.py``) and JAX functions (``jax.py``)."""
