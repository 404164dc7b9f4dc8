"""Random streams: derived deterministically, independent across keys, shared across schemes."""

import pytest
import torch

from airfl.rng import RoundStreams, derive_seed, torch_generator


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
