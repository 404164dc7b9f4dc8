"""The arena: the private over-the-air and digital schemes of the installed wings compared on one
task, one channel, one power budget and one (eps, delta) per sweep point, with common random
numbers, one privacy accountant and one leaderboard.

A layer above the paper wings (it names their schemes; no wing imports it). Modules:
params.py (params.yaml `arena`), task.py (the common task as a run block), entrants.py (who runs,
with what parameters; who is absent and why), leaderboard.py (the ranking table),
experiments.py (the experiment, its panels and claims), audit.py (the privacy audit of every
private curve, per entrant).
"""

from airfl.core.wing import Wing

WING = Wing(name="arena", package=__name__, catalogue=f"{__name__}.experiments",
            params=f"{__name__}.params",
            audits={"dp_fedavg": f"{__name__}.audit:dp_fedavg",
                    "airfl_dp": f"{__name__}.audit:airfl_dp",
                    "lapa_uniform_user": f"{__name__}.audit:lapa_uniform_user"},
            audit_works={"dp_fedavg": f"{__name__}.audit:dp_fedavg_work",
                         "airfl_dp": f"{__name__}.audit:airfl_dp_work",
                         "lapa_uniform_user": f"{__name__}.audit:lapa_uniform_user_work"},
            # its design reads the arena partition's sizes and label histograms
            audit_partitions={"lapa_uniform_user": ("arena/accuracy_vs_eps",)})
