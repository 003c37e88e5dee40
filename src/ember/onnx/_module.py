"""The module ``ember.onnx.load`` returns: an ONNX graph checked at load (``_load_checks``,
``_import.LOAD_CHECKS``) and run node by node through ``_import.IMPORTERS``, with its
initializers as parameters and buffers under their ONNX names (``InitializerStore``).
"""

from __future__ import annotations

from onnx import helper

from .. import nn
from . import _import, _load_checks
from ._load_checks import describe
from ._state import OnnxImportError

# what an op raises for the values a run feeds it, as torch does (IndexError for an index out
# of range, ValueError, TypeError); forward raises each as a RuntimeError naming the node
_RUN_ERRORS = (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError)

# the ops whose load check needs the rank of inputs that are not initializers (shape inference)
_RANK_CHECKED = frozenset({"Conv", "ConvTranspose", "Transpose"})


def _e():
    from .. import _op_namespace as ember

    return ember


class InitializerGroup(nn.Module):
    """The initializers whose ONNX names share a dotted prefix (``features.0.``)."""


class InitializerStore(InitializerGroup):
    """An ONNX model's initializers by their ONNX names.

    A name is split at its dots into a path of submodules: ``features.0.weight`` is the
    parameter ``weight`` of child ``0`` of child ``features``. So ``state_dict()`` keys are the
    ONNX names exactly, after the store's own prefix, and a model exported by ``torch.onnx``
    has its torch ``state_dict()`` keys there. Tensors live in the modules' parameter and
    buffer tables, never as attributes, so a name like ``forward``, ``keys`` or ``training``
    collides with nothing, and ``a.b``, ``a_b`` and ``a`` are three tensors.

    Example::
        >>> model = ember.onnx.load("classifier.onnx")
        >>> model.initializers["features.0.weight"].shape       # by ONNX name
        >>> model.state_dict()["initializers.features.0.weight"]  # the same tensor
    """

    def __init__(self) -> None:
        super().__init__()
        self._places: dict = {}  # ONNX name -> (names of the submodules on its path, leaf)

    def add(self, name: str, tensor, trainable: bool) -> None:
        """Keep ``tensor`` under ``name`` (an ``nn.Parameter`` if ``trainable``, else a
        buffer), replacing what the name held."""
        *path, leaf = name.split(".")
        owner = self
        for part in path:
            child = owner._modules.get(part)
            if child is None:
                child = owner._modules[part] = InitializerGroup()
            owner = child
        owner._parameters.pop(leaf, None)
        owner._buffers.pop(leaf, None)
        if trainable:
            owner._parameters[leaf] = nn.Parameter(tensor)
        else:
            owner._buffers[leaf] = tensor
        self._places[name] = (tuple(path), leaf)

    def __getitem__(self, name: str):
        if name not in self._places:
            raise KeyError(f"the ONNX model has no initializer named {name!r}")
        path, leaf = self._places[name]
        owner = self
        for part in path:
            owner = owner._modules[part]
        value = owner._parameters.get(leaf)
        return value if value is not None else owner._buffers[leaf]

    def __contains__(self, name: object) -> bool:
        return name in self._places

    def __iter__(self):
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._places)

    def keys(self):
        """The ONNX names, in the file's order."""
        return self._places.keys()

    def items(self) -> list:
        return [(name, self[name]) for name in self._places]


def _attribute(attribute, where: str):
    """A node attribute's value: strings decoded, tensors checked and as NumPy arrays."""
    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", "replace") for v in value]
    if attribute.type == attribute.TENSOR:
        label = f"the tensor in attribute '{attribute.name}' of {where}"
        _load_checks.check_tensor(value, label)
        _load_checks.ember_tensor_type(value.data_type, label)
        return _load_checks.tensor_array(value, label)
    return value


class OnnxModule(nn.Module):
    """An ONNX graph run with ember ops.

    Initializers are under ``initializers`` by their ONNX names (an ``InitializerStore``):
    ``model.initializers["features.0.weight"]``, and ``state_dict()`` key
    ``"initializers." + name`` for every ONNX name, whatever its punctuation. Floating-point
    ones are trainable ``nn.Parameter``s, the others buffers. An initializer of a type ember
    tensors cannot hold (strings, float8) is left out when no node reads it, as ONNX Runtime
    drops unused initializers, and refused when one does.
    """

    def __init__(self, model):
        super().__init__()
        _import.register_elementwise()
        graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        _load_checks.check_versions(model.ir_version, self.opset)
        if len(graph.sparse_initializer):
            raise OnnxImportError(
                "ember.onnx.load: the graph has sparse initializers "
                f"('{graph.sparse_initializer[0].values.name}'); ember reads dense ones only"
            )
        protos = self._initializer_protos(graph)
        nodes = list(graph.node)
        for index, node in enumerate(nodes):
            self._check_operator(node, index)
        defined = set(protos) | {i.name for i in graph.input}
        order = _load_checks.run_order(nodes, defined)
        _load_checks.check_outputs(graph, defined, nodes)
        _load_checks.check_inputs(graph)
        self._input_names = [i.name for i in graph.input if i.name not in protos]
        # name -> (ONNX element type, dims): what ``forward`` checks a fed tensor against
        self._declared = {
            i.name: _load_checks.declared_input(i) for i in graph.input if i.name not in protos
        }
        for name, (elem_type, _) in self._declared.items():
            if elem_type:
                _load_checks.ember_tensor_type(elem_type, f"graph input '{name}'")
        self._output_names = [o.name for o in graph.output]
        live, read = _load_checks.live_nodes(nodes, order, self._output_names)
        self.initializers = InitializerStore()
        for name, proto in protos.items():
            if proto.data_type not in _load_checks.EMBER_TYPES:
                if name in read:
                    _load_checks.ember_tensor_type(proto.data_type, f"initializer '{name}'")
                continue
            tensor = _e().from_numpy(_load_checks.tensor_array(proto))
            self.initializers.add(name, tensor, trainable=tensor.is_floating_point())
        if any(node.op_type in _RANK_CHECKED for node in nodes):
            ranks = _load_checks.known_ranks(model, {n: p.dims for n, p in protos.items()})
        else:
            ranks = {}
        # every node is checked (ONNX Runtime refuses a broken node it would not run too); the
        # nodes the outputs need run, in ``order``
        self._nodes = []
        for index in order:
            step = self._step(nodes[index], index, ranks)
            if index in live:
                self._nodes.append(step)
        _load_checks.check_types(model, order)

    @staticmethod
    def _initializer_protos(graph) -> dict:
        """Each initializer checked, by name. A name given twice is refused, as ONNX's checker
        refuses it: ONNX Runtime warns that it uses the last one, but in an exported MLP it
        computes with the first, so no choice would give its values."""
        protos: dict = {}
        for proto in graph.initializer:
            if proto.name in protos:
                raise OnnxImportError(
                    f"ember.onnx.load: the initializer '{proto.name}' is given twice (a value "
                    "has one definition in ONNX)"
                )
            protos[proto.name] = proto
        for proto in protos.values():
            _load_checks.check_tensor(proto)
        return protos

    @staticmethod
    def _step(node, index: int, ranks: dict) -> tuple:
        """``(op_type, inputs, outputs, attrs, where)`` for ``forward``, after the op's load
        check; ``where`` names the node in errors."""
        where = describe(node, index)
        attrs = {a.name: _attribute(a, where) for a in node.attribute}
        inputs, outputs = list(node.input), list(node.output)
        check = _import.LOAD_CHECKS.get(node.op_type)
        problem = check(attrs, inputs, outputs, [ranks.get(n) for n in inputs]) if check else None
        if problem:
            raise OnnxImportError(f"ember.onnx.load: {where}: {problem}")
        return node.op_type, inputs, outputs, attrs, where

    def _check_operator(self, node, index: int) -> None:
        where = describe(node, index)
        if node.domain not in ("", "ai.onnx"):
            raise OnnxImportError(
                f"ember.onnx.load: {where} uses operator domain {node.domain!r}; ember runs the "
                "default ONNX domain"
            )
        if node.op_type not in _import.IMPORTERS:
            raise OnnxImportError(
                f"ember.onnx.load: ONNX op '{node.op_type}' ({where}) has no ember mapping"
            )
        _load_checks.check_schema(node, index, self.opset)

    def forward(self, *inputs):
        if len(inputs) != len(self._input_names):
            raise TypeError(
                f"OnnxModule: expected {len(self._input_names)} inputs "
                f"({', '.join(self._input_names)}), got {len(inputs)}"
            )
        env = {name: self.initializers[name] for name in self.initializers.keys()}
        for name, value in zip(self._input_names, inputs):
            env[name] = self._fed(name, value)
        for op_type, names_in, names_out, attrs, where in self._nodes:
            args = [env[n] if n else None for n in names_in]
            while args and args[-1] is None:
                args.pop()
            ctx = _import.NodeContext(op_type, self.opset, len(names_out))
            try:
                outputs = _import.IMPORTERS[op_type](ctx, args, attrs)
            except OnnxImportError:
                raise
            except _RUN_ERRORS as exc:
                # what the values fed to a node break (an index out of bounds, a shape that only
                # this run shows) is one RuntimeError naming the node, as ONNX Runtime's
                raise RuntimeError(f"ember.onnx: {where}: {exc}") from exc
            for name, value in zip(names_out, outputs):
                if name:
                    env[name] = value
        results = [env[n] for n in self._output_names]
        return results[0] if len(results) == 1 else tuple(results)

    def _fed(self, name: str, value):
        """The tensor fed as graph input ``name``, checked as ONNX Runtime checks a feed: the
        declared element type and every declared fixed dim (a list or number is converted to
        the declared type)."""
        ember = _e()
        elem_type, dims = self._declared[name]
        if not isinstance(value, ember.Tensor):
            dtype = _import._ember_dtype(elem_type) if elem_type else None
            value = ember.tensor(value, dtype=dtype)
        elif elem_type and value.dtype != _import._ember_dtype(elem_type):
            raise RuntimeError(
                f"ember.onnx: input '{name}' is {value.dtype}; the model declares "
                f"{_load_checks.type_name(elem_type)}"
            )
        if dims is not None:
            shape = tuple(value.shape)
            if len(shape) != len(dims) or any(
                d is not None and d != s for d, s in zip(dims, shape)
            ):
                wanted = tuple("?" if d is None else d for d in dims)
                raise RuntimeError(
                    f"ember.onnx: input '{name}' has shape {shape}; the model declares "
                    f"{wanted}".replace("'?'", "?")
                )
        return value


def load(f) -> OnnxModule:
    """The ONNX model in ``f`` (a path, a binary file object or bytes) as an ember Module;
    ``OnnxImportError`` for a file that is not an ONNX model or one ember cannot run."""
    import onnx

    try:
        if isinstance(f, (bytes, bytearray)):
            model = onnx.load_from_string(bytes(f))
        else:
            model = onnx.load(f if not hasattr(f, "__fspath__") else str(f))
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError, onnx's ValidationError
        raise OnnxImportError(
            f"ember.onnx.load: cannot read the ONNX model ({type(exc).__name__}: {exc})"
        ) from None
    return OnnxModule(model)
