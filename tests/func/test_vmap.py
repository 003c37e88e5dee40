"""ember.func.vmap: in_dims and out_dims as pytrees, randomness modes, nesting, and
torch.func's errors."""

import numpy as np
import pytest

import ember
from ember import func
from tests.func.trees import assert_same_tree, raised

XS = np.arange(12.0).reshape(3, 4)


def test_in_dims_pytree_matches_a_loop_and_torch(torch_mod):
    def run(m):
        params = {"w": m.tensor(XS), "b": m.tensor([1.0, 2.0, 3.0, 4.0])}
        x = m.tensor(XS.T.copy())  # (4, 3): mapped over dim 1, size 3 like w's rows

        def f(p, x):
            return p["w"] * x.sum() + p["b"]

        return m.func.vmap(f, in_dims=({"w": 0, "b": None}, 1))(params, x)

    out = run(ember)
    expected = np.stack([XS[i] * XS[i].sum() + [1, 2, 3, 4] for i in range(3)])
    np.testing.assert_array_equal(out.numpy(), expected)
    assert_same_tree(out, run(torch_mod))


def test_out_dims_pytree_places_each_outputs_batch_dimension(torch_mod):
    def run(m):
        def f(x):
            return x * 2, {"sum": x.sum(), "const": m.ones(2)}

        return m.func.vmap(f, out_dims=(1, {"sum": 0, "const": None}))(m.tensor(XS))

    doubled, rest = run(ember)
    assert doubled.shape == (4, 3) and doubled.numpy().tolist() == (2 * XS.T).tolist()
    assert rest["sum"].tolist() == XS.sum(1).tolist() and rest["const"].tolist() == [1.0, 1.0]
    assert_same_tree(run(ember), run(torch_mod))


def test_negative_dims_count_from_the_end(torch_mod):
    def run(m):
        return m.func.vmap(lambda x: x.cumsum(0), in_dims=-1, out_dims=-1)(m.tensor(XS))

    np.testing.assert_array_equal(run(ember).numpy(), XS.cumsum(0))
    assert_same_tree(run(ember), run(torch_mod))


def test_keyword_arguments_are_passed_unmapped(torch_mod):
    def run(m):
        return m.func.vmap(lambda x, scale=1.0: x * scale)(m.tensor(XS), scale=m.tensor(2.0))

    np.testing.assert_array_equal(run(ember).numpy(), XS * 2)
    assert_same_tree(run(ember), run(torch_mod))


def test_nested_vmap_maps_two_dimensions(torch_mod):
    def run(m):
        outer = m.func.vmap(m.func.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))
        return outer(m.tensor([1.0, 2.0]), m.tensor([10.0, 20.0, 30.0]))

    assert run(ember).tolist() == [[10.0, 20.0], [20.0, 40.0], [30.0, 60.0]]
    assert_same_tree(run(ember), run(torch_mod))


def test_vmap_is_differentiable_through_its_slices():
    x = ember.tensor(XS, requires_grad=True)
    func.vmap(lambda row: (row**2).sum())(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * XS)


def test_chunk_size_is_checked_and_gives_the_same_result():
    with pytest.raises(ValueError, match=r"chunk_size should be None or greater than 0. \(got 0\)"):
        func.vmap(lambda x: x, chunk_size=0)
    out = func.vmap(lambda x: x.sum(), chunk_size=2)(ember.tensor(XS))
    assert out.tolist() == XS.sum(1).tolist()


VMAP_ERRORS = {
    "in_dims a list": lambda m: m.func.vmap(lambda x: x, in_dims=[0])(m.tensor(XS)),
    "no inputs": lambda m: m.func.vmap(lambda: m.ones(1))(),
    "in_dims of another structure": lambda m: m.func.vmap(lambda a, b: a, in_dims=(0,))(
        m.tensor(XS), m.tensor(XS)
    ),
    "in_dim for a number": lambda m: m.func.vmap(lambda a, b: a, in_dims=(0, 0))(m.tensor(XS), 1.0),
    "in_dim out of range": lambda m: m.func.vmap(lambda a: a, in_dims=2)(m.tensor(XS)),
    "in_dim not an int": lambda m: m.func.vmap(lambda a: a, in_dims=(1.5,))(m.tensor(XS)),
    "sizes differ": lambda m: m.func.vmap(lambda a, b: a)(m.tensor(XS), m.ones(4)),
    "nothing mapped": lambda m: m.func.vmap(lambda a: a, in_dims=None)(m.tensor(XS)),
    "number output": lambda m: m.func.vmap(lambda a: 3.0)(m.tensor(XS)),
    "out_dims not ints": lambda m: m.func.vmap(lambda a: a, out_dims="x")(m.tensor(XS)),
    "out_dims of another structure": lambda m: m.func.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(
        m.tensor(XS)
    ),
    "batched output with out_dims None": lambda m: m.func.vmap(lambda a: a, out_dims=None)(
        m.tensor(XS)
    ),
    "bad randomness": lambda m: m.func.vmap(lambda a: a, randomness="sometimes"),
}


@pytest.mark.parametrize("case", sorted(VMAP_ERRORS))
def test_vmap_raises_torchs_error(case, torch_mod):
    assert raised(lambda: VMAP_ERRORS[case](ember)) == raised(lambda: VMAP_ERRORS[case](torch_mod))


def test_mapping_a_number_says_to_use_none():
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        func.vmap(lambda a, b: a, in_dims=(0, 0))(ember.tensor(XS), 1.0)
    with pytest.raises(ValueError, match="got sizes \\[3, 4\\] for the mapped dimension"):
        func.vmap(lambda a, b: a)(ember.tensor(XS), ember.ones(4))


def test_a_number_output_with_out_dims_none_is_returned_as_is(torch_mod):
    def run(m):
        return m.func.vmap(lambda a: (a.sum(), 7), out_dims=(0, None))(m.tensor(XS))

    assert run(ember)[1] == 7
    assert_same_tree(run(ember), run(torch_mod))


# --- randomness ----------------------------------------------------------------------------

RANDOM_OPS = {
    "rand": lambda m, x: x + m.rand(3),
    "randn_like": lambda m, x: m.randn_like(x),
    "dropout": lambda m, x: m.nn.functional.dropout(x, 0.5),
    "normal_": lambda m, x: m.empty(3).normal_() + x,
}


@pytest.mark.parametrize("op", sorted(RANDOM_OPS))
def test_a_random_op_in_error_mode_raises_torchs_error(op, torch_mod):
    def run(m):
        return m.func.vmap(lambda x: RANDOM_OPS[op](m, x))(m.ones(2, 3))

    assert raised(lambda: run(ember)) == raised(lambda: run(torch_mod))
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness"):
        run(ember)


def test_a_random_op_outside_the_mapped_function_or_in_eval_dropout_is_allowed():
    out = func.vmap(lambda x: ember.nn.functional.dropout(x, 0.5, training=False))(ember.ones(2, 3))
    assert out.tolist() == [[1.0] * 3] * 2
    ember.rand(2)  # the generator is free again after vmap


def _draws(m, randomness):
    m.manual_seed(0)
    out = m.func.vmap(lambda x: x + m.rand(3), randomness=randomness)(m.zeros(4, 3))
    return out, m.rand(2)  # and where the generator stands after the vmap


def test_same_randomness_gives_every_slice_the_same_values():
    out, after = _draws(ember, "same")
    ember.manual_seed(0)
    once = ember.rand(3)
    for row in out:
        assert row.tolist() == once.tolist()
    assert after.tolist() == ember.rand(2).tolist()  # as if drawn once


def test_different_randomness_gives_each_slice_its_own_values():
    out, _ = _draws(ember, "different")
    rows = [tuple(r.tolist()) for r in out]
    assert len(set(rows)) == 4
    ember.manual_seed(0)
    np.testing.assert_array_equal(out.numpy(), ember.rand(4, 3).numpy())


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_randomness_modes_give_torchs_values_for_small_draws(randomness, torch_mod):
    """torch draws the batch at once; ember draws slice after slice from the same stream,
    which for uniform draws of a few numbers gives the same values."""
    assert_same_tree(_draws(ember, randomness), _draws(torch_mod, randomness))


def test_same_randomness_outside_and_different_inside_nest():
    ember.manual_seed(0)

    def inner(x):
        return func.vmap(lambda y: y + ember.rand(()), randomness="different")(x)

    out = func.vmap(inner, randomness="same")(ember.zeros(2, 3))
    assert out[0].tolist() == out[1].tolist()  # the same over the outer dimension
    assert len(set(out[0].tolist())) == 3  # different along the inner one


def test_randomness_same_replays_an_explicit_generator_too():
    g = ember.Generator().manual_seed(5)
    out = func.vmap(lambda x: x + ember.rand(2, generator=g), randomness="same")(ember.zeros(3, 2))
    assert out[0].tolist() == out[1].tolist() == out[2].tolist()
