"""Device check: one round of every CNN paper on CUDA against the same round on CPU, the
DP-as-a-perk step timed at 45 and 450 clients, and the plan's GPU unit costs written from the
measured steps. Meant to finish within 8 minutes on one GPU.

Usage (from the repository root; one CPU thread for the CPU reference)::

    OMP_NUM_THREADS=1 python benchmarks/device_check.py [--out workflow/unit_costs.json]
        [--json benchmarks/results/device_check.json]
    python benchmarks/device_check.py --dry --device cpu --out /tmp/units.json   # structure only

A round per paper, at the paper profile's sizes (clients, local steps, batch, model), on random
inputs of the dataset's shape (the arithmetic is compared, not the learning): every client's
local SGD from one global model (`airfl.core.engine.local_sgd`, the engine `auto` picks: the
channels-last loop on CPU, vmap on CUDA), then the evaluation of the round's models on 2,048
test inputs (`evaluate_many`: the averaged model; OTA-FD, federated distillation, every
device's own model). Both devices run in exact fp32 (`precision: fp32`: TF32 off on CUDA,
`models.apply_precision`), from the same parameters and the same batch draws (CPU generators).

Tolerance (stated before any run): the round's updates [N, d] agree to a relative L2 distance
of 1e-3 (exact fp32 on both devices differs only in summation order; over several local steps a
ReLU or max-pool tie can flip in a few clients, ~1e-3 of their update, benchmarks/README.md),
the evaluation losses to 1e-3 relative and the accuracies to 0.5 percentage points.

Timing: one DP-as-a-perk step (FedAvgCNN, batch 10) of all K clients at K = 45 (one run, as the
code runs it) and K = 450 (ten runs' clients in one step), median of 5 after a warm-up,
synchronised. Each paper's round is timed too. Written into `--out`'s `gpu` section: per model,
seconds per client step at the batch measured (`airfl plan` multiplies its client steps by it:
the 45-client step for FedAvgCNN, i.e. the code as it is; the 450-client step is kept beside
it as what batching runs would reach). `--dry` shrinks every size (3 clients, 1 step, 9 and
18 clients for the timed step) so that a test can run the whole script on CPU in seconds;
it writes only to an `--out` it is given.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from airfl.core.engine import ClientData, evaluate_many, local_sgd
from airfl.data import dataset_info
from airfl.models.flat import build_model
from airfl.models.precision import apply_precision

# paper profile sizes (params.yaml): (paper, model, dataset, clients, local steps, batch,
# evaluate every device's model)
ROUNDS = (
    ("cdpb", "cnn_mnist", "fashion_mnist", 100, 10, 50, False),      # offline substitute
    ("dp_perk", "fedavg_cnn", "fashion_mnist", 45, 5, 10, False),     # steps mode (Q = 5)
    ("lapa", "cnn_mnist_bn", "mnist", 15, 10, 220, False),
    ("ota_fd", "cnn_mnist_k3", "fashion_mnist", 10, 5, 64, True),    # X2's substitute sizes
)
STEP_CLIENTS = (45, 450)
UPDATE_RTOL = 1e-3
LOSS_RTOL = 1e-3
ACCURACY_ATOL = 0.005
TEST_SAMPLES = 2048


def synthetic(dataset: str, clients: int, per_client: int, seed: int = 0):
    info = dataset_info(dataset)
    gen = torch.Generator().manual_seed(seed)
    n = clients * per_client
    x = torch.randn(n, *info.image_shape, generator=gen)
    y = torch.randint(0, info.num_classes, (n,), generator=gen)
    return x, y, info


def client_data(x, y, clients: int, per_client: int, device) -> ClientData:
    n = clients * per_client
    return ClientData(x.to(device), y.to(device), torch.arange(n, device=device),
                      torch.arange(0, n + 1, per_client, device=device),
                      torch.full((clients,), per_client, device=device))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def one_round(model, params, x, y, test, clients, steps, batch, own_models, device):
    """The round's updates [N, d] (on CPU), evaluation losses and accuracies, the round's
    seconds and those of its local training alone."""
    per_client = max(batch, 64)
    data = client_data(x, y, clients, per_client, device)
    p = params.to(device)
    synchronize(device)
    start = time.perf_counter()
    updates = local_sgd(model, p, data, steps, batch, 0.01, torch.Generator().manual_seed(2))
    synchronize(device)
    training = time.perf_counter() - start
    models = p + updates if own_models else (p + updates.mean(0)).unsqueeze(0)
    loss, accuracy = evaluate_many(model, models, test[0].to(device), test[1].to(device))
    synchronize(device)
    seconds = time.perf_counter() - start
    return updates.cpu(), loss.cpu(), accuracy.cpu(), seconds, training


def check_round(spec, device: torch.device, dry: bool) -> dict:
    paper, name, dataset, clients, steps, batch, own = spec
    if dry:
        clients, steps = min(clients, 3), 1
    per_client = max(batch, 64)
    x, y, info = synthetic(dataset, clients, per_client)
    tx, ty, _ = synthetic(dataset, 1, 256 if dry else TEST_SAMPLES, seed=1)
    model = build_model(name, info.image_shape, info.num_classes, precision="fp32")
    params = model.init(torch.Generator().manual_seed(1))
    ref = one_round(model, params, x, y, (tx, ty), clients, steps, batch, own, torch.device("cpu"))
    apply_precision("fp32", device)
    one_round(model, params, x, y, (tx, ty), clients, 1, batch, own, device)       # warm-up
    dev = one_round(model, params, x, y, (tx, ty), clients, steps, batch, own, device)
    update_rel = float(torch.linalg.vector_norm(dev[0] - ref[0])
                       / torch.linalg.vector_norm(ref[0]).clamp_min(1e-30))
    loss_rel = float(((dev[1] - ref[1]).abs() / ref[1].abs().clamp_min(1e-30)).max())
    accuracy_diff = float((dev[2] - ref[2]).abs().max())
    ok = update_rel <= UPDATE_RTOL and loss_rel <= LOSS_RTOL and accuracy_diff <= ACCURACY_ATOL
    return {"paper": paper, "model": name, "clients": clients, "steps": steps, "batch": batch,
            "update_rel_l2": update_rel, "loss_rel": loss_rel, "accuracy_abs": accuracy_diff,
            "within": ok, "cpu_s": ref[3], "device_s": dev[3],
            "device_client_step_s": dev[4] / (clients * steps)}


def time_step(clients: int, device: torch.device, repeats: int = 5) -> float:
    """Seconds of one FedAvgCNN step (batch 10) of all `clients` clients on `device`."""
    x, y, info = synthetic("fashion_mnist", clients, 64)
    model = build_model("fedavg_cnn", info.image_shape, info.num_classes, precision="fp32")
    data = client_data(x, y, clients, 64, device)
    params = model.init(torch.Generator().manual_seed(1)).to(device)
    apply_precision("fp32", device)
    local_sgd(model, params, data, 1, 10, 0.005, torch.Generator().manual_seed(2))   # warm-up
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        local_sgd(model, params, data, 1, 10, 0.005, torch.Generator().manual_seed(2))
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def device_name(device: torch.device, dry: bool) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{device.type} (dry run)" if dry else device.type


def gpu_section(rounds: list[dict], steps: dict[int, float], device: torch.device,
                dry: bool) -> dict:
    """The unit-cost table's `gpu` part: per model, seconds per client step by batch."""
    models: dict[str, dict] = {}
    for r in rounds:
        entry = models.setdefault(r["model"], {"client_step_s": {}})
        entry["client_step_s"][str(r["batch"])] = r["device_client_step_s"]
    k, big = sorted(steps)
    models["fedavg_cnn"] = {"client_step_s": {"10": steps[k] / k},
                            "clients_per_step": k,
                            f"client_step_s_at_{big}_clients": steps[big] / big}
    return {"machine": {"device": device_name(device, dry), "torch": torch.__version__,
                        "cuda": torch.version.cuda, "date": dt.date.today().isoformat(),
                        "precision": "fp32 (TF32 off)", "method": "benchmarks/device_check.py"},
            "models": models}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="the device checked against CPU")
    parser.add_argument("--dry", action="store_true", help="tiny sizes: the script's structure")
    parser.add_argument("--out", type=Path, default=None,
                        help="unit-cost table to write the gpu section into (default: "
                             "workflow/unit_costs.json, except with --dry: none)")
    parser.add_argument("--json", type=Path, default=None, help="the full result")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("device_check: no CUDA device here; run it on a GPU, or with --dry --device cpu "
              "to check its structure", file=sys.stderr)
        return 2
    out = args.out or (None if args.dry else Path("workflow/unit_costs.json"))
    started = time.perf_counter()
    rounds = []
    for spec in ROUNDS:
        result = check_round(spec, device, args.dry)
        rounds.append(result)
        print(f"{result['paper']:8s} {result['model']:12s} N={result['clients']:3d} "
              f"Q={result['steps']:2d} B={result['batch']:3d}: update rel L2 "
              f"{result['update_rel_l2']:.1e}, loss rel {result['loss_rel']:.1e}, accuracy "
              f"{result['accuracy_abs']:.4f} -> {'within' if result['within'] else 'OUTSIDE'}"
              f"; CPU {result['cpu_s']:.2f} s, {device.type} {result['device_s']:.3f} s",
              flush=True)
    sizes = (9, 18) if args.dry else STEP_CLIENTS
    steps = {k: time_step(k, device) for k in sizes}
    for k, seconds in steps.items():
        print(f"dp_perk step, {k} clients: {seconds * 1e3:.2f} ms ({seconds / k * 1e6:.1f} us "
              "per client step)", flush=True)
    section = gpu_section(rounds, steps, device, args.dry)
    result = {"rounds": rounds, "dp_perk_step_s": {str(k): v for k, v in steps.items()},
              "all_within": all(r["within"] for r in rounds), "gpu": section,
              "wall_s": time.perf_counter() - started}
    if out is not None:
        table = json.loads(out.read_text()) if out.exists() else {}
        table["gpu"] = section
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(table, indent=1) + "\n")
        tmp.replace(out)
        print(f"wrote the gpu unit costs into {out}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"all rounds within tolerance: {result['all_within']}; {result['wall_s']:.0f} s")
    return 0 if result["all_within"] else 1


if __name__ == "__main__":
    sys.exit(main())
