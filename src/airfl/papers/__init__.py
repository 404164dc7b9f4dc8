"""The wings: one package per paper (plus the shared baselines figure). Each offers a `WING`
through the entry point group `airfl.wings` (pyproject.toml); the pipeline's registry finds them
there, as it finds a user's own installed wing.

Wings may import the core; the core never imports a wing; wings never import each other
(import-linter contracts in pyproject.toml).
"""
