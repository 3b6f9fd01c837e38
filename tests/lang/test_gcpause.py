"""`fewer_collections`: the collector's young threshold is raised while it is active and
put back after, also when nested or left by an exception."""

import gc

import pytest
from relay.lang.gcpause import YOUNG_THRESHOLD, fewer_collections


def test_threshold_is_raised_inside_and_restored_after():
    before = gc.get_threshold()
    assert before[0] < YOUNG_THRESHOLD
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        with fewer_collections():
            assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD  # the outer one is still active
    assert gc.get_threshold() == before
    with pytest.raises(ValueError), fewer_collections():
        raise ValueError
    assert gc.get_threshold() == before


def test_a_higher_threshold_is_left_alone():
    before = gc.get_threshold()
    try:
        gc.set_threshold(10 * YOUNG_THRESHOLD, *before[1:])
        with fewer_collections():
            assert gc.get_threshold()[0] == 10 * YOUNG_THRESHOLD
        assert gc.get_threshold()[0] == 10 * YOUNG_THRESHOLD
    finally:
        gc.set_threshold(*before)
