"""Which facts each public op has: derivative, forward-mode rule, autocast category, ONNX symbolic.

The four facts live in four tables keyed three ways (DESIGN.md: "a test lists for every public
op which facts it has"): the derivative is a graph-node class an op records (``ops/``,
``autograd/node.py``), the forward-mode rule is looked up by that class's name
(``autograd/forward_rules.py``), the autocast category by the function's path
(``amp/policy.py``), the ONNX symbolic by the op's name (``onnx/_symbolics*.py``). This module
derives them for every public function of ``ember``, ``ember.nn.functional``, ``ember.linalg``,
``ember.special`` and ``ember.fft``; ``tests/op_facts.txt`` holds what they were, with a reason
for every missing fact, and ``tests/test_op_facts.py`` fails when the two differ.

Regenerate the table (keeping the reasons already written) with:

    .venv/bin/python -m tests.op_facts --write

How the derivative is found: first by calling the op (``probe``) on small float64 tensors
that require grad (2-D, a symmetric positive definite 3x3, 1-D, 3-, 4- and 5-D), with a few
argument patterns; the first call that works tells whether the output records a node and
which (its class gives the forward rule), or that the op returned its input untouched, or no
tensor at all (then it is not an op); ops that take integers only are called on int64
tensors. Where no simple call works, the op's code (its nested functions and closures too) is
read for the names it uses: a graph-node class (``Node`` subclass) or ``autograd.Function``
subclass it reaches, directly or through ember's private helpers, is a derivative of its own
(``node``, ``function``); calling another public op (a Tensor method, a name looked up by
string) makes it a composite, differentiable when what it calls is (``composite``). Reading
code over-approximates (a helper shared with a differentiable op counts); the probe does not.
The probes' random draws are undone (the default generator's state is restored).

Facts, one token each (``-`` and a reason where there is none):

- ``grad``: ``node`` | ``function`` | ``composite`` | ``input`` (returns its input as it is)
- ``fwd``: the forward rules its node classes resolve to, ``+``-joined: ``rule`` (one of its
  own), ``elementwise``, ``vjp`` (the generic transposed-VJP rule); ``composite`` through
  what it calls
- ``amp``: ``<CUDA policy>/<CPU policy>`` from ``amp/policy.py`` (``-`` for none on a device)
- ``onnx``: ``symbolic`` (a recorded op with a mapping), ``inner`` (not a recorded op: the
  exporter maps the ops it calls)
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import types
from pathlib import Path

TABLE = Path(__file__).with_name("op_facts.txt")
NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft")
FACTS = ("grad", "fwd", "amp", "onnx")
REGENERATE = ".venv/bin/python -m tests.op_facts --write"

# first parameters of public functions that do not take a tensor: factories, settings, helpers
NOT_TENSOR_FIRST = frozenset(
    "<none> n listed start window_length device_type obj fn enabled dtype d mode seed"
    " debug_mode precision num kwargs new_state func shapes from_ f ext ndarray buffer device"
    " row s low size size_average op node_cls node data value operands".split()
)
# ops whose public first parameter is ``n`` but which take a tensor next
TENSOR_AFTER_N = frozenset(("polygamma",))


def _first_parameter(fn) -> str:
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return "<none>"
    return names[0] if names else "<none>"


def public_functions() -> dict:
    """``namespace.name`` -> function, for every public function of the namespaces."""
    out = {}
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        for name in sorted(dir(module)):
            obj = getattr(module, name)
            if name.startswith("_") or isinstance(obj, (type, types.ModuleType)):
                continue
            if callable(obj):
                out[f"{namespace}.{name}"] = inspect.unwrap(obj)  # behind out= wrappers
    return out


def not_an_op(path: str, fn) -> str | None:
    """Why ``fn`` is not an op making tensors from tensors (None: it is one)."""
    module = getattr(fn, "__module__", "") or ""
    if module in ("ember.ops._dispatch", "ember.autograd.node"):
        return f"an internal helper of {module} in ember's namespace"
    name = path.rsplit(".", 1)[1]
    if name.startswith("set_") and name != "set_":
        return "a setting"
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    if parameters and "dtype" in str(parameters[0].annotation):
        return "takes a dtype"
    first = _first_parameter(fn)
    if first in NOT_TENSOR_FIRST and path.rsplit(".", 1)[1] not in TENSOR_AFTER_N:
        return f"takes no tensor first ({first})"
    return None


class _Analysis:
    """Reads op code for the node classes and public ops it reaches."""

    def __init__(self, ops: dict):
        import ember
        from ember.autograd.function import Function
        from ember.autograd.node import Node

        self.Node, self.Function = Node, Function
        self.op_ids = {id(fn): path for path, fn in ops.items()}
        methods = {}
        for name, obj in vars(ember.Tensor).items():
            if isinstance(obj, types.FunctionType):
                methods[name] = obj
        self.methods = methods
        # ops named by a string (forwarders that look their target up by name)
        self.by_name = {}
        for path in sorted(ops, key=lambda p: (not p.startswith("ember.nn.functional."), p)):
            self.by_name.setdefault(path.rsplit(".", 1)[1], ops[path])

    def _referenced(self, fn) -> list:
        found = []
        globals_ = getattr(fn, "__globals__", {})
        codes = [fn.__code__]
        names = set()
        while codes:
            code = codes.pop()
            names.update(code.co_names)
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            found.extend(self.by_name[c] for c in code.co_consts if c in self.by_name)
        modules = []
        for name in names:
            if name in globals_:
                obj = globals_[name]
                if isinstance(obj, types.ModuleType):
                    modules.append(obj)
                else:
                    found.append(obj)
            elif name in self.methods:
                found.append(self.methods[name])
        for module in modules:
            if module.__name__.startswith("ember"):
                for name in names:
                    obj = getattr(module, name, None)
                    if obj is not None and not isinstance(obj, types.ModuleType):
                        found.append(obj)
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            found.append(self.by_name.get(value, value) if isinstance(value, str) else value)
        expanded = []
        for obj in found:
            if isinstance(obj, dict):
                expanded.extend(obj.values())
            elif isinstance(obj, (tuple, list, frozenset, set)):
                expanded.extend(obj)
        return found + expanded

    def reach(self, start) -> tuple:
        """(node classes, Function classes, public ops called) reached from ``start``."""
        nodes, functions, calls = set(), set(), set()
        seen, todo = {id(start)}, [start]
        while todo:
            fn = todo.pop()
            for obj in self._referenced(fn):
                if isinstance(obj, type):
                    if issubclass(obj, self.Node) and obj is not self.Node:
                        nodes.add(obj)
                    elif issubclass(obj, self.Function) and obj is not self.Function:
                        functions.add(obj)
                    continue
                if not isinstance(obj, types.FunctionType) or id(obj) in seen:
                    continue
                if not (obj.__module__ or "").startswith("ember"):
                    continue
                seen.add(id(obj))
                if id(obj) in self.op_ids:
                    calls.add(self.op_ids[id(obj)])
                elif obj.__name__ in self.methods and self.methods[obj.__name__] is obj:
                    calls.add(f"Tensor.{obj.__name__}")
                else:
                    todo.append(obj)
        return nodes, functions, calls


# calls tried in turn, on tensors of 2 to 5 dimensions; the first that works says the facts
_PROBES = (
    lambda op, x: op(x),
    lambda op, x: op(x, x),
    lambda op, x: op(x, x.detach()),  # losses: a target that needs no grad
    lambda op, x: op(x, 1),
    lambda op, x: op(x, 0),
    lambda op, x: op(x, -1),
    lambda op, x: op(x, 0, 1),
    lambda op, x: op(x, [x.shape[-1]]),
    lambda op, x: op(x, x, x),
    lambda op, x: op(x, 0.5, True),  # dropout in training: p=0 or eval returns the input
)
_PROBE_SHAPES = ((3, 4), (3, 3), (3,), (1, 2, 4), (1, 2, 4, 4), (1, 2, 4, 4, 4))


def _probe_inputs():
    """Float64 tensors that require grad ((3, 3) is symmetric positive definite, for the
    factorizations), then int64 ones for the ops that take integers only."""
    import ember

    for shape in _PROBE_SHAPES:
        n = 1
        for size in shape:
            n *= size
        leaf = ember.arange(1.0, n + 1.0, dtype=ember.float64).reshape(shape).div(n + 1)
        if shape == (3, 3):
            leaf = ember.eye(3, dtype=ember.float64) * 2 + 0.1
        yield leaf.requires_grad_()
    for shape in _PROBE_SHAPES[:3]:
        yield ember.arange(1, 1 + shape[0] * (shape[1] if len(shape) > 1 else 1)).reshape(shape)


def probe(fn) -> tuple | None:
    """Call ``fn`` on simple tensors; the first call that works gives ``(kind, node class or
    None, output floating, input floating)``, kind ``"tensor"``, ``"input"`` (it returned its
    input untouched) or ``"value"`` (no tensor: the node slot names the type). None where no
    simple call works."""
    import warnings

    import numpy as np

    import ember

    returned_input = None  # kept while some other call may show a node
    for leaf in _probe_inputs():
        if returned_input and not leaf.is_floating_point():
            break  # a float call worked: the integer ones would say less
        for call in _PROBES:
            x = leaf * 1 if leaf.requires_grad else leaf.clone()  # in-place ops may run on x
            before = x.grad_fn
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    out = call(fn, x)
            except Exception:  # noqa: BLE001 - the probe only looks for a call that works
                continue
            first = out[0] if isinstance(out, (tuple, list)) and out else out
            in_floating = leaf.is_floating_point()
            if not isinstance(first, ember.Tensor):
                return "value", type(out).__name__, False, in_floating
            if first is x and x.grad_fn is before and in_floating:
                returned_input = returned_input or ("input", None, True, True)
                continue
            node = first.grad_fn
            node_cls = None if node is None else type(node)
            return "tensor", node_cls, first.is_floating_point(), in_floating
    return returned_input


def _forward_kind(node_cls) -> str:
    from ember.autograd import forward_rules

    rule = forward_rules.rule_of(node_cls)
    if rule is forward_rules.transposed_vjp:
        return "vjp"
    if rule is forward_rules.elementwise:
        return "elementwise"
    return "rule"


def _amp_categories() -> dict:
    from ember.amp.policy import POLICY

    out = {}
    for where, cuda, cpu in POLICY:
        for entry in where.split():
            module, _, name = entry.partition(":")
            out[f"{module}.{name}"] = f"{cuda or '-'}/{cpu or '-'}"
    return out


def compute() -> dict:
    """path -> {fact: token or '-'} for every op; path -> 'not an op: why' for the others."""
    from ember.onnx._symbolics import SYMBOLICS
    from ember.profiler._ops import op_functions

    functions = public_functions()
    table, ops = {}, {}
    for path, fn in functions.items():
        why = not_an_op(path, fn)
        if why is None:
            ops[path] = fn
        else:
            table[path] = f"not an op: {why}"
    import ember

    analysis = _Analysis(ops)
    rng_state = ember.get_rng_state()  # the probes draw from the default generator
    recorded = {id(fn): name for fn, name in op_functions()}
    amp = _amp_categories()
    reached = {path: analysis.reach(fn) for path, fn in ops.items()}
    # a Tensor method call resolves to the op of the same function object, when it is one
    by_id = {id(fn): path for path, fn in ops.items()}
    method_paths = {f"Tensor.{name}": by_id.get(id(fn)) for name, fn in analysis.methods.items()}
    method_reach = {}
    for name, fn in analysis.methods.items():
        key = f"Tensor.{name}"
        if method_paths[key] is None:
            method_reach[key] = analysis.reach(fn)
    has_grad = {path: bool(r[0] or r[1]) for path, r in reached.items()}
    has_grad.update({key: bool(r[0] or r[1]) for key, r in method_reach.items()})
    calls_of = {path: r[2] for path, r in reached.items()}
    calls_of.update({key: r[2] for key, r in method_reach.items()})
    changed = True
    while changed:  # composites: differentiable when something they call is
        changed = False
        for path, calls in calls_of.items():
            if not has_grad[path]:
                for call in calls:
                    target = method_paths.get(call) or call
                    if has_grad.get(target):
                        has_grad[path] = changed = True
                        break
    for path, fn in ops.items():
        nodes, function_classes, _ = reached[path]
        probed = probe(fn)
        if probed is not None and probed[0] == "value":
            table[path] = f"not an op: returns a {probed[1]}"
            continue
        if probed is not None and probed[0] == "input":
            grad = fwd = "input"
        elif probed is not None:  # a call that worked says it exactly
            node_cls = probed[1]
            grad, fwd = ("node", _forward_kind(node_cls)) if node_cls else ("-", "-")
        elif nodes:
            grad = "node"
            fwd = "+".join(sorted({_forward_kind(n) for n in nodes}))
        elif function_classes:
            grad = fwd = "function"
        elif has_grad[path]:
            grad = fwd = "composite"
        else:
            grad = fwd = "-"
        name = recorded.get(id(fn))
        if name is None:
            onnx = "inner"
        else:
            onnx = "symbolic" if name in SYMBOLICS else "-"
        table[path] = {"grad": grad, "fwd": fwd, "amp": amp.get(path, "-"), "onnx": onnx}
        if probed is not None and not probed[3]:
            table[path]["integer_input"] = True  # reasons, not facts
        elif probed is not None and not probed[2]:
            table[path]["integer_output"] = True
    ember.set_rng_state(rng_state)
    return table


# ---- the checked-in table -------------------------------------------------------------------

_NON_DIFFERENTIABLE = (
    "eq ne lt le gt ge greater less equal not_equal isclose allclose isnan isinf isfinite"
    " isreal isneginf isposinf signbit argmax argmin argsort searchsorted bucketize nonzero"
    " count_nonzero histc bincount unique unique_consecutive one_hot is_nonzero is_same_size"
    " is_floating_point is_complex is_conj is_neg is_inference is_signed numel result_type"
    " can_cast isin histogram histogramdd tril_indices triu_indices unravel_index"
    " logical_and logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor"
    " bitwise_not bitwise_left_shift bitwise_right_shift gcd lcm floor_divide unravel_index"
).split()


def suggested_reason(path: str, fact: str, facts: dict) -> str:
    name = path.rsplit(".", 1)[1].rstrip("_")
    if fact == "amp":
        return "runs as called"
    if fact == "onnx":
        return "todo"
    if fact in ("grad", "fwd") and facts.get("integer_output"):
        return "integer/boolean output"
    if name in _NON_DIFFERENTIABLE or name.startswith(("is_", "bitwise_", "logical_")):
        return "integer/boolean output"
    if fact in ("grad", "fwd") and facts.get("integer_input"):
        return "no float call worked, an integer one did"
    if name.endswith("_like") or name.startswith(("rand", "bernoulli", "multinomial")):
        return "values do not depend on the input's"
    if fact == "fwd" and facts.get("grad") == "-":
        return "no derivative"
    return "todo"


def format_line(path: str, facts, reasons: dict) -> str:
    if isinstance(facts, str):
        return f"{path} | {facts}"
    fields = []
    for fact in FACTS:
        token = facts[fact]
        if token == "-":
            reason = reasons.get(fact) or suggested_reason(path, fact, facts)
            fields.append(f"{fact}: - {reason}")
        else:
            fields.append(f"{fact}: {token}")
    return f"{path} | " + " | ".join(fields)


def parse_line(line: str) -> tuple:
    """(path, facts: dict or 'not an op: ...' string, reasons: dict)."""
    path, _, rest = line.partition(" | ")
    if rest.startswith("not an op"):
        return path, rest, {}
    facts, reasons = {}, {}
    for field in rest.split(" | "):
        key, _, value = field.partition(": ")
        if value.startswith("- ") or value == "-":
            facts[key] = "-"
            reasons[key] = value[2:].strip()
        else:
            facts[key] = value.strip()
    return path, facts, reasons


def read_table(path: Path = TABLE) -> dict:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, facts, reasons = parse_line(line)
            out[name] = (facts, reasons)
    return out


HEADER = f"""\
# The facts of every public op (generated by `{REGENERATE}`; see tests/op_facts.py).
# path | grad | fwd | amp (CUDA/CPU) | onnx ; a missing fact is "-" and a reason (todo: none yet).
# Reasons are kept when the table is regenerated; write them here.
"""


def write(path: Path = TABLE) -> int:
    old = read_table(path) if path.exists() else {}
    table = compute()
    lines = [format_line(p, table[p], old.get(p, (None, {}))[1]) for p in sorted(table)]
    path.write_text(HEADER + "\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="the op-facts table")
    parser.add_argument("--write", action="store_true", help=f"rewrite {TABLE.name}")
    args = parser.parse_args(argv)
    if args.write:
        print(f"{TABLE}: {write()} lines")
    else:
        table = compute()
        for p in sorted(table):
            sys.stdout.write(format_line(p, table[p], {}) + "\n")


if __name__ == "__main__":
    main()
