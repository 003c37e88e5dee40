"""Other autograd libraries, measured beside ember with ``--peers`` where they are installed:
JAX (eager for the op chain, ``jit`` for training steps), HIPS autograd and tinygrad. Each
computes the same thing as ember's case; none of them is a dependency of ember."""

from __future__ import annotations

import importlib

import numpy as np

NAMES = {"jax": "jax", "autograd": "autograd", "tinygrad": "tinygrad"}


def _smoke(name: str) -> None:
    """A tiny gradient, so that a peer that imports but cannot run (tinygrad without a
    compiler for its CPU device, say) is left out instead of failing the benchmark."""
    if name == "tinygrad":
        from tinygrad import Tensor

        x = Tensor([1.0, 2.0])
        (x * x).sum().gradient(x)[0].realize()


def available() -> list[str]:
    """The peers that import and run here."""
    found = []
    for name, module in NAMES.items():
        try:
            importlib.import_module(module)
            _smoke(name)
        except Exception as error:  # not installed, or unusable: skip it
            if not isinstance(error, ImportError):
                print(f"peer {name} skipped: {type(error).__name__}: {error}")
            continue
        found.append(name)
    return found


def _chain(ops, x, n: int = 100):
    mul, add, tanh, sub = ops
    y = x
    for _ in range(n // 4):
        y = sub(tanh(add(mul(y, 1.01), 0.1)), 0.05)
    return y


def chain_cases(peer: str, shape) -> dict:
    """The 100-op chain of ``overhead.py``: forward, and forward+backward of its sum."""
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    if peer == "jax":
        import jax
        import jax.numpy as jnp

        ops = (lambda a, b: a * b, lambda a, b: a + b, jnp.tanh, lambda a, b: a - b)
        x = jnp.asarray(data)
        grad = jax.grad(lambda v: _chain(ops, v).sum())
        return {
            "forward": lambda: _chain(ops, x).block_until_ready(),
            "forward+backward": lambda: grad(x).block_until_ready(),
        }
    if peer == "autograd":
        import autograd.numpy as anp

        import autograd

        ops = (lambda a, b: a * b, lambda a, b: a + b, anp.tanh, lambda a, b: a - b)
        grad = autograd.grad(lambda v: anp.sum(_chain(ops, v)))
        return {"forward": lambda: _chain(ops, data), "forward+backward": lambda: grad(data)}
    if peer == "tinygrad":
        from tinygrad import Tensor

        ops = (lambda a, b: a * b, lambda a, b: a + b, lambda a: a.tanh(), lambda a, b: a - b)
        x = Tensor(data)
        return {
            "forward": lambda: _chain(ops, x).realize(),
            "forward+backward": lambda: _chain(ops, x).sum().gradient(x)[0].realize(),
        }
    raise ValueError(peer)


def _init(rng, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return params


def mlp_step(peer: str, sizes, x_data, y_data, lr: float):
    """One SGD step of a ReLU MLP with softmax cross-entropy, as a function."""
    rng = np.random.default_rng(0)
    params = _init(rng, sizes)
    if peer == "jax":
        import jax
        import jax.numpy as jnp

        def loss_fn(ps, x, y):
            h = x
            for i in range(0, len(ps) - 2, 2):
                h = jax.nn.relu(h @ ps[i] + ps[i + 1])
            logits = h @ ps[-2] + ps[-1]
            return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])

        @jax.jit
        def update(ps, x, y):
            grads = jax.grad(loss_fn)(ps, x, y)
            return [p - lr * g for p, g in zip(ps, grads)]

        state = {"ps": [jnp.asarray(p) for p in params]}
        x, y = jnp.asarray(x_data), jnp.asarray(y_data)

        def step(xb=x, yb=y):
            state["ps"] = update(state["ps"], xb, yb)
            state["ps"][0].block_until_ready()

        return step
    if peer == "autograd":
        import autograd.numpy as anp

        import autograd

        def loss_fn(ps, x, y):
            h = x
            for i in range(0, len(ps) - 2, 2):
                h = anp.maximum(h @ ps[i] + ps[i + 1], 0.0)
            logits = h @ ps[-2] + ps[-1]
            shifted = logits - anp.max(logits, axis=1, keepdims=True)
            log_probs = shifted - anp.log(anp.sum(anp.exp(shifted), axis=1, keepdims=True))
            return -anp.mean(log_probs[np.arange(y.shape[0]), y])

        grad = autograd.grad(loss_fn)
        state = {"ps": params}

        def step(xb=x_data, yb=y_data):
            grads = grad(state["ps"], xb, yb)
            state["ps"] = [p - lr * g for p, g in zip(state["ps"], grads)]

        return step
    if peer == "tinygrad":
        from tinygrad import Tensor

        state = {"ps": [Tensor(p) for p in params]}
        x, y = Tensor(x_data), Tensor(y_data.astype(np.int32))

        def step(xb=x, yb=y):
            ps = state["ps"]
            h = xb
            for i in range(0, len(ps) - 2, 2):
                h = (h @ ps[i] + ps[i + 1]).relu()
            loss = (h @ ps[-2] + ps[-1]).sparse_categorical_crossentropy(yb)
            grads = loss.gradient(*ps)
            state["ps"] = [(p - lr * g).realize() for p, g in zip(ps, grads)]

        return step
    raise ValueError(peer)


def digits_epoch(peer: str, x_data, y_data, batch: int = 64, lr: float = 0.05):
    """One shuffled epoch of the digits MLP (64-128-10) in minibatches."""
    rng = np.random.default_rng(0)
    n = len(x_data)
    if peer == "jax":
        import jax.numpy as jnp

        step = mlp_step(peer, (64, 128, 10), x_data[:batch], y_data[:batch], lr)
        xs, ys = jnp.asarray(x_data), jnp.asarray(y_data)

        def epoch():
            order = rng.permutation(n)
            for i in range(0, n, batch):
                idx = jnp.asarray(order[i : i + batch])
                step(xs[idx], ys[idx])

        return epoch
    if peer == "tinygrad":
        from tinygrad import Tensor

        step = mlp_step(peer, (64, 128, 10), x_data[:batch], y_data[:batch], lr)

        def epoch():
            order = rng.permutation(n)
            for i in range(0, n, batch):
                idx = order[i : i + batch]
                step(Tensor(x_data[idx]), Tensor(y_data[idx].astype(np.int32)))

        return epoch
    step = mlp_step(peer, (64, 128, 10), x_data[:batch], y_data[:batch], lr)

    def epoch():
        order = rng.permutation(n)
        for i in range(0, n, batch):
            idx = order[i : i + batch]
            step(x_data[idx], y_data[idx])

    return epoch
