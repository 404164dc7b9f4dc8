"""params.yaml's `baselines` block, declared once (airfl.params.declare): the shared baselines figure's
training experiment. A light module (stdlib only): every job validates params.yaml.
"""

from __future__ import annotations

from airfl.params.declare import Declaration, Obj, Ref

PROPERTIES = {
    "baselines": Obj(description="the shared baselines: the generic schemes compared on one "
                                 "training task (figures/baselines/).", required=True, fields={
        "accuracy_vs_rounds": Ref(description="test accuracy against rounds of every "
                                              "generic scheme's curves",
                                  name="training_experiment", required=True)}),
}

DECLARATION = Declaration(properties=PROPERTIES)
