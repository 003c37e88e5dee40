"""functional_call, stack_module_state and replace_all_batch_norm_modules_, as torch.func
defines them."""

import numpy as np
import pytest

import ember
from ember import func, nn
from tests.func.trees import assert_same_tree, raised


def _linear(m):
    m.manual_seed(0)
    return m.nn.Linear(2, 1)


# --- functional_call ---------------------------------------------------------------------


def test_functional_call_uses_the_given_tensors_and_leaves_the_module_as_it_was():
    lin = _linear(ember)
    weight, bias = lin.weight, lin.bias
    out = func.functional_call(
        lin, {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}, ember.tensor([[2.0, 3.0]])
    )
    assert out.tolist() == [[5.0]]
    assert lin.weight is weight and lin.bias is bias
    assert dict(lin.named_parameters()) == {"weight": weight, "bias": bias}


def test_functional_call_with_a_tuple_of_parameter_and_buffer_dicts(torch_mod):
    def run(m):
        m.manual_seed(0)
        net = m.nn.Sequential(m.nn.Linear(3, 2), m.nn.BatchNorm1d(2)).eval()
        params = {k: v.detach() * 2 for k, v in net.named_parameters()}
        buffers = {"1.running_mean": m.tensor([1.0, -1.0]), "1.running_var": m.tensor([4.0, 0.25])}
        x = m.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]])
        out = m.func.functional_call(net, (params, buffers), (x,))
        return out, net(x)  # the second: the module's own state again

    ours, own = run(ember)
    assert not np.allclose(ours.detach().numpy(), own.detach().numpy())
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-6)


def test_functional_call_passes_kwargs_and_restores_the_module_after_an_error():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.tensor(2.0))

        def forward(self, x, *, fail=False):
            if fail:
                raise ValueError("failed inside")
            return x * self.w

    mod = Scale()
    w = mod.w
    assert func.functional_call(mod, {"w": ember.tensor(5.0)}, (ember.tensor(3.0),)).item() == 15
    with pytest.raises(ValueError, match="failed inside"):
        func.functional_call(mod, {"w": ember.tensor(5.0)}, (ember.tensor(3.0),), {"fail": True})
    assert mod.w is w


FUNCTIONAL_CALL_ERRORS = {
    "repeated keys": lambda m: m.func.functional_call(
        _linear(m), ({"weight": m.ones(1, 2)}, {"weight": m.ones(1, 2)}), (m.ones(1, 2),)
    ),
    "not dicts": lambda m: m.func.functional_call(_linear(m), 3, (m.ones(1, 2),)),
    "a tuple with a non-dict": lambda m: m.func.functional_call(
        _linear(m), ({"weight": m.ones(1, 2)}, 3), (m.ones(1, 2),)
    ),
    "strict with missing and unexpected keys": lambda m: m.func.functional_call(
        _linear(m), {"weight": m.ones(1, 2), "scale": m.ones(1)}, (m.ones(1, 2),), strict=True
    ),
    "a value that is not a tensor": lambda m: m.func.functional_call(
        _linear(m), {"bias": 3.0}, (m.ones(1, 2),)
    ),
}


@pytest.mark.parametrize("case", sorted(FUNCTIONAL_CALL_ERRORS))
def test_functional_call_raises_torchs_error(case, torch_mod):
    def run(m):
        return raised(lambda: FUNCTIONAL_CALL_ERRORS[case](m))

    ours, theirs = run(ember), run(torch_mod)
    # the repr of a torch tensor in "... is not an instance of torch.Tensor" differs
    assert ours[0] == theirs[0]
    if case != "a value that is not a tensor":
        assert ours[1] == theirs[1]


def test_functional_call_strict_names_the_missing_and_unexpected_keys():
    with pytest.raises(RuntimeError) as info:
        func.functional_call(
            _linear(ember),
            {"weight": ember.ones(1, 2), "scale": ember.ones(1)},
            (ember.ones(1, 2),),
            strict=True,
        )
    assert str(info.value) == (
        "Error(s) in reparametrizing for Linear:\n\tUnexpected key(s): 'scale'.\n\t"
        "Missing key(s): 'bias'."
    )


class _Tied(nn.Module):
    """An output layer sharing its weight with an embedding, as language models do."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(2, 2, bias=False)
        self.out = nn.Linear(2, 2, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, x):
        return self.out(self.embed(x))


def test_functional_call_ties_weights_unless_told_not_to():
    mod = _Tied()
    x = ember.tensor([[1.0, 2.0]])
    two = ember.eye(2) * 2
    # tie_weights=True: out.weight follows embed.weight
    assert func.functional_call(mod, {"embed.weight": two}, (x,)).tolist() == [[4.0, 8.0]]
    untied = func.functional_call(mod, {"embed.weight": two}, (x,), tie_weights=False)
    expected = (x.numpy() @ two.numpy().T) @ mod.out.weight.detach().numpy().T
    np.testing.assert_allclose(untied.detach().numpy(), expected, rtol=1e-6)
    with pytest.raises(
        ValueError, match=r"got multiple values for keys \['embed.weight', 'out.weight'\]"
    ):
        func.functional_call(mod, {"embed.weight": two, "out.weight": ember.eye(2)}, (x,))


def test_functional_call_hands_back_what_the_module_assigns_during_the_call(torch_mod):
    """A module that does ``self.count = self.count + 1`` updates the caller's dict, as in
    torch; the module keeps its own buffer."""

    def run(m):
        class Counter(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("count", m.tensor(0.0))

            def forward(self, x):
                self.count = self.count + 1
                return x * self.count

        mod = Counter()
        state = {"count": m.tensor(10.0)}
        out = m.func.functional_call(mod, state, (m.tensor(2.0),))
        return out, state["count"], mod.count

    out, count, own = run(ember)
    assert (out.item(), count.item(), own.item()) == (22.0, 11.0, 0.0)
    assert_same_tree(run(ember), run(torch_mod))


def test_functional_call_of_gradients_through_vmap_of_a_module():
    """The parameters given are ordinary tensors: autograd reaches them through the call."""
    lin = _linear(ember)
    w = ember.tensor([[1.0, -1.0]], requires_grad=True)
    out = func.functional_call(lin, {"weight": w}, (ember.tensor([[2.0, 5.0]]),))
    out.sum().backward()
    assert w.grad.tolist() == [[2.0, 5.0]] and lin.weight.grad is None


# --- stack_module_state --------------------------------------------------------------------


def test_stack_module_state_stacks_each_parameter_and_buffer_by_name():
    ember.manual_seed(0)
    models = [nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)) for _ in range(3)]
    params, buffers = func.stack_module_state(models)
    assert list(params) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert list(buffers) == ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    assert params["0.weight"].shape == (3, 2, 3) and buffers["1.num_batches_tracked"].shape == (3,)
    for i, model in enumerate(models):
        np.testing.assert_array_equal(
            params["0.weight"][i].detach().numpy(), model[0].weight.detach().numpy()
        )
    # new leaves, unrelated to the models' parameters: an optimizer can train them
    assert params["0.bias"].is_leaf and params["0.bias"].requires_grad
    assert not buffers["1.running_mean"].requires_grad


def test_stack_module_state_matches_torch(torch_mod):
    def run(m):
        m.manual_seed(0)
        return m.func.stack_module_state([m.nn.Linear(3, 2) for _ in range(4)])

    assert_same_tree(run(ember), run(torch_mod))


def _frozen(m):
    m.manual_seed(0)
    models = [m.nn.Linear(2, 2), m.nn.Linear(2, 2)]
    models[1].bias.requires_grad_(False)
    return models


STACK_ERRORS = {
    "no models": lambda m: m.func.stack_module_state([]),
    "mixed modes": lambda m: m.func.stack_module_state(
        [m.nn.Linear(2, 2), m.nn.Linear(2, 2).eval()]
    ),
    "mixed classes": lambda m: m.func.stack_module_state([m.nn.Linear(2, 2), m.nn.Tanh()]),
    "mixed requires_grad": lambda m: m.func.stack_module_state(_frozen(m)),
}


@pytest.mark.parametrize("case", sorted(STACK_ERRORS))
def test_stack_module_state_raises_torchs_error(case, torch_mod):
    assert raised(lambda: STACK_ERRORS[case](ember)) == raised(
        lambda: STACK_ERRORS[case](torch_mod)
    )


# --- replace_all_batch_norm_modules_ -------------------------------------------------------


def _batch_norm_net(m):
    m.manual_seed(0)
    return m.nn.Sequential(
        m.nn.Linear(3, 4), m.nn.BatchNorm1d(4), m.nn.Sequential(m.nn.BatchNorm1d(4))
    )


def test_replace_all_batch_norm_modules_drops_running_statistics_everywhere():
    net = _batch_norm_net(ember)
    assert func.replace_all_batch_norm_modules_(net) is net
    for bn in (net[1], net[2][0]):
        assert bn.running_mean is None and bn.running_var is None
        assert bn.num_batches_tracked is None and not bn.track_running_stats
    assert list(dict(net.named_buffers())) == []


def test_vmap_over_a_batch_norm_model_after_replacing_normalizes_each_slice(torch_mod):
    """Per-sample-style vmap over mini-batches of a training-mode model with batch norm: each
    slice normalized with its own statistics, no running statistics to update."""

    def run(m):
        net = m.func.replace_all_batch_norm_modules_(_batch_norm_net(m))
        m.manual_seed(1)
        batches = m.randn(3, 5, 3)
        params = {k: v.detach() for k, v in net.named_parameters()}
        out = m.func.vmap(lambda p, x: m.func.functional_call(net, p, (x,)), in_dims=(None, 0))(
            params, batches
        )
        return out, m.stack([net(b) for b in batches]).detach()

    out, loop = run(ember)
    np.testing.assert_allclose(out.numpy(), loop.numpy(), rtol=1e-6)
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-5, atol=1e-6)
