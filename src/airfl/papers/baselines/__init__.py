"""Shared baselines figure: the first figure that runs through every stage of the pipeline.

Wing contents: experiments.py (the accuracy-vs-rounds experiment, its figure and claims);
params.schema.yaml (the `baselines` block of params.yaml)."""

from airfl.core.wing import Wing

WING = Wing(name="baselines", package=__name__, catalogue=f"{__name__}.experiments",
            params=f"{__name__}.params")
