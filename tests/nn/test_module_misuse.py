"""Module registration and forward pre-hooks refuse misuse as torch does (nn/modules/module.py)."""

import pytest

import ember

EXISTS = "already exists"


def _registrations(m):
    """(id, call) pairs that register a name already taken by something else."""
    nn = m.nn
    return {
        "add_module over a parameter": lambda: nn.Linear(2, 2).add_module("weight", nn.ReLU()),
        "register_module over a parameter": lambda: nn.Linear(2, 2).register_module(
            "bias", nn.ReLU()
        ),
        "add_module over a buffer": lambda: nn.BatchNorm1d(2).add_module("running_mean", nn.ReLU()),
        "register_parameter over a module": lambda: nn.Sequential(nn.ReLU()).register_parameter(
            "0", nn.Parameter(m.ones(1))
        ),
        "register_buffer over a parameter": lambda: nn.Linear(1, 1).register_buffer(
            "weight", m.ones(1)
        ),
        "register_parameter over a buffer": lambda: nn.BatchNorm1d(2).register_parameter(
            "running_var", nn.Parameter(m.ones(2))
        ),
        "add_module over a method": lambda: nn.Linear(2, 2).add_module("forward", nn.ReLU()),
    }


CASES = list(_registrations(ember))


@pytest.mark.parametrize("case", CASES)
def test_registering_over_another_kind_of_attribute_raises(case):
    with pytest.raises(KeyError, match=EXISTS):
        _registrations(ember)[case]()


@pytest.mark.parametrize("case", CASES)
def test_registering_over_another_kind_of_attribute_raises_as_torch(case, torch_mod):
    with pytest.raises(KeyError) as theirs:
        _registrations(torch_mod)[case]()
    with pytest.raises(KeyError) as ours:
        _registrations(ember)[case]()
    assert str(ours.value) == str(theirs.value)


def test_re_registering_the_same_kind_replaces_it(torch_mod):
    for m in (ember, torch_mod):
        seq = m.nn.Sequential(m.nn.Linear(1, 1))
        seq.add_module("0", m.nn.ReLU())
        assert isinstance(seq[0], m.nn.ReLU)
        layer = m.nn.Linear(1, 1)
        layer.register_parameter("weight", m.nn.Parameter(m.zeros(1, 1)))
        assert layer.weight.tolist() == [[0.0]]
        layer.weight = None  # a parameter slot takes None
        assert layer.weight is None


@pytest.mark.parametrize(
    ("register", "message"),
    [
        (lambda m: m.nn.Linear(1, 1).register_parameter("a.b", None),
         'parameter name can\'t contain "."'),
        (lambda m: m.nn.Linear(1, 1).register_buffer("a.b", None),
         'buffer name can\'t contain "."'),
        (lambda m: m.nn.Linear(1, 1).add_module("a.b", None),
         'module name can\'t contain ".", got: a.b'),
        (lambda m: m.nn.Linear(1, 1).register_buffer("", None),
         'buffer name can\'t be empty string ""'),
    ],
)  # fmt: skip
def test_bad_names_raise_torchs_key_error(register, message, torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(KeyError) as info:
            register(m)
        assert str(info.value) == repr(message)


def _pre_hooked_linear(m, result, with_kwargs=False):
    layer = m.nn.Linear(2, 2)
    if with_kwargs:
        layer.register_forward_pre_hook(lambda mod, args, kwargs: result(args), with_kwargs=True)
    else:
        layer.register_forward_pre_hook(lambda mod, args: result(args))
    return layer(m.ones(3, 2))


NOT_A_TENSOR = [
    ("a number", lambda args: 3, "not int"),
    ("a string", lambda args: "abc", "not str"),
    ("a list", lambda args: [args[0]], "not list"),
    ("a tuple holding a number", lambda args: (3,), "not int"),
]


@pytest.mark.parametrize(
    ("result", "phrase"), [c[1:] for c in NOT_A_TENSOR], ids=[c[0] for c in NOT_A_TENSOR]
)
def test_a_pre_hook_result_becomes_the_argument(result, phrase):
    """Anything but a tuple is the single new argument, as in torch: Linear then refuses it."""
    with pytest.raises(TypeError) as info:
        _pre_hooked_linear(ember, result)
    assert str(info.value) == f"linear(): argument 'input' (position 1) must be Tensor, {phrase}"


@pytest.mark.parametrize(
    ("result", "phrase"), [c[1:] for c in NOT_A_TENSOR], ids=[c[0] for c in NOT_A_TENSOR]
)
def test_a_pre_hook_result_becomes_the_argument_in_torch(result, phrase, torch_mod):
    with pytest.raises(TypeError) as info:
        _pre_hooked_linear(torch_mod, result)
    assert str(info.value) == f"linear(): argument 'input' (position 1) must be Tensor, {phrase}"


def test_a_pre_hook_returning_a_tensor_replaces_the_argument(torch_mod):
    for m in (ember, torch_mod):
        m.manual_seed(0)
        plain = m.nn.Linear(2, 2)(m.ones(3, 2) * 2)
        m.manual_seed(0)
        hooked = _pre_hooked_linear(m, lambda args: args[0] * 2)
        assert hooked.tolist() == plain.tolist()


@pytest.mark.parametrize("result", [lambda args: 3, lambda args: (args,)])
def test_a_kwargs_pre_hook_must_return_args_and_kwargs(result, torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of"):
            _pre_hooked_linear(m, result, with_kwargs=True)
