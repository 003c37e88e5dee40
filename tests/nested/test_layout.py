"""ember.jagged: a layout like ember.strided, that survives pickling and copying."""

import copy
import pickle

import ember


def test_jagged_layout_compares_prints_and_round_trips():
    assert ember.jagged == "jagged" and repr(ember.jagged) == "ember.jagged"
    assert pickle.loads(pickle.dumps(ember.jagged)) is ember.jagged
    assert copy.deepcopy(ember.jagged) is ember.jagged
    assert ember.nested.jagged is ember.jagged and ember.jagged != ember.strided
