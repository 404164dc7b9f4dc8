"""The core's one curve-to-scheme builder (airfl.core.scheme.scheme_from_curve), which the
pipeline's registry and the arena's audit both call (tests/arena checks that the two build the
same scheme for every audited curve)."""

from __future__ import annotations

import pytest

from airfl.core.scheme import CURVE_SETTINGS, Scheme, scheme_from_curve


class _Plain(Scheme):
    kind = "plain"


class _ReadsLr(Scheme):
    kind = "reads_lr"
    uses_local_lr = True


def test_curve_settings_and_kind_are_dropped():
    curve = {"scheme": "plain", "noise": 0.5, **{k: 3.0 for k in CURVE_SETTINGS}}
    scheme = scheme_from_curve(_Plain, "c", curve, local_lr=0.1)
    assert type(scheme) is _Plain and scheme.name == "c"
    assert scheme.params == {"noise": 0.5}          # no lr: the scheme does not read it
    assert curve["scheme"] == "plain"                # the caller's curve is left as it was


def test_a_scheme_that_reads_the_local_step_size_gets_it():
    scheme = scheme_from_curve(_ReadsLr, "c", {"scheme": "reads_lr", "noise": 1.0}, 0.05)
    assert scheme.params == {"noise": 1.0, "lr": 0.05}


def test_an_lr_in_the_curve_is_refused():
    with pytest.raises(ValueError, match=r"^curves\.c\.lr: a reads_lr scheme takes the "
                                         r"clients' step size from the local-work settings"):
        scheme_from_curve(_ReadsLr, "c", {"scheme": "reads_lr", "lr": 0.1}, 0.05)


def test_a_missing_local_step_size_is_refused():
    with pytest.raises(ValueError, match=r"^curves\.c: a reads_lr scheme needs the clients' "
                                         r"local step size \(training\.lr\)$"):
        scheme_from_curve(_ReadsLr, "c", {"scheme": "reads_lr"})

