"""Pipeline stages as importable functions; `airfl <stage>` (cli.py) is a thin entry over them.

data -> partition -> design -> train -> privacy -> figure -> claims
"""


from airfl.pipeline.stage_error import StageError

__all__ = ["StageError"]
