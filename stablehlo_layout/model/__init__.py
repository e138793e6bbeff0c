"""The vocabulary every stage shares: layouts, the program graph, per-op rules,
constraints and their provenance, entry-layout modes, and the errors a user sees.

Nothing here touches MLIR, XLA or the compiled core."""
