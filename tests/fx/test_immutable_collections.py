"""ember.fx.immutable_collections (src/ember/fx/immutable_collections.py)."""

import pickle

import pytest

from ember.fx.immutable_collections import immutable_dict, immutable_list


def test_immutable_list_refuses_every_mutation_and_hashes():
    lst = immutable_list([1, 2])
    for mutate in (
        lambda: lst.append(3),
        lambda: lst.__setitem__(0, 5),
        lambda: lst.sort(),
        lambda: lst.pop(),
    ):
        with pytest.raises(TypeError, match="'immutable_list' object does not support mutation"):
            mutate()
    assert lst + [3] == [1, 2, 3] and hash(lst) == hash((1, 2))
    assert pickle.loads(pickle.dumps(lst)) == lst


def test_immutable_dict_refuses_every_mutation_and_hashes():
    d = immutable_dict({"dim": 0})
    for mutate in (
        lambda: d.update(a=1),
        lambda: d.__setitem__("a", 1),
        lambda: d.pop("dim"),
        lambda: d.clear(),
    ):
        with pytest.raises(TypeError, match="node.args = new_args"):
            mutate()
    assert {**d, "keepdim": True} == {"dim": 0, "keepdim": True}
    assert hash(d) == hash(frozenset({("dim", 0)}))
    assert type(pickle.loads(pickle.dumps(d))) is immutable_dict
