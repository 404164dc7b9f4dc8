"""Pipeline stages as importable functions; `airfl <stage>` (cli.py) is a thin entry over them.

data -> partition -> design -> train -> privacy -> figure -> claims
"""


class StageError(RuntimeError):
    """A stage cannot make its outputs; the message says what is wrong and what to do. The CLI
    prints it without a traceback and exits 1."""
