"""ember.utils._pytree: torch.utils._pytree's API (flatten, unflatten, map, specs, paths)."""

from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest

import ember
from ember.utils import _pytree as pytree

Point = namedtuple("Point", "x y")

TREES = {
    "dict of tuple and list": {"a": 1, "b": (2, [3, None])},
    "one-tuple": (1,),
    "namedtuple": Point(1, {"q": 2}),
    "OrderedDict": OrderedDict(z=1, a=2),
    "defaultdict": defaultdict(list, {"k": 1}),
    "deque": deque([1, 2], maxlen=3),
    "a leaf": 5,
    "empty list": [],
    "vmap in_dims": ({"w": 0, "b": None}, 1),
}


@pytest.mark.parametrize("name", sorted(TREES))
def test_flatten_then_unflatten_rebuilds_the_tree(name):
    tree = TREES[name]
    leaves, spec = pytree.tree_flatten(tree)
    rebuilt = pytree.tree_unflatten(leaves, spec)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    assert spec.num_leaves == len(leaves)


@pytest.mark.parametrize("name", sorted(TREES))
def test_leaves_and_spec_match_torch(name, torch_mod):
    from torch.utils import _pytree as torch_pytree

    ours = pytree.tree_flatten(TREES[name])
    theirs = torch_pytree.tree_flatten(TREES[name])
    assert ours[0] == theirs[0]
    assert repr(ours[1]) == repr(theirs[1])
    assert pytree.treespec_pprint(ours[1]) == torch_pytree.treespec_pprint(theirs[1])


def test_none_and_tensors_are_leaves():
    t = ember.ones(2)
    leaves, spec = pytree.tree_flatten({"t": t, "n": None})
    assert leaves[0] is t and leaves[1] is None
    assert repr(spec) == "TreeSpec(dict, ['t', 'n'], [*,\n  *])"


def test_tree_map_over_several_trees_and_only_some_leaves():
    assert pytree.tree_map(lambda x: x + 1, {"x": 7, "y": (42, 64)}) == {"x": 8, "y": (43, 65)}
    assert pytree.tree_map(lambda a, b: a + b, [1, 2], [10, 20]) == [11, 22]
    assert pytree.tree_map_only(int, lambda x: x * 2, {"a": 1, "b": "s"}) == {"a": 2, "b": "s"}
    assert pytree.tree_all(lambda x: x > 0, (1, [2])) and not pytree.tree_any(lambda x: x > 5, (1,))
    seen = []
    assert pytree.tree_map_(seen.append, [1, (2,)]) == [1, (2,)] and seen == [1, 2]


def test_dicts_match_by_keys_when_mapping_over_a_second_tree():
    assert pytree.tree_map(lambda a, b: a - b, {"a": 1, "b": 2}, {"b": 20, "a": 10}) == {
        "a": -9,
        "b": -18,
    }
    with pytest.raises(ValueError, match="Node arity mismatch; expected 2, but got 1."):
        pytree.tree_map(lambda a, b: a, {"a": 1, "b": 2}, {"a": 1})
    with pytest.raises(ValueError, match=r"Node keys mismatch; missing key\(s\): \{'b'\}; extra"):
        pytree.tree_map(lambda a, b: a, {"a": 1, "b": 2}, {"a": 1, "c": 3})


def test_register_pytree_node_makes_a_class_a_container():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda c, _: Pair(*c))
    try:
        assert pytree.tree_leaves([Pair(1, [2, 3])]) == [1, 2, 3]
        doubled = pytree.tree_map(lambda x: x * 2, Pair(1, 2))
        assert isinstance(doubled, Pair) and (doubled.a, doubled.b) == (2, 4)
        with pytest.raises(ValueError, match="is already registered as pytree node"):
            pytree.register_pytree_node(Pair, lambda p: ([], None), lambda c, _: Pair(0, 0))
    finally:
        del pytree.SUPPORTED_NODES[Pair]


def test_key_paths_name_how_to_reach_each_leaf(torch_mod):
    from torch.utils import _pytree as torch_pytree

    tree = {"a": [5, Point(1, 2)]}
    ours = pytree.tree_flatten_with_path(tree)[0]
    assert [pytree.keystr(path) for path, _ in ours] == ["['a'][0]", "['a'][1].x", "['a'][1].y"]
    assert pytree.key_get(tree, ours[2][0]) == 2
    theirs = torch_pytree.tree_flatten_with_path(tree)[0]
    assert [pytree.keystr(p) for p, _ in ours] == [torch_pytree.keystr(p) for p, _ in theirs]


def test_broadcasting_a_prefix_over_a_structure_as_vmap_in_dims():
    spec = pytree.tree_structure(({"w": 1, "b": 2}, 3))
    assert pytree._broadcast_to_and_flatten(0, spec) == [0, 0, 0]
    assert pytree._broadcast_to_and_flatten(({"w": 0, "b": None}, 1), spec) == [0, None, 1]
    assert pytree._broadcast_to_and_flatten((0,), spec) is None


def test_unflatten_checks_the_number_of_leaves_and_the_spec():
    spec = pytree.tree_structure((1, 2))
    with pytest.raises(ValueError, match="`leaves` has length 1 but the spec refers to a pytree"):
        pytree.tree_unflatten([1], spec)
    with pytest.raises(TypeError, match="Expected `treespec` to be instance of TreeSpec"):
        pytree.tree_unflatten([1], (1, 2))
    assert spec == pytree.tree_structure((3, 4)) and hash(spec) == hash(
        pytree.tree_structure((5, 6))
    )
