"""torch.func's tutorials as a user runs them: per-sample gradients (a script beside this
file), model ensembling and neural tangent kernels (written once against a module ``torch``,
ember or PyTorch), with the tutorials' models shrunk to run quickly. Same seeds give the same
weights and data in both libraries (ember's random streams are PyTorch's), so the values
compare directly."""

import copy
import types
from pathlib import Path

import numpy as np

import ember

# --- per-sample gradients ("Per-sample-gradients" tutorial) ---------------------------------

SCRIPT = Path(__file__).with_name("per_sample_gradients.py")


def run_script(library: str) -> types.ModuleType:
    """per_sample_gradients.py run as a script, its imports naming ``library``."""
    source = SCRIPT.read_text()
    if library == "torch":
        source = source.replace("ember", "torch")
    module = types.ModuleType(f"per_sample_gradients_{library}")
    exec(compile(source, str(SCRIPT), "exec"), module.__dict__)
    return module


def test_per_sample_gradients_with_vmap_of_grad_equal_a_loop_of_backward_passes():
    script = run_script("ember")  # it asserts allclose itself, as the tutorial does
    ft, loop = script.ft_per_sample_grads, script.per_sample_grads
    assert list(ft) == [name for name, _ in script.model.named_parameters()]
    assert ft["conv1.weight"].shape == (6, 4, 1, 3, 3) and ft["fc2.bias"].shape == (6, 10)
    for (name, g), expected in zip(ft.items(), loop):
        np.testing.assert_allclose(g.numpy(), expected.numpy(), rtol=1e-5, atol=1e-7, err_msg=name)
        assert not g.requires_grad  # the parameters were detached: nothing tracks the result


def test_per_sample_gradients_script_gives_torchs_values(torch_mod):
    ours = run_script("ember").ft_per_sample_grads
    theirs = run_script("torch").ft_per_sample_grads
    assert list(ours) == list(theirs)
    for name in theirs:
        np.testing.assert_allclose(
            ours[name].numpy(), theirs[name].numpy(), rtol=1e-5, atol=1e-6, err_msg=name
        )


# --- model ensembling ("Model ensembling" tutorial) ---------------------------------------


def ensemble_predictions(torch):
    """The tutorial's program, its base model a copy of models[0] (ember has no 'meta' device,
    which the tutorial moves it to); returns both ensembles' predictions and the parameters."""
    nn = torch.nn
    F = torch.nn.functional
    stack_module_state = torch.func.stack_module_state
    functional_call = torch.func.functional_call
    vmap = torch.vmap

    torch.manual_seed(0)

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(49, 16)
            self.fc2 = nn.Linear(16, 16)
            self.fc3 = nn.Linear(16, 10)

        def forward(self, x):
            x = x.flatten(1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.fc2(x)
            x = F.relu(x)
            x = self.fc3(x)
            return x

    num_models = 4
    data = torch.randn(10, 8, 1, 7, 7)
    models = [SimpleMLP() for _ in range(num_models)]

    minibatches = data[:num_models]
    predictions_diff_minibatch_loop = [model(mb) for model, mb in zip(models, minibatches)]
    minibatch = data[0]
    predictions2 = [model(minibatch) for model in models]

    params, buffers = stack_module_state(models)
    base_model = copy.deepcopy(models[0])

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))

    assert [p.size(0) for p in params.values()] == [num_models] * 6
    predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
    assert torch.allclose(
        predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3, rtol=1e-5
    )
    predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)
    return predictions1_vmap, predictions2_vmap, params


def test_model_ensembling_with_stack_module_state_and_vmap_equals_each_model():
    per_minibatch, shared_minibatch, params = ensemble_predictions(ember)
    assert per_minibatch.shape == (4, 8, 10) and shared_minibatch.shape == (4, 8, 10)
    # the stacked parameters are leaves an optimizer can train: gradients flow through vmap
    assert params["fc1.weight"].is_leaf and params["fc1.weight"].requires_grad
    shared_minibatch.sum().backward()
    assert params["fc3.bias"].grad.tolist() == [[8.0] * 10] * 4


def test_model_ensembling_gives_torchs_values(torch_mod):
    ours = ensemble_predictions(ember)
    theirs = ensemble_predictions(torch_mod)
    for a, b in zip(ours[:2], theirs[:2]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


# --- neural tangent kernels ("Neural Tangent Kernels" tutorial) ---------------------------


def ntk(torch, compute="full"):
    """The tutorial's two ways to an empirical NTK: Jacobian contraction and NTK-vector
    products; returns both."""
    nn = torch.nn
    functional_call, vmap = torch.func.functional_call, torch.func.vmap
    jacrev, vjp, jvp = torch.func.jacrev, torch.func.vjp, torch.func.jvp

    torch.manual_seed(0)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, (3, 3))
            self.conv2 = nn.Conv2d(4, 4, (3, 3))
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            x = self.conv1(x)
            x = x.relu()
            x = self.conv2(x)
            x = x.relu()
            x = x.flatten(1)
            x = self.fc(x)
            return x

    x_train = torch.randn(3, 3, 8, 8)
    x_test = torch.randn(2, 3, 8, 8)
    net = CNN()
    net.eval()
    params = {k: v.detach() for k, v in net.named_parameters()}

    def fnet_single(params, x):
        return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute="full"):
        jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
        jac1 = jac1.values()
        jac1 = [j.flatten(2) for j in jac1]
        jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
        jac2 = jac2.values()
        jac2 = [j.flatten(2) for j in jac2]
        einsum_expr = {"full": "Naf,Mbf->NMab", "trace": "Naf,Maf->NM", "diagonal": "Naf,Maf->NMa"}
        result = torch.stack(
            [torch.einsum(einsum_expr[compute], j1, j2) for j1, j2 in zip(jac1, jac2)]
        )
        return result.sum(0)

    def empirical_ntk_ntk_vps(func, params, x1, x2, compute="full"):
        def get_ntk(x1, x2):
            def func_x1(params):
                return func(params, x1)

            def func_x2(params):
                return func(params, x2)

            output, vjp_fn = vjp(func_x1, params)

            def get_ntk_slice(vec):
                vjps = vjp_fn(vec)
                _, jvps = jvp(func_x2, (params,), vjps)
                return jvps

            basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(
                output.numel(), -1
            )
            return vmap(get_ntk_slice)(basis)

        result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
        if compute == "diagonal":
            return torch.einsum("NMKK->NMK", result)
        return result

    by_jacobians = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, compute)
    by_products = empirical_ntk_ntk_vps(fnet_single, params, x_train, x_test, compute)
    return by_jacobians, by_products


def test_ntk_by_jacobian_contraction_equals_ntk_by_vector_products():
    by_jacobians, by_products = ntk(ember)
    assert by_jacobians.shape == (3, 2, 10, 10)
    np.testing.assert_allclose(by_jacobians.numpy(), by_products.numpy(), rtol=1e-4, atol=1e-5)
    diagonal = ntk(ember, "diagonal")
    np.testing.assert_allclose(
        diagonal[0].numpy(), np.einsum("NMKK->NMK", by_jacobians.numpy()), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(diagonal[0].numpy(), diagonal[1].numpy(), rtol=1e-4, atol=1e-5)


def test_ntk_gives_torchs_values(torch_mod):
    for ours, theirs in zip(ntk(ember), ntk(torch_mod)):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5)


# --- hessian of a function of a dict --------------------------------------------------------


def dict_hessian(torch):
    hessian = torch.func.hessian
    params = {
        "w": torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64),
        "b": torch.tensor(0.25, dtype=torch.float64),
    }
    x = torch.tensor([1.0, 2.0, -1.0], dtype=torch.float64)

    def loss(p, x):
        return torch.tanh(p["w"] @ x + p["b"]) ** 2 + (p["w"] ** 3).sum() * p["b"]

    return hessian(loss)(params, x), hessian(loss, argnums=(0, 1))(params, x)


def test_hessian_of_a_dict_is_a_dict_of_dicts_with_the_second_derivatives():
    h, _ = dict_hessian(ember)
    assert list(h) == ["w", "b"] and list(h["w"]) == ["w", "b"]
    assert h["w"]["w"].shape == (3, 3) and h["w"]["b"].shape == (3,) and h["b"]["b"].shape == ()
    # f = tanh(u)² + b Σw³ with u = w·x + b: ∂²f/∂b∂w_i = g''(u) x_i + 3 w_i², g = tanh²
    u = np.tanh(0.5 - 2.0 - 2.0 + 0.25)
    g2 = 2 * (1 - u**2) ** 2 - 4 * u**2 * (1 - u**2)
    x, w = np.array([1.0, 2.0, -1.0]), np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(h["w"]["b"].numpy(), g2 * x + 3 * w**2, rtol=1e-12)
    np.testing.assert_allclose(h["b"]["w"].numpy(), g2 * x + 3 * w**2, rtol=1e-12)
    np.testing.assert_allclose(
        h["w"]["w"].numpy(), g2 * np.outer(x, x) + np.diag(6 * w * 0.25), rtol=1e-12
    )


def test_hessian_of_a_dict_gives_torchs_values_and_structure(torch_mod):
    """hessian(f) and hessian(f, argnums=(0, 1)): the same nest of dicts and tuples (compared
    as pytree specs) and the same values."""
    from torch.utils import _pytree as torch_pytree

    from ember.utils import _pytree

    for ours, theirs in zip(dict_hessian(ember), dict_hessian(torch_mod)):
        our_leaves, our_spec = _pytree.tree_flatten(ours)
        their_leaves, their_spec = torch_pytree.tree_flatten(theirs)
        assert repr(our_spec) == repr(their_spec)
        for a, b in zip(our_leaves, their_leaves):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
