"""ember.autograd.explain: one test per reason a grad is None or zero."""

import ember
from ember import nn
from ember.autograd import explain


def _net():
    ember.manual_seed(0)
    return nn.Linear(3, 2), nn.Linear(2, 1)


def test_non_leaf_suggests_retain_grad():
    x = ember.ones(3, requires_grad=True)
    h = x * 2
    h.sum().backward()
    e = explain(h)
    assert e.cause == "non_leaf"
    assert "MulBackward0" in e.summary and "retain_grad()" in str(e)


def test_requires_grad_false():
    w = ember.ones(3)
    (w * 2).sum()
    e = explain(w)
    assert e.cause == "requires_grad_false"
    assert "requires_grad=True" in str(e)
    assert "not floating point" in str(explain(ember.ones(3, dtype=ember.int64)))


def test_not_connected_to_the_loss():
    first, second = _net()
    x = ember.randn(4, 3)
    loss = first(x).sum()  # `second` is never used
    loss.backward()
    e = explain(second.weight, loss)
    assert e.cause == "not_connected"
    assert "not connected to the loss" in e.summary


def test_detached_names_the_line():
    first, second = _net()
    x = ember.randn(4, 3)
    h = first(x).detach()  # the cut
    loss = second(h).sum()
    loss.backward()
    e = explain(first.weight, loss)
    assert e.cause == "detached"
    assert f"detached by detach() at {__file__}:" in str(e)
    assert "remove the detach()" in str(e)
    assert explain(second.weight, loss).cause == "has_grad"
    # the detached tensor itself says where it came from
    origin = explain(h)
    assert origin.cause == "requires_grad_false" and "made by detach()" in str(origin)


def test_data_counts_as_detaching():
    first, second = _net()
    loss = second(first(ember.randn(4, 3)).data).sum()
    loss.backward()
    e = explain(first.bias, loss)
    assert e.cause == "detached" and "by .data at" in str(e)


def test_created_under_no_grad():
    first, second = _net()
    x = ember.randn(4, 3)
    with ember.no_grad():
        h = first(x)
    loss = second(h).sum()
    loss.backward()
    e = explain(first.weight, loss)
    assert e.cause == "no_grad"
    assert "grad mode off" in str(e) and f"{__file__}:" in str(e)
    assert "outside no_grad()" in str(e)
    assert "while grad mode was off" in str(explain(h))


def test_blocked_by_a_non_differentiable_op():
    first, second = _net()
    scores = first(ember.randn(4, 3))
    choice = scores.argmax(dim=1)  # integer indices: no gradient flows back
    loss = second(choice.float().unsqueeze(1).expand(4, 2)).sum()
    loss.backward()
    e = explain(first.weight, loss)
    assert e.cause == "non_differentiable"
    assert "argmax" in str(e) and "not differentiable" in str(e)


def test_comparison_and_integer_cast_are_reported():
    x = ember.randn(5, requires_grad=True)
    mask = (x > 0).float()
    loss = mask.sum()
    assert explain(x, loss).cause == "non_differentiable"
    assert "gt" in str(explain(x, loss))
    y = ember.randn(5, requires_grad=True)
    loss2 = y.long().float().sum()
    e = explain(y, loss2)
    assert e.cause == "non_differentiable" and "cast to int64" in str(e)


def test_backward_not_run_yet():
    first, _ = _net()
    loss = first(ember.randn(4, 3)).sum()
    e = explain(first.weight, loss)
    assert e.cause == "backward_not_run"
    assert "loss.backward()" in str(e)
    fresh, _ = _net()
    assert explain(fresh.weight).cause == "backward_not_run"


def test_gradients_zeroed_after_backward():
    first, _ = _net()
    opt = ember.optim.SGD(first.parameters(), lr=0.1)
    loss = first(ember.randn(4, 3)).sum()
    loss.backward()
    opt.zero_grad()  # set to None
    e = explain(first.weight, loss)
    assert e.cause == "zeroed" and "set to None by zero_grad()" in e.summary
    assert f"{__file__}:" in e.summary
    loss = first(ember.randn(4, 3)).sum()
    loss.backward()
    first.zero_grad(set_to_none=False)
    e = explain(first.weight, loss)
    assert e.cause == "zeroed" and "filled with zeros" in e.summary


def test_zero_gradient_that_flowed():
    w = ember.tensor([-1.0, -2.0], requires_grad=True)
    loss = w.relu().sum()  # every input is negative: ReLU passes nothing back
    loss.backward()
    e = explain(w, loss)
    assert e.cause == "zero_gradient" and "ReLU" in str(e)


def test_has_grad():
    w = ember.tensor([3.0, 4.0], requires_grad=True)
    loss = (w * w).sum() / 2
    loss.backward()
    e = explain(w, loss)
    assert e.cause == "has_grad" and "norm 5" in e.summary


def test_optimizer_and_state_dict_do_not_leave_false_notes():
    first, _ = _net()
    opt = ember.optim.SGD(first.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.zero_grad()
        first(ember.randn(4, 3)).sum().backward()
        opt.step()
    first.state_dict()
    assert first.weight._cut_log is None


def test_detach_in_place_says_where():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    y.detach_()
    e = explain(y)
    assert e.cause == "requires_grad_false"
    assert "made by detach_()" in str(e) and f"{__file__}:" in str(e)
