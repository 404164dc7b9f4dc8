"""Random streams: derived deterministically, independent across keys, shared across schemes."""

import math

import numpy as np
import pytest
import torch

from airfl.runtime.rng import RoundStreams, derive_seed, torch_generator


def test_same_key_same_draws_bit_identical():
    a = torch.rand(100, generator=torch_generator(1, "exp", "trial", 0))
    b = torch.rand(100, generator=torch_generator(1, "exp", "trial", 0))
    assert torch.equal(a, b)


@pytest.mark.parametrize("other", [(2, "exp", 0), (1, "other", 0), (1, "exp", 1)])
def test_any_key_change_changes_the_seed(other):
    assert derive_seed(1, "exp", 0) != derive_seed(*other)


def test_streams_do_not_shift_each_other():
    """A scheme that draws noise must not change the channel draws another scheme sees."""
    plain = RoundStreams(5, "e", trial=2, round_index=7)
    busy = RoundStreams(5, "e", trial=2, round_index=7)
    torch.randn(1000, generator=busy("noise"))
    assert torch.equal(torch.rand(10, generator=plain("channel")),
                       torch.rand(10, generator=busy("channel")))
    assert not torch.equal(torch.rand(10, generator=RoundStreams(5, "e", 2, 8)("channel")),
                           torch.rand(10, generator=RoundStreams(5, "e", 2, 7)("channel")))


def test_unknown_stream_is_rejected():
    with pytest.raises(ValueError, match="unknown random stream 'chanel'"):
        RoundStreams(0, "e", 0, 0)("chanel")


def test_first_uniform_is_the_streams_first_draw_shared_by_the_runs_of_a_trial():
    """RoundStreams.first_uniform: the same numbers as drawing from the stream, one
    tensor for every RoundStreams of the same (seed, experiment, trial, round), and a later use
    of the stream continues after them as if they had been drawn from it."""
    shape = (3, 5)
    fresh = RoundStreams(7, "exp/first", 2, 4)("quantization")
    first, second = (torch.rand(shape, generator=fresh, dtype=torch.float64) for _ in range(2))
    a, b = RoundStreams(7, "exp/first", 2, 4), RoundStreams(7, "exp/first", 2, 4)
    got = a.first_uniform("quantization", shape)
    assert torch.equal(got, first)
    assert b.first_uniform("quantization", shape) is got               # drawn once, shared
    assert torch.equal(torch.rand(shape, generator=a("quantization"), dtype=torch.float64),
                       second)                                         # the stream moved on
    assert torch.equal(b.first_uniform("quantization", shape), second)  # not first any more
    other_trial = RoundStreams(7, "exp/first", 3, 4).first_uniform("quantization", shape)
    assert not torch.equal(other_trial, first)


def test_a_run_that_writes_into_the_shared_first_draw_stops_the_next_run():
    """first_uniform's tensor is shared by the runs of a trial: a consumer
    that wrote into it would change the other runs' draws silently; the next run stops instead."""
    shape = (2, 3)
    a, b = RoundStreams(11, "exp/guard", 0, 0), RoundStreams(11, "exp/guard", 0, 0)
    a.first_uniform("quantization", shape).mul_(2.0)                    # a careless consumer
    with pytest.raises(RuntimeError, match="wrote into the draw shared"):
        b.first_uniform("quantization", shape)


def test_the_quantizer_leaves_the_shared_draw_unwritten():
    """The one consumer, stochastic_quantize(noise=) (Biased FL's digital schemes), with and
    without a row mask: the numbers and the tensor's version counter are unchanged."""
    from airfl.channel import stochastic_quantize

    streams = RoundStreams(12, "exp/guard", 0, 0)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    noise = streams.first_uniform("quantization", tuple(x.shape))
    before, version = noise.clone(), noise._version
    stochastic_quantize(x, torch.tensor([2, 3, 4, 5]), None, noise=noise)
    stochastic_quantize(x, 3, None, rows=torch.tensor([True, False, True, False]), noise=noise)
    assert torch.equal(noise, before) and noise._version == version
    assert RoundStreams(12, "exp/guard", 0, 0).first_uniform("quantization", tuple(x.shape)) \
        is noise


def test_uniform_block_is_a_splitmix_draw_shared_by_the_runs_of_a_trial():
    """`uniform_block` (the digital quantizer's uniforms): SplitMix64 uniforms seeded with
    derive_seed(seed, experiment, trial, round, stream, "block"), one tensor for every
    RoundStreams of the same round, other numbers in another trial or round, and the torch
    stream of the same name untouched; a consumer that writes into it stops the next run."""
    from airfl.runtime.rng import derive_seed

    shape = (3, 5)
    a, b = RoundStreams(7, "exp/block", 2, 4), RoundStreams(7, "exp/block", 2, 4)
    got = a.uniform_block("quantization", shape)
    seed = derive_seed(7, "exp/block", "trial", 2, "round", 4, "quantization", "block")
    expected = torch.tensor(_splitmix_reference(seed, 15), dtype=torch.float64).view(shape)
    assert got.dtype == torch.float64 and torch.equal(got, expected)
    assert b.uniform_block("quantization", shape) is got                # drawn once, shared
    fresh = RoundStreams(7, "exp/block", 2, 4)("quantization")
    assert torch.equal(torch.rand(shape, generator=a("quantization"), dtype=torch.float64),
                       torch.rand(shape, generator=fresh, dtype=torch.float64))
    assert not torch.equal(RoundStreams(7, "exp/block", 3, 4).uniform_block("quantization",
                                                                             shape), got)
    assert not torch.equal(RoundStreams(7, "exp/block", 2, 5).uniform_block("quantization",
                                                                             shape), got)
    got.mul_(2.0)
    with pytest.raises(RuntimeError, match="wrote into the draw shared"):
        RoundStreams(7, "exp/block", 2, 4).uniform_block("quantization", shape)
    with pytest.raises(ValueError, match="unknown random stream"):
        a.uniform_block("quantisation", shape)


def test_first_normal_is_the_streams_first_randn_and_a_later_draw_follows_it():
    """`first_normal` (the channel draw shared by a trial's runs): the stream's own first
    torch.randn, the same tensor for every RoundStreams of the round, and the stream's next
    draw (of any kind) is the one that follows it."""
    from airfl.core.loop import draw_channel_power
    from airfl.channel.fading import rayleigh_power

    a, b, ref = RoundStreams(3, "t/normal", 1, 2), RoundStreams(3, "t/normal", 1, 2), \
        RoundStreams(3, "t/normal", 1, 2)
    first = ref("channel")
    expected = torch.randn((1, 4, 2), generator=first, dtype=torch.float64)
    after = torch.rand(3, generator=first, dtype=torch.float64)
    got = a.first_normal("channel", (1, 4, 2))
    assert torch.equal(got, expected) and b.first_normal("channel", (1, 4, 2)) is got
    assert torch.equal(torch.rand(3, generator=a("channel"), dtype=torch.float64), after)
    lam = torch.tensor([1.0, 2e-3, 5.0, 0.1], dtype=torch.float64)
    drawn = rayleigh_power(lam, 1, RoundStreams(3, "t/normal", 1, 3)("channel"))[0]
    assert torch.equal(draw_channel_power(lam, RoundStreams(3, "t/normal", 1, 3)), drawn)


_MASK64 = (1 << 64) - 1


def _splitmix_reference(seed: int, count: int) -> list[float]:
    """SplitMix64 (Steele, Lea, Flood 2014) in Python integers: outputs 1..count of `seed`,
    top 53 bits times 2^-53."""
    out, state = [], seed
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        out.append(((z ^ (z >> 31)) >> 11) * 2.0 ** -53)
    return out


def test_splitmix_uniforms_are_splitmix64_and_uniform():
    """The compiled SplitMix64 of `airfl.runtime.splitmix` against the published first outputs of
    seed 0 (0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f) and a Python-integer
    reference at a large seed, row-major; 200,000 of its uniforms pass Kolmogorov-Smirnov
    against U[0, 1), have mean 1/2 and variance 1/12 within 5 standard errors, and adjacent
    rows (two clients' dither) are uncorrelated; a seed outside [0, 2^64) is refused."""
    from scipy import stats

    from airfl.runtime.splitmix import splitmix64_uniforms

    published = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    assert splitmix64_uniforms(0, (3,)).tolist() == [(z >> 11) * 2.0 ** -53 for z in published]
    seed = 0xFEDCBA9876543210
    assert splitmix64_uniforms(seed, (4, 6)).ravel().tolist() == _splitmix_reference(seed, 24)
    u = splitmix64_uniforms(12345, (20, 10_000))
    assert 0.0 <= u.min() and u.max() < 1.0
    assert stats.kstest(u.ravel(), "uniform").pvalue > 1e-3
    n = u.size
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(u.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / n)          # Var((U - 1/2)^2) = 1/180
    rho = np.corrcoef(u[:-1].ravel(), u[1:].ravel())[0, 1]
    assert abs(rho) < 5 / math.sqrt(u[1:].size)
    with pytest.raises(ValueError, match="seed"):
        splitmix64_uniforms(2 ** 64, (2,))


def test_channel_power_is_shared_by_the_runs_of_a_trial_for_equal_path_gains():
    """`draw_channel_power`: one read-only tensor for the runs of a trial with equal path gains
    (RoundStreams.derived), another for other gains or another round; the draw itself is the
    stream's (rayleigh_power's) either way, and invalid gains are refused."""
    from airfl.channel.fading import rayleigh_power
    from airfl.core.loop import draw_channel_power

    lam = torch.tensor([1.0, 2e-3, 5.0], dtype=torch.float64)
    first = draw_channel_power(lam, RoundStreams(5, "t/power", 0, 1))
    assert draw_channel_power(lam.clone(), RoundStreams(5, "t/power", 0, 1)) is first
    other = draw_channel_power(2 * lam, RoundStreams(5, "t/power", 0, 1))
    assert other is not first and torch.equal(other, 2 * first)
    assert torch.equal(first, rayleigh_power(lam, 1, RoundStreams(5, "t/power", 0, 1)("channel"))[0])
    assert not torch.equal(draw_channel_power(lam, RoundStreams(5, "t/power", 0, 2)), first)
    with pytest.raises(ValueError, match="path_gain"):
        draw_channel_power(torch.tensor([1.0, -1.0], dtype=torch.float64),
                           RoundStreams(5, "t/power", 0, 1))
