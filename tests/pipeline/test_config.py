"""params.yaml validation: the committed file is valid; wrong keys, types and values are named."""

from __future__ import annotations

import copy

import pytest
import yaml

from airfl.params.config import ConfigError, experiment_params
from airfl.pipeline.params import (load_params, override_args, params_schema,
                                   schema_yaml, validate_params)


@pytest.fixture()
def params(repo_root):
    return yaml.safe_load((repo_root / "params.yaml").read_text())


def test_committed_params_are_valid_and_defaults_filled(params):
    validated = validate_params(params)
    assert validated["threads"] == 1 and validated["data"]["mirror"] is None
    block = experiment_params(validated, "baselines.accuracy_vs_rounds")
    assert block["scale"]["trials"] >= 3 and block["model"]["engine"] == "auto"


def test_a_channel_block_without_a_model_is_geometry(params):
    """A user's block written before `channel.model` existed (the plug-in test's mini-paper)
    validates, and the schema fills in `geometry`: what the block's keys meant before."""
    params["baselines"]["accuracy_vs_rounds"]["channel"].pop("model")
    block = experiment_params(validate_params(params), "baselines.accuracy_vs_rounds")
    assert block["channel"]["model"] == "geometry"


def test_paper_profile_has_ten_trials(params):
    params["profile"] = "paper"
    block = experiment_params(validate_params(params), "baselines.accuracy_vs_rounds")
    assert block["scale"]["trials"] >= 10


@pytest.mark.parametrize("mutate, expected", [
    (lambda p: p.update(bogus=1), "<top level>: Additional properties are not allowed ('bogus'"),
    (lambda p: p.update(profile="fast"), "profile: 'fast' is not one of ['quick', 'paper']"),
    (lambda p: p["baselines"]["accuracy_vs_rounds"].update(num_devices="20"),
     "baselines.accuracy_vs_rounds.num_devices: '20' is not of type 'integer'"),
    (lambda p: p["baselines"]["accuracy_vs_rounds"]["curves"]["ota_low_snr"].update(snr_d=3),
     "Allowed keys: clip_norm, scheme, snr_db, truncation_threshold"),
    (lambda p: p["baselines"]["accuracy_vs_rounds"]["curves"]["fedavg_dp"].update(sampling_rate=1.5),
     "curves.fedavg_dp.sampling_rate: 1.5 is greater than the maximum of 1"),
    (lambda p: p["baselines"]["accuracy_vs_rounds"]["curves"]["ideal"].update(scheme="magic"),
     "Allowed values: digital_quantized, gaussian_dp, ideal_fedavg"),
    (lambda p: p["baselines"]["accuracy_vs_rounds"]["partition"].update(kind="random"),
     "partition.kind: 'random' is not one of"),
    # the channel model is stated (and checked), not guessed from the block's keys
    (lambda p: p["baselines"]["accuracy_vs_rounds"]["channel"].update(model="rician"),
     "baselines.accuracy_vs_rounds.channel.model: 'rician' is not one of ['geometry', "
     "'rayleigh_mean_gain']"),
    (lambda p: p["baselines"]["accuracy_vs_rounds"]["channel"].update(model="rayleigh_mean_gain"),
     "baselines.accuracy_vs_rounds.channel: 'mean_gain' is a required property"),
    (lambda p: p["baselines"]["accuracy_vs_rounds"]["channel"].pop("radius_m"),
     "baselines.accuracy_vs_rounds.channel: 'radius_m' is a required property"),
])
def test_bad_values_are_named(params, mutate, expected):
    mutate(params)
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    assert expected in str(info.value)


# per-profile values of CDPB and DP as a perk were `string | number | null`
# (`lr: fast` crashed train, `lr: -1` trained to chance, `num_devices: 0` failed late).
@pytest.mark.parametrize("block, key, value, expected", [
    ("cdpb.fig4", "lr", "fast", "cdpb.fig4.lr: 'fast' is not of type 'number'"),
    ("cdpb.fig4", "lr", -1, "cdpb.fig4.lr: -1 is less than or equal to the minimum of 0"),
    ("cdpb.fig8", "local_steps", {"quick": 0, "paper": 10},
     "cdpb.fig8.local_steps.quick: 0 is less than the minimum of 1"),
    ("cdpb.fig8", "batch_size", {"quick": 2}, "cdpb.fig8.batch_size: 'paper' is a required"),
    ("cdpb.fig4", "model", "resnet", "Allowed values: softmax, mlp32, cnn_mnist"),
    ("dp_perk.training", "num_devices", 0,
     "dp_perk.training.num_devices: 0 is less than the minimum of 1"),
    ("dp_perk.training", "lr", {"quick": -1.0, "paper": 0.005},
     "dp_perk.training.lr.quick: -1.0 is less than or equal to the minimum of 0"),
    ("dp_perk.training", "fig5_eps_tilde", [0.1, -0.2],
     "dp_perk.training.fig5_eps_tilde.1: -0.2 is less than or equal to the minimum of 0"),
])
def test_per_profile_values_are_typed(params, block, key, value, expected):
    node = params
    for part in block.split("."):
        node = node[part]
    node[key] = value
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    assert expected in str(info.value)


def test_generic_curves_take_exactly_the_kinds_wings_declare_for_them():
    """$defs.curve (a curve of any training experiment) offers every kind a wing declares under
    `curve_schemes`, each offered by the wing whose `schemes` can build it; nothing else."""
    from airfl.pipeline.registry import scheme_wings, wings

    declared = {kind: wing.name for wing in wings()
                for kind in (wing.schema().get("curve_schemes") or {})}
    generic = params_schema()["$defs"]["curve"]["properties"]["scheme"]["enum"]
    assert sorted(generic) == sorted(declared)
    for kind, wing in declared.items():
        assert scheme_wings()[kind].name == wing


def test_committed_schema_is_the_assembled_one(repo_root):
    """workflow/schemas/params.schema.yaml (what Snakemake validates with) is generated from the
    core's and the wings' declarations; regenerate it with `airfl schema`."""
    import difflib

    committed = (repo_root / "workflow" / "schemas" / "params.schema.yaml").read_text()
    assembled = schema_yaml()
    assert committed == assembled, "".join(difflib.unified_diff(
        committed.splitlines(True), assembled.splitlines(True), "committed", "assembled"))


def test_schema_check_prints_a_diff_naming_the_drifted_key(tmp_path, monkeypatch, capsys):
    """`airfl schema --check` fails on a committed copy that drifted from the declarations and
    prints a unified diff whose lines name the drifted key."""
    import airfl.pipeline.params as module

    drifted = tmp_path / "params.schema.yaml"
    text = schema_yaml()
    assert "      train_eval_subset:\n" in text
    drifted.write_text(text.replace("      train_eval_subset:\n", "      train_eval_subsets:\n", 1))
    monkeypatch.setattr(module, "GENERATED", drifted)
    assert module.write_schema(check=True) == 1
    diff = capsys.readouterr().err
    assert "airfl schema" in diff and "--- " in diff and "+++ " in diff
    assert "-      train_eval_subsets:" in diff and "+      train_eval_subset:" in diff
    drifted.write_text(text)
    assert module.write_schema(check=True) == 0


def test_a_declared_core_default_reaches_the_code(params):
    """The core declaration's defaults are what validated params (and so the code) hold."""
    from airfl.params.core import DEFS, PROPERTIES

    params.pop("threads", None)
    params["baselines"]["accuracy_vs_rounds"]["channel"].pop("bandwidth_hz", None)
    block = experiment_params(validate_params(params), "baselines.accuracy_vs_rounds")
    assert params["threads"] == PROPERTIES["threads"].default == 1
    assert block["channel"]["bandwidth_hz"] == DEFS["channel"].defaults()["bandwidth_hz"] == 1e6


def test_override_args_pass_only_differences(repo_root, params):
    effective = validate_params(copy.deepcopy(params))
    assert override_args(repo_root / "params.yaml", effective) == ""
    effective["profile"] = "paper"
    effective["baselines"]["accuracy_vs_rounds"]["curves"]["ota_low_snr"]["snr_db"] = -5.0
    args = override_args(repo_root / "params.yaml", effective)
    assert "--set 'profile=\"paper\"'" in args
    assert "baselines.accuracy_vs_rounds.curves.ota_low_snr.snr_db=-5.0" in args


def test_load_params_applies_cli_overrides(repo_root):
    params = load_params(repo_root / "params.yaml", {"profile": "paper", "seed": 7})
    assert params["profile"] == "paper" and params["seed"] == 7
    with pytest.raises(ConfigError, match="seed: -1 is less than the minimum of 0"):
        load_params(repo_root / "params.yaml", {"seed": -1})


def test_every_stage_param_key_exists_in_params_yaml(repo_root):
    """DVC refuses a stage whose param key is missing; generated curves map to their source."""
    from airfl.pipeline import dag
    from airfl.params.config import get_dotted

    params = load_params(repo_root / "params.yaml")
    for job in dag.jobs(params):
        for key in job.params:
            get_dotted(params, key)          # raises ConfigError naming the missing key


def test_shared_keys_are_declared_only_where_a_derivation_reads_them(repo_root):
    """DVC's params come from perturbing the composed blocks (param_deps), so
    an experiment's `shared_keys` serve only its derive jobs' views; every key names a section
    params.yaml writes (an experiment without derivations declares none)."""
    from airfl.params.config import get_dotted
    from airfl.pipeline.registry import all_experiments

    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    with_shared = [e for e in all_experiments() if e.shared_keys]
    assert with_shared, "LAPA's DDPG derivation reads lapa.control through shared_keys"
    for experiment in with_shared:
        assert experiment.derivations, experiment.id
        for key in experiment.shared_keys:
            get_dotted(raw, key)              # raises ConfigError naming a missing key
