"""The error a stage stops with (`airfl.pipeline.stages.StageError`), in a module of its own so
that the pipeline's modules that stages share (e.g. `curve_job`) raise it without importing the
stages."""


class StageError(RuntimeError):
    """A stage cannot make its outputs; the message says what is wrong and what to do. The CLI
    prints it without a traceback and exits 1."""
