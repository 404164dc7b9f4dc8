"""Shared set-up of a training experiment: data, partition, geometry and channel statistics,
and the one call that builds a trial's set-up (`trial_setup`) for the train, tune and calibrate
stages alike.

Partition: the experiment's one, or each trial's own (`partition_per`: pipeline.partitioning).
Channel: the block's `channel.model` names the builder of the trial's statistics
(`CHANNEL_MODELS`: `geometry`, `rayleigh_mean_gain`). Placement (geometry): one per trial (seeded
by (seed, experiment, trial, 'placement')), unless `placement: quantile` (deterministic
equal-area radii).
Inputs: pixels x/255, or (x/255 - mean)/std per channel when the experiment block sets
`input_normalization: {mean, std}` (DP as a perk: the authors' (x/255 - 0.5)/0.5); the
same map for the devices' data, the training-loss subset and the test set.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from airfl.pipeline import paths
from airfl.pipeline.partitioning import partition_setting, partition_trials
from airfl.channel.geometry import quantile_radii, uniform_disc
from airfl.channel.pathloss import dbm_to_watt, free_space_db, gain_from_db, log_distance_db
from airfl.params.config import ConfigError
from airfl.core.engine import ClientData
from airfl.core.trial_setup import LocalWork, Schedule, ServerStep, TrialSetup
from airfl.core.scheme import ChannelStatistics
from airfl.data import dataset_info, load_dataset, to_float_tensor
from airfl.data.partition import Partition, load_trial_partition
from airfl.data.partition_spec import partition_stream
from airfl.core.experiments import Experiment
from airfl.runtime.io import read_json
from airfl.models.flat import FlatModel, build_model, check_engine
from airfl.models.precision import apply_precision
from airfl.runtime.rng import numpy_generator, torch_generator


def path_gain_db(distances: torch.Tensor, pathloss: dict[str, Any]) -> torch.Tensor:
    """Path loss in dB of the configured model."""
    if pathloss["model"] == "log_distance":
        return log_distance_db(distances, pl0_db=pathloss["pl0_db"], exponent=pathloss["exponent"])
    return free_space_db(distances, carrier_hz=pathloss["carrier_hz"])


def radio_units(channel: dict[str, Any], curve: dict[str, Any] | None = None
                ) -> tuple[float | None, float | None]:
    """(E_s, N0) in J and W/Hz when the channel block is physical: E_s = P / B, scaled by the SNR
    offset (a curve's own `snr_offset_db` overrides the channel's)."""
    if "power_dbm" not in channel:
        return None, None
    offset = (curve or {}).get("snr_offset_db", channel.get("snr_offset_db", 0.0))
    es = float(dbm_to_watt(channel["power_dbm"])) / channel["bandwidth_hz"] * 10 ** (offset / 10)
    return es, float(dbm_to_watt(channel["n0_dbm_per_hz"]))


def geometry_statistics(params: dict[str, Any], block: dict[str, Any], experiment_id: str,
                        trial: int, curve: dict[str, Any] | None = None) -> ChannelStatistics:
    """`channel.model: geometry`: devices in a disc of `radius_m` (uniform per trial from the
    trial's `placement` stream, or deterministic equal-area `quantile` radii),
    mean gains from the block's path-loss model, the cell edge as the SNR reference, and the
    physical radio units when the block gives a transmit power."""
    channel, n = block["channel"], block["num_devices"]
    if channel["placement"] == "quantile":
        distances = quantile_radii(n, radius=channel["radius_m"], min_radius=channel["min_radius_m"])
    else:
        generator = torch_generator(params["seed"], experiment_id, "trial", trial, "placement")
        distances = uniform_disc(n, radius=channel["radius_m"], generator=generator,
                                 min_radius=channel["min_radius_m"])
    gain = gain_from_db(path_gain_db(distances, channel["pathloss"]))
    edge = gain_from_db(path_gain_db(torch.tensor([float(channel["radius_m"])], dtype=torch.float64),
                                     channel["pathloss"]))
    es, n0 = radio_units(channel, curve)
    return ChannelStatistics(path_gain=gain, reference_gain=float(edge[0]),
                             bandwidth_hz=float(channel["bandwidth_hz"]), distances_m=distances,
                             energy_per_symbol=es, noise_psd=n0)


def rayleigh_mean_gain_statistics(params: dict[str, Any], block: dict[str, Any],
                                  experiment_id: str, trial: int,
                                  curve: dict[str, Any] | None = None) -> ChannelStatistics:
    """`channel.model: rayleigh_mean_gain`: i.i.d. Rayleigh with E|h|^2 = `mean_gain` for every
    device and no layout (papers that give the channel distribution, not a geometry: CDPB; the
    wings whose schemes draw their own radio, DP as a perk, LAPA, OTA-FD, state it with
    mean_gain 1 for the round loop's |h|^2 draw)."""
    channel, n = block["channel"], block["num_devices"]
    gain = torch.full((n,), float(channel["mean_gain"]), dtype=torch.float64)
    return ChannelStatistics(path_gain=gain, reference_gain=float(channel["mean_gain"]),
                             bandwidth_hz=float(channel.get("bandwidth_hz", 1.0e6)),
                             distances_m=torch.zeros(n, dtype=torch.float64))


# channel.model -> the builder of a trial's statistical CSI (the model is stated, not
# guessed from which keys the block happens to have)
CHANNEL_MODELS: dict[str, Callable[..., ChannelStatistics]] = {
    "geometry": geometry_statistics,
    "rayleigh_mean_gain": rayleigh_mean_gain_statistics,
}


def channel_statistics(params: dict[str, Any], block: dict[str, Any], experiment_id: str,
                       trial: int, curve: dict[str, Any] | None = None,
                       where: str = "channel") -> ChannelStatistics:
    """Device distances and mean channel gains of one trial (statistical CSI for designs), built
    by the block's `channel.model`, checked first (`check_channel_model`, with `where`)."""
    check_channel_model(block, where)
    return CHANNEL_MODELS[block["channel"]["model"]](params, block, experiment_id, trial, curve)


def check_channel_model(block: dict[str, Any], where: str = "channel") -> None:
    """Stop unless the block's `channel.model` is one of CHANNEL_MODELS; `where` is the dotted
    key of the channel block in the message. A wing's composed block is not checked by the
    params schema, so a stage checks it here, once, before it builds any trial."""
    model = block["channel"].get("model")
    if model not in CHANNEL_MODELS:
        raise ConfigError(f"{where}.model: {model!r} is not a channel model; allowed: "
                          + ", ".join(CHANNEL_MODELS))


def partition_generator(params: dict[str, Any], experiment_id: str, trial: int | None = None
                        ) -> np.random.Generator:
    """The stream a partition is drawn from: (seed, experiment, 'partition') for the
    experiment's one partition, (seed, experiment, 'trial', trial, 'partition') for a trial's."""
    return partition_stream(params["seed"], experiment_id, trial)


@functools.lru_cache(maxsize=4)
def dataset_split(dataset: str, root: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """A split's (x, y), read (gunzip + md5) once per process and kept read-only: the tune stage
    runs every candidate step size through `run_trials`, which otherwise re-read MNIST (~1 s)
    for each of them."""
    x, y = load_dataset(dataset, root, split)
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


def load_partition(experiment_id: str, block: dict[str, Any], trial: int | None) -> Partition:
    """The partition trial `trial` trains on: the trial's own (`partition_per: trial`) or the
    experiment's one (every trial's, also None's); a file of the other kind stops (the
    partition stage writes it anew)."""
    path = paths.partition(experiment_id)
    try:
        if partition_setting(block) == "trial":
            if trial is None:
                raise ValueError(f"{path} holds one partition per trial: name the trial")
            return load_trial_partition(path, trial)
        return Partition.from_npz(path)
    except ValueError as error:
        raise ConfigError(f"{error}: the block says partition_per {partition_setting(block)!r}; "
                          f"run the partition stage of {experiment_id} again") from error


def input_tensor(x: np.ndarray, block: dict[str, Any]) -> torch.Tensor:
    """uint8 images as the model's input: x/255, standardised per channel when the block has
    `input_normalization: {mean, std}` (absent or null: x/255, every experiment before it)."""
    norm = block.get("input_normalization")
    if norm is None:
        return to_float_tensor(x, block["dataset"])
    try:
        return to_float_tensor(x, block["dataset"], mean=norm["mean"], std=norm["std"])
    except ValueError as error:
        raise ConfigError(f"input_normalization: {error}") from error


def client_data(params: dict[str, Any], block: dict[str, Any], partition: Partition,
                device: torch.device) -> ClientData:
    """All devices' training data as one tensor plus CSR offsets into it.

    Only the samples some device holds are converted (Biased FL uses 1,000 of 60,000); they keep
    their dataset order, so every index drawn into them picks the same sample as before."""
    x, y = dataset_split(block["dataset"], str(params["data"]["root"]), "train")
    sizes = torch.tensor([len(idx) for idx in partition.indices], dtype=torch.long)
    offsets = torch.zeros(len(sizes) + 1, dtype=torch.long)
    offsets[1:] = torch.cumsum(sizes, 0)
    held, index = np.unique(np.concatenate(partition.indices), return_inverse=True)
    index = torch.from_numpy(index.reshape(-1).astype(np.int64))
    return ClientData(input_tensor(x[held], block).to(device),
                      torch.from_numpy(y[held]).to(device), index.to(device), offsets.to(device),
                      sizes.to(device))


def test_data(params: dict[str, Any], block: dict[str, Any], device: torch.device):
    x, y = dataset_split(block["dataset"], str(params["data"]["root"]), "test")
    limit = block["scale"]["test_subset"]
    if limit is not None:
        x, y = x[:limit], y[:limit]
    x, y = np.array(x), np.array(y)                      # writable copies of the cached split
    return input_tensor(x, block).to(device), torch.from_numpy(y).to(device)


def train_eval_data(params: dict[str, Any], block: dict[str, Any], data: ClientData,
                    experiment_id: str, trial: int | None = None):
    """A fixed, seeded subset of the devices' training samples for the training loss: one per
    experiment, or with `trial` (a partition per trial) one per trial, from the trial's own
    stream."""
    keys = ("train_eval",) if trial is None else ("trial", trial, "train_eval")
    rng = numpy_generator(params["seed"], experiment_id, *keys)
    pool = data.client_index.cpu().numpy()
    size = min(block["scale"]["train_eval_subset"], pool.size)
    chosen = torch.from_numpy(np.sort(rng.choice(pool, size=size, replace=False))).to(data.x.device)
    return data.x[chosen], data.y[chosen]


def block_model(block: dict[str, Any], device: torch.device | None = None,
                where: str = "model") -> FlatModel:
    """The experiment's model with its engine and `precision` (fp32 when the block has none).
    With `device`, an engine not offered there stops too (models.check_engine: vmap for the
    CNNs on CPU), and the process's arithmetic is set for the precision there
    (models.apply_precision: exact fp32 on CUDA means TF32 off; tf32 is refused on CPU);
    `where` is the dotted key of the block's model in the messages."""
    info = dataset_info(block["dataset"])
    spec = block["model"]
    try:
        model = build_model(spec["name"], info.image_shape, info.num_classes, spec["l2"],
                            spec["engine"], spec.get("precision", "fp32"))
    except ValueError as error:
        raise ConfigError(f"{where}: {error}") from error
    if device is not None:
        try:
            check_engine(model, device)
        except ValueError as error:
            raise ConfigError(f"{where}.engine: {error}") from error
        try:
            apply_precision(spec.get("precision", "fp32"), device)
        except ValueError as error:
            raise ConfigError(f"{where}.precision: {error}") from error
    return model


def image_shape(dataset: str) -> tuple[int, int, int]:
    return dataset_info(dataset).image_shape


def torch_device(params: dict[str, Any]) -> torch.device:
    """params.yaml's `device` (the schema's default: cpu); `auto` takes CUDA when present."""
    wanted = params["device"]
    if wanted == "auto":
        wanted = "cuda" if torch.cuda.is_available() else "cpu"
    if wanted == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("params.yaml device: cuda, but torch finds no CUDA device; use cpu or auto")
    return torch.device(wanted)


Samples = tuple[torch.Tensor, torch.Tensor]     # inputs and labels of an evaluation set


@dataclass(frozen=True)
class CurveInputs:
    """What every trial of a curve shares: the model, the evaluation set and the paper's
    reference (empty without one), and the devices' data with the training-loss subset (None
    where the runs measure no training metric: `Experiment.measures_training`): the
    experiment's one partition's, or, with `per_trial` (`partition_per: trial`), each trial's
    own, built on first use (`trial_data`)."""

    model: FlatModel
    data: ClientData | None
    test: tuple[torch.Tensor, torch.Tensor]
    train_eval: tuple[torch.Tensor, torch.Tensor] | None
    reference: dict[str, Any]
    per_trial: Callable[[int], tuple[ClientData, Samples | None]] | None = None

    def trial_data(self, trial: int) -> tuple[ClientData, Samples | None]:
        """(devices' data, training-loss subset or None) of one trial."""
        if self.per_trial is None:
            return self.data, self.train_eval
        return self.per_trial(trial)


def curve_inputs(params: dict[str, Any], experiment: Experiment, block: dict[str, Any],
                 evaluate: bool = True, training_metrics: bool = True) -> CurveInputs:
    """Load the data and build the model once per curve (with a partition per trial, each
    trial's data once, when a trial first asks); `evaluate=False` skips the evaluation sets (a
    calibration round evaluates nothing); `training_metrics=False` skips the training subset
    (`train_eval` None: its draw and its evaluation; its stream is its own, keyed by name, so
    no other draw moves)."""
    device = torch_device(params)
    model = block_model(block, device, f"{experiment.config_key}.model")
    test = test_data(params, block, device) if evaluate else None
    reference = read_json(paths.reference(experiment.reference.name, "json")) \
        if experiment.reference else {}

    def devices_data(trial: int | None):
        data = client_data(params, block, load_partition(experiment.id, block, trial),
                           device)
        if not evaluate:
            return data, (data.x[:0], data.y[:0])
        return data, train_eval_data(params, block, data, experiment.id, trial) \
            if training_metrics else None

    if partition_trials(block) is None:
        data, train_eval = devices_data(None)
        return CurveInputs(model, data, test if evaluate else (data.x[:0], data.y[:0]),
                           train_eval, reference)
    built: dict[int, tuple[ClientData, Samples | None]] = {}

    def per_trial(trial: int):
        if trial not in built:
            built[trial] = devices_data(trial)
        return built[trial]

    if test is None:                         # no evaluation: empty sets of the inputs' shape
        first, _ = per_trial(0)
        test = (first.x[:0], first.y[:0])
    return CurveInputs(model, None, test, None, reference, per_trial)


NEVER = 10 ** 9                 # final_only: no evaluation before the last round


def trial_setup(params: dict[str, Any], experiment: Experiment, block: dict[str, Any],
                shared: CurveInputs, trial: int, *, server_lr: float,
                statistics: ChannelStatistics, final_only: bool = False,
                eval_last: int = 0, rounds: int | None = None,
                objective_clients: tuple[int, ...] | None = None) -> TrialSetup:
    """One trial's set-up from the experiment's resolved block, in one call: its local work
    (`training`: steps or epochs, the upload), its server step (`server_lr` and the reference's
    projection radius, Biased FL eq. 3), its schedule (`scale`: rounds, horizon, evaluation).
    `eval_last`: also evaluate that many rounds before the last (`TrialSetup.eval_last`).
    `rounds` overrides the block's (a calibration round is round 1 only); `objective_clients`:
    also log the objective over these clients (`objective_trained`, step-size selection)."""
    training, scale = block["training"], block["scale"]
    local = LocalWork(training["local_steps"], training["batch_size"], training["lr"],
                      epochs=training.get("local_epochs"),
                      upload=training.get("upload", "delta"),
                      full_batch=training.get("full_batch", False))
    server = ServerStep(server_lr, projection_radius=shared.reference.get("projection_radius"))
    schedule = Schedule(horizon_s=scale.get("horizon_s"),
                        eval_every_s=None if final_only else scale.get("eval_every_s"))
    data, train_eval = shared.trial_data(trial)
    return TrialSetup(experiment.id, params["seed"], trial, shared.model, data, shared.test,
                      train_eval, statistics, rounds or scale["rounds"],
                      NEVER if final_only else scale["eval_every"], local, server, schedule,
                      track_objective=bool(shared.reference),
                      objective_clients=objective_clients if shared.reference else None,
                      eval_last=eval_last)
