"""params.yaml's `arena` block, declared once (airfl.params.declare): the one task, channel, power
budget and privacy sweep every scheme of the arena runs on. A light module (stdlib only):
every job validates params.yaml.
"""

from __future__ import annotations

from airfl.params.declare import ByProfile, Declaration, Enum, Int, ListOf, Num, Obj, Ref

PROPERTIES = {
    "arena": Ref(description="the cross-paper arena: the private over-the-air and digital "
                             "schemes of the wings on one task, one channel, one power budget "
                             "and one (eps, delta) per sweep point (figures/arena/).",
                 name="arena", required=True),
}

DEFS = {
    "arena": Obj(description="the arena's common task and sweep", fields={
        "task": Obj(description="the task every scheme trains: data, split, model, local work",
                    required=True, fields={
            "dataset": Enum(description="training and test set", values=("mnist",
                                                                         "fashion_mnist"),
                            required=True),
            "num_devices": ByProfile(description="devices K", of=Int(minimum=2), required=True),
            "partition": Ref(description="the non-i.i.d. split (dirichlet or shards)",
                             name="partition", required=True),
            "model": ByProfile(description="the model trained (quick: softmax, which the "
                                           "lockstep engine batches; paper: the papers' small "
                                           "CNN)",
                               of=Enum(values=("softmax", "cnn_mnist", "fedavg_cnn")),
                               required=True),
            "local_steps": Int(description="local SGD steps per device per round (every scheme)",
                               minimum=1, required=True),
            "batch_size": Int(description="mini-batch size of a local step", minimum=1,
                              required=True),
            "lr": Ref(description="local learning rate (every scheme)", name="positive",
                      required=True),
            "clip_norm": Ref(description="L2 clip C of every upload: the one sensitivity every "
                                         "private scheme is accounted at", name="positive",
                             required=True),
            "scale": ByProfile(description="rounds, trials and evaluation per profile (the same "
                                           "for every scheme)",
                               of=Ref(name="scale"), always=True, required=True)}),
        "radio": Obj(description="the one channel and power budget: devices uniform in a disc, "
                                 "log-distance path loss, Rayleigh block fading, a "
                                 "single-antenna base station (m antennas for the entrants "
                                 "that need them)", required=True, fields={
            "radius_m": Ref(description="cell radius, m", name="positive", required=True),
            "min_radius_m": Num(description="smallest device distance, m", minimum=0,
                                required=True),
            "pl0_db": Num(description="log-distance path loss at 1 m, dB", required=True),
            "exponent": Ref(description="path-loss exponent", name="positive", required=True),
            "bandwidth_hz": Ref(description="bandwidth B, Hz", name="positive", required=True),
            "power_dbm": Num(description="per-device transmit power budget P, dBm (every "
                                         "scheme; the accuracy-vs-eps figure's power)",
                             required=True),
            "snr_sweep_power_dbm": ByProfile(
                description="the per-device power budgets P, dBm, of the accuracy-vs-SNR "
                            "figure (one edge SNR each, every scheme at the privacy block's "
                            "snr_eps; a value equal to power_dbm reuses that point's curves)",
                of=ListOf(items=Num(), min_items=2, unique=True), required=True),
            "n0_dbm_per_hz": Num(description="receiver noise density N0, dBm/Hz", required=True),
            "antennas": ByProfile(description="base-station antennas m of the entrants that "
                                              "need a multi-antenna base station (AirFL-DP's "
                                              "SIMO uplink with zero-forcing over every "
                                              "device: m >= num_devices); the single-antenna "
                                              "entrants do not read it",
                                  of=Int(minimum=1), required=True),
            "truncation_threshold": Ref(description="OTA-FL's truncated channel inversion: a "
                                                    "device transmits iff |h|^2 >= threshold x "
                                                    "Lambda_edge", name="positive",
                                        required=True)}),
        "lapa": Ref(description="the LAPA entrants' allocation settings (its paper gives none: "
                                "the values its own figures run, params.yaml lapa.alloc, which "
                                "a test keeps equal; its uniform DP and ARB do not read "
                                "invert_share)", name="lapa_allocation", required=True),
        "privacy": Obj(description="the privacy targets of the sweep", required=True, fields={
            "delta": Ref(description="delta of every (eps, delta) target", name="dp_delta",
                         required=True),
            "eps": ByProfile(description="the eps targets: one point of the accuracy-vs-eps "
                                         "figure and one leaderboard group each",
                             of=ListOf(items=Ref(name="positive"), min_items=1, unique=True),
                             required=True),
            "snr_eps": ByProfile(description="the one eps target of the accuracy-vs-SNR "
                                             "figure (one of the eps targets)",
                                 of=Ref(name="positive"), required=True)})}),
}

DECLARATION = Declaration(properties=PROPERTIES, defs=DEFS)

AUDIT = Obj(description="the arena's privacy audit of its private entrants (stage `audit`, "
                        "figures/arena/audit_<entrant>): every private curve's mechanism as the "
                        "arena runs it, over its T rounds, in every trial of the profile (each "
                        "trial's placement and design)", fields={
    "draws": ByProfile(description="draws of the T-round statistic per neighbour, audited "
                                   "curve and trial (each draw sums T releases)",
                       of=Int(minimum=100), required=True)})
