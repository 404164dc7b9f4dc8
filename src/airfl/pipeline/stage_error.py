"""The errors a stage stops with (`airfl.pipeline.stages.StageError`), in a module of its own so
that the pipeline's modules that stages share (e.g. `curve_job`) raise it without importing the
stages."""


class StageError(RuntimeError):
    """A stage cannot make its outputs; the message says what is wrong and what to do. The CLI
    prints it without a traceback and exits 1."""


class OverBound(RuntimeError):
    """A job's estimate, found once its work was built (an audit's points,
    `cost_guard.BUILT_FIRST`), exceeds `confirm_cost_above_core_hours`: the message is
    `cost_guard.over_bound`'s (the estimate and how to go on); the job has written nothing. The
    CLI prints it and exits 2, as for a job costed before it starts."""
