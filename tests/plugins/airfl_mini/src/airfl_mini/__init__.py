"""A mini-paper for airfl: coordinate-wise trimmed-mean FedAvg against plain FedAvg.

The wing: its name is its params.yaml block (`mini:`), its figures folder and its Snakemake
target (`snakemake mini`); `params` names the module declaring its parameters (params.py);
`schemes` offers the trimmed mean to every training experiment, and `labels` names it in
their legends (where a figure does not name it itself; it then takes a free colour and marker).
"""

from airfl.core.wing import Wing

WING = Wing(name="mini", package=__name__, catalogue=f"{__name__}.experiments",
            params=f"{__name__}.params",
            schemes={"trimmed_mean": f"{__name__}.schemes:TrimmedMean"},
            labels={"trimmed_mean": "Trimmed mean"})
