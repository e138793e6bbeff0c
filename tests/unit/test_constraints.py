"""XLA's overwrite rules for buffer constraints."""

from __future__ import annotations

from stablehlo_layout.constraints import BufferConstraint, Origin

O = Origin("test")


def fresh(mandatory=False, priority=0):
    return BufferConstraint((1, 0), mandatory, False, priority, O, 0, buffer=0)


def test_same_layout_upgrades_flags_and_priority():
    c = fresh()
    assert c.update((1, 0), True, True, 2, O, 0)
    assert (c.mandatory, c.dfs, c.priority) == (True, True, 2)
    assert not c.update((1, 0), False, False, 1, O, 0)  # nothing to upgrade
    assert c.history == ()


def test_mandatory_request_always_overwrites():
    c = fresh(mandatory=True, priority=5)
    assert c.update((0, 1), True, True, 0, O, 0)
    assert c.layout == (0, 1) and c.priority == 0 and c.history == ((1, 0),)


def test_non_mandatory_needs_strictly_higher_priority():
    c = fresh(priority=1)
    assert not c.update((0, 1), False, True, 1, O, 0)
    assert c.update((0, 1), False, True, 2, O, 0)
    assert c.layout == (0, 1)


def test_non_mandatory_may_beat_mandatory_with_higher_priority():
    c = fresh(mandatory=True, priority=0)
    assert c.update((0, 1), False, True, 1, O, 0)
    assert not c.mandatory


def test_non_mandatory_changes_are_capped_at_two():
    c = fresh(priority=0)
    assert c.update((0, 1), False, True, 1, O, 0)
    assert c.update((1, 0), False, True, 2, O, 0)
    assert not c.update((0, 1), False, True, 3, O, 0)  # a third change is refused
    assert c.update((0, 1), True, True, 0, O, 0)  # mandatory is uncapped


def test_non_mandatory_refused_on_tuple_element():
    c = fresh(priority=0)
    assert not c.update((0, 1), False, True, 5, O, 0, buffer_is_array=False)
