"""Deterministic random streams derived from (seed, experiment, trial, round, stream).

Every random draw in airfl comes from a generator returned here, so that (i) the same seed gives
bit-identical results and (ii) schemes compared in one figure see the same channel and data draws
(common random numbers): the channel stream of round t of trial k does not depend on the scheme.
The client index is the leading axis of each batched draw, so a client's slice is fixed by
(seed, experiment, trial, round, stream, client position).
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

STREAMS = ("init", "data", "channel", "noise", "quantization", "sampling", "placement", "partition",
           "dp", "design")


def derive_seed(seed: int, experiment: str, *keys: int | str) -> int:
    """A 63-bit seed that is a hash of the base seed, the experiment name and further keys."""
    text = "/".join([str(int(seed)), experiment, *(str(k) for k in keys)])
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def torch_generator(seed: int, experiment: str, *keys: int | str) -> torch.Generator:
    """A CPU torch generator for one (seed, experiment, trial, round, stream, ...) tuple."""
    generator = torch.Generator(device="cpu")
    generator.manual_seed(derive_seed(seed, experiment, *keys))
    return generator


def numpy_generator(seed: int, experiment: str, *keys: int | str) -> np.random.Generator:
    """A numpy PCG64 generator for one (seed, experiment, ...) tuple."""
    return np.random.default_rng(derive_seed(seed, experiment, *keys))


class RoundStreams:
    """Named generators of one round of one trial; each stream is created on first use.

    Draws from different streams are independent, and a scheme that ignores a stream does not
    shift the others: this is what gives schemes the same channel and data draws.
    """

    def __init__(self, seed: int, experiment: str, trial: int, round_index: int):
        self._key = (seed, experiment, trial, round_index)
        self._cache: dict[str, torch.Generator] = {}
        self._skipped: dict[str, tuple] = {}   # first draws served by _first_draw: (shape, draw)

    def trial_numpy(self, *keys: int | str) -> np.random.Generator:
        """A generator of this round's trial, keyed by `keys` instead of the round: draws that
        hold for several rounds (e.g. a channel distribution that changes every 10 rounds) and
        that every scheme of the trial must see alike (common random numbers)."""
        seed, experiment, trial, _ = self._key
        return numpy_generator(seed, experiment, "trial", trial, *keys)

    def __call__(self, stream: str) -> torch.Generator:
        _check_stream(stream)
        if stream not in self._cache:
            seed, experiment, trial, round_index = self._key
            self._cache[stream] = torch_generator(seed, experiment, "trial", trial, "round",
                                                  round_index, stream)
            if stream in self._skipped:        # past the draw first_uniform/normal served
                shape, draw = self._skipped.pop(stream)
                draw(shape, generator=self._cache[stream], dtype=torch.float64)
        return self._cache[stream]

    def first_uniform(self, stream: str, shape: tuple[int, ...]) -> torch.Tensor:
        """torch.rand(shape, float64) as the stream's first draw of the round gives it, read-only.

        The runs of one trial (a tune job's candidates in lockstep) draw the same numbers here
        (common random numbers), so they are drawn once and shared through a small cache of the
        process (_FIRST_DRAWS) instead of once per run (e.g. UQOS's Madow draw).
        Bit-identical to drawing: a later use of the stream in this round starts after these
        numbers, as it would have.

        Read-only is enforced, not a convention: torch has no read-only tensors, so the cache
        keeps each tensor's in-place version counter (`Tensor._version`, bumped by every write)
        and a later run that finds it changed stops with an error instead of quantizing with
        numbers another run overwrote (a copy per run would cost about what the draw saves)."""
        return self._first_draw(stream, shape, torch.rand)

    def first_normal(self, stream: str, shape: tuple[int, ...]) -> torch.Tensor:
        """torch.randn(shape, float64) as the stream's first draw of the round gives it,
        read-only and shared like `first_uniform` (the round's channel draw, the same for every
        run of a trial: `airfl.core.loop.draw_channel_power`)."""
        return self._first_draw(stream, shape, torch.randn)

    def uniform_block(self, stream: str, shape: tuple[int, ...]) -> torch.Tensor:
        """float64 uniforms on [0, 1) [shape] of this round and stream, read-only, drawn once
        and shared by the runs of a trial like `first_uniform`, from a SplitMix64 generator
        seeded with derive_seed(seed, experiment, "trial", trial, "round", round, stream,
        "block") (`airfl.runtime.splitmix`; row m is client m's): independent of the torch stream of
        the same name, which it does not advance. Why not torch's or numpy's generator: Biased
        FL's digital schemes draw one such block per round and trial for their quantizer, and a
        [10, 7850] block costs ~241 us in torch, ~132 us in numpy (PCG64) and ~12 us in this
        compiled loop (the numpy draw was ~11 % of a +60 dB UQOS tune job;
        benchmarks/README.md)."""
        _check_stream(stream)
        shape = tuple(int(n) for n in shape)
        seed, experiment, trial, round_index = self._key

        def draw() -> torch.Tensor:
            from airfl.runtime.splitmix import splitmix64_uniforms     # numba: loaded on first use
            return torch.from_numpy(splitmix64_uniforms(derive_seed(
                seed, experiment, "trial", trial, "round", round_index, stream, "block"), shape))

        return _shared((*self._key, stream, shape, "block"), draw, stream, shape)

    def derived(self, name: str, key: tuple, make) -> torch.Tensor:
        """make() of this round, shared by the runs of a trial like `first_uniform` (read-only):
        for values computed only from the round's shared draws and from `key`, which must
        hold everything else they depend on (e.g. the channel power from the channel draw and
        the path gains: `airfl.core.loop.draw_channel_power`)."""
        return _shared((*self._key, "derived", name, *key), make, name, ())

    def _first_draw(self, stream: str, shape: tuple[int, ...], draw) -> torch.Tensor:
        shape = tuple(int(n) for n in shape)
        if stream in self._cache or stream in self._skipped:   # not the first draw: draw it
            return draw(shape, generator=self(stream), dtype=torch.float64)

        def first() -> torch.Tensor:
            values = draw(shape, generator=self(stream), dtype=torch.float64)
            del self._cache[stream]                      # re-made and advanced on demand
            return values

        values = _shared((*self._key, stream, shape, draw.__name__), first, stream, shape)
        self._skipped[stream] = (shape, draw)
        return values


def _check_stream(stream: str) -> None:
    if stream not in STREAMS:
        raise ValueError(f"unknown random stream {stream!r}; allowed: {', '.join(STREAMS)}")


def _shared(key: tuple, make, stream: str, shape: tuple[int, ...]) -> torch.Tensor:
    """The tensor cached under key in _FIRST_DRAWS (made by make() on a miss), checked unchanged
    since it was made (its in-place version counter; see `RoundStreams.first_uniform`)."""
    values, version = _FIRST_DRAWS.pop(key, (None, None))
    if values is None:
        values = make()
        version = values._version
    elif values._version != version:
        raise RuntimeError(f"shared draw of {stream!r} {shape}: a consumer wrote into the "
                           "draw shared by the runs of a trial; treat it as read-only")
    _FIRST_DRAWS[key] = (values, version)                # most recently used last
    while len(_FIRST_DRAWS) > _FIRST_DRAWS_KEPT:
        _FIRST_DRAWS.pop(next(iter(_FIRST_DRAWS)))
    return values


_FIRST_DRAWS: dict[tuple, tuple[torch.Tensor, int]] = {}    # key -> (draw, its _version)
_FIRST_DRAWS_KEPT = 16      # > 4 shared values x the trials a tune job steps together (3)
