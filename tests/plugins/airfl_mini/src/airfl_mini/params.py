"""The wing's parameters, declared once with airfl's typed nodes (airfl.params.declare): its params.yaml
block, and the trimmed mean's parameters wherever a curve uses it."""

from airfl.params.declare import Declaration, Num, Obj, Ref

DECLARATION = Declaration(
    properties={"mini": Obj(required=True, fields={
        "trimmed_vs_fedavg": Ref(name="training_experiment", required=True)})},
    curve_schemes={"trimmed_mean": Obj(fields={
        "trim": Num(description="fraction of the largest and of the smallest values dropped per "
                                "coordinate", minimum=0, lt=0.5, required=True)})})
