"""Module: the base class of every layer and model, with PyTorch's registration rules."""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple

from ..._tensor import Tensor
from ...autograd import _cuts
from ...autograd.node import RemovableHandle, _HookDict
from ..parameter import Buffer, Parameter
from .backward_hooks import BackwardHookState


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns; prints as PyTorch's when every key matched."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


IncompatibleKeys = _IncompatibleKeys


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class for layers and models: assign Parameters and Modules as attributes.

    Example::
        >>> class Net(ember.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = ember.nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return self.fc(x).relu()
    """

    training: bool
    _ids = itertools.count()

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", OrderedDict())
        setattr_(self, "_buffers", OrderedDict())
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", OrderedDict())
        setattr_(self, "_forward_pre_hooks", _HookDict())
        setattr_(self, "_forward_hooks", _HookDict())
        setattr_(self, "_backward_hooks", _HookDict())
        setattr_(self, "_backward_pre_hooks", _HookDict())
        setattr_(self, "_hook_flags", {})

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # --- calling ----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
        ):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        for key, hook in list(self._forward_pre_hooks.items()):
            if self._hook_flags.get(key) == "kwargs":
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {res}."
                        )
                    args, kwargs = res
            else:  # anything but a tuple becomes the single argument, as in torch
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        backward = self._backward_hooks or self._backward_pre_hooks
        state = None
        if backward:
            args, state = BackwardHookState.wrap_inputs(self, args)
        out = self.forward(*args, **kwargs)
        for key, hook in list(self._forward_hooks.items()):
            if self._hook_flags.get(key) == "kwargs":
                res = hook(self, args, kwargs, out)
            else:
                res = hook(self, args, out)
            if res is not None:
                out = res
        if backward:
            out = state.wrap_outputs(out)
        return out

    # --- registration ---------------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(ember.nn.Parameter or None expected)"
                )
            params[name] = None
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(ember.nn.Module or None expected)"
                )
            modules[name] = None
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer):
            self._forget(name, keep="_buffers")
            self.register_buffer(name, value, persistent=value.persistent)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(ember.Tensor or None expected)"
                )
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Drop ``name`` from every store but ``keep``, where re-assigning it keeps its place
        (``model.conv1 = ...`` stays first among the children, as in torch)."""
        for store in ("_parameters", "_buffers", "_modules"):
            if store != keep:
                self.__dict__[store].pop(name, None)
        self.__dict__.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            values = d.get(store)
            if values is not None and name in values:
                return values[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[store]:
                del self.__dict__[store][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def _check_name(self, name: str, kind: str, store: dict) -> None:
        """torch's checks of a name being registered, in its order for ``kind``: a name that is
        already something else (an attribute, a parameter over a buffer ...) is refused; one in
        ``store`` is replaced."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        taken = hasattr(self, name) and name not in store
        if kind == "module":  # add_module checks the attribute before the name's form
            if taken:
                raise KeyError(f"attribute '{name}' already exists")
            if "." in name:
                raise KeyError(f'module name can\'t contain ".", got: {name}')
        elif "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if taken:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(ember.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                "created explicitly."
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(ember.Tensor or None required)"
            )
        if isinstance(tensor, Buffer):
            tensor = Tensor._wrap(tensor._data)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target: str) -> Parameter:
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    # --- iteration ---------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        memo = set() if memo is None else memo
        stack = [(prefix, self)]
        while stack:  # pre-order, children in registration order, without recursion
            name, mod = stack.pop()
            if remove_duplicate:
                if mod in memo:
                    continue
                memo.add(mod)
            yield name, mod
            children = [
                (name + ("." if name else "") + child_name, child)
                for child_name, child in mod._modules.items()
                if child is not None
            ]
            stack.extend(reversed(children))

    def modules(self):
        for _, mod in self.named_modules():
            yield mod

    def named_children(self):
        seen = set()
        for name, mod in self._modules.items():
            if mod is not None and mod not in seen:
                seen.add(mod)
                yield name, mod

    def children(self):
        for _, mod in self.named_children():
            yield mod

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for mod_prefix, mod in modules:
            for name, value in mod.__dict__[store].items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ):
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # --- state ---------------------------------------------------------------------------------
    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Parameters and persistent buffers by dotted name (detached unless keep_vars)."""
        if args:  # the old positional form state_dict(destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        out = OrderedDict() if destination is None else destination
        for mod_prefix, mod in self.named_modules(prefix=prefix.rstrip(".")):
            lead = mod_prefix + "." if mod_prefix else ""
            # a lazy layer's placeholders stay themselves, as in torch (they have no shape yet)
            for name, p in mod._parameters.items():
                if p is not None:
                    keep = keep_vars or getattr(p, "_lazy_placeholder", False)
                    out[lead + name] = p if keep else p._detach()
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent_buffers_set:
                    keep = keep_vars or getattr(b, "_lazy_placeholder", False)
                    out[lead + name] = b if keep else b._detach()
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict``; PyTorch's checks and messages."""
        from ...autograd.grad_mode import no_grad

        for name, module in self.named_modules():  # lazy layers take their shapes from it
            if hasattr(module, "_load_lazy_state"):
                module._load_lazy_state(state_dict, name + "." if name else "")
        expected = self.state_dict(keep_vars=True)
        # keys older state_dicts lack, that a layer keeps its own value for (as PyTorch's
        # _load_from_state_dict does by the version in state_dict._metadata)
        metadata = getattr(state_dict, "_metadata", None) or {}
        kept = set()
        for name, module in self.named_modules():
            if hasattr(module, "_keys_older_versions_lack"):
                entry = metadata.get(name) if isinstance(metadata, dict) else None
                version = entry.get("version") if isinstance(entry, dict) else None
                prefix = name + "." if name else ""
                kept.update(module._keys_older_versions_lack(prefix, version))
        missing = [k for k in expected if k not in state_dict and k not in kept]
        unexpected = [k for k in state_dict if k not in expected]
        errors = []
        for key, target in expected.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(value)}"
                )
                continue
            if tuple(value.shape) != tuple(target.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {target.shape}."
                )
                continue
            if assign:
                path, _, name = key.rpartition(".")
                owner = self.get_submodule(path)
                if name in owner._parameters:
                    # a Parameter is kept as it is (taking the model's requires_grad), as torch
                    if isinstance(value, Parameter):
                        owner._parameters[name] = value.requires_grad_(target.requires_grad)
                    else:
                        owner._parameters[name] = Parameter(value, target.requires_grad)
                else:
                    owner._buffers[name] = value
            else:
                if target.is_meta and not value.is_meta:
                    warnings.warn(
                        f"for {key}: copying from a non-meta parameter in the checkpoint to a "
                        "meta parameter in the current model, which is a no-op. (Did you mean "
                        "to pass `assign=True` to assign items in the state dictionary to their "
                        "corresponding key in the module instead of copying them in place?)",
                        stacklevel=2,
                    )
                with no_grad():
                    target.copy_(value)
        if strict:
            if unexpected:
                errors.insert(
                    0,
                    "Unexpected key(s) in state_dict: "
                    + ", ".join(f'"{k}"' for k in unexpected)
                    + ". ",
                )
            if missing:
                errors.insert(
                    0,
                    "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ",
                )
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        return IncompatibleKeys(missing, unexpected)

    # --- modes and bulk changes -------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for mod in self.modules():
            object.__setattr__(mod, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        _cuts.note_zeroed(self.parameters(), set_to_none)
        for p in self.parameters():
            if p._grad is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                g = p._grad
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def apply(self, fn) -> Module:
        """``fn(module)`` on every submodule, children before their parent (as PyTorch)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def _apply(self, convert, recurse: bool = True) -> Module:
        from ...autograd.grad_mode import no_grad

        with no_grad():
            for mod in self.modules() if recurse else (self,):
                for p in mod._parameters.values():
                    if p is None:
                        continue
                    new = convert(p)
                    if new._data is not p._data:
                        p._data = new._data
                        p._vc = [0]
                        if p._grad is not None:
                            p._grad = convert(p._grad)
                for name, b in mod._buffers.items():
                    if b is not None:
                        mod._buffers[name] = convert(b)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move and/or cast the parameters and buffers: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype, non_blocking)``, ``to(tensor)``, ``to(memory_format=...)``.

        Only floating point and complex tensors take the dtype, which must be one of those
        kinds (an integer dtype would truncate the weights): torch raises TypeError then.

        >>> ember.nn.Linear(2, 2).to(ember.float64).weight.dtype
        ember.float64
        """
        device, dtype, non_blocking, memory_format = _parse_to(args, kwargs)
        if dtype is not None:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(
                    "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                    f"dtype={dtype}"
                )
            if dtype.is_complex:
                warnings.warn(
                    "Complex modules are a new feature under active development whose design may "
                    "change, and some modules might not work as expected when using complex "
                    "tensors as parameters or buffers. Please file an issue at "
                    "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml if a "
                    "complex module does not work as expected.",
                    stacklevel=2,
                )

        def convert(t: Tensor) -> Tensor:
            takes_dtype = t.is_floating_point() or t.is_complex()
            kw = dict(device=device, dtype=dtype if takes_dtype else None)
            if memory_format is not None and t.dim() in (4, 5):
                kw["memory_format"] = memory_format
            return t.to(non_blocking=non_blocking, **kw)

        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Move the parameters and buffers to ``device`` without copying their values: fresh
        uninitialised memory. A model built on the meta device gets real storage this way,
        then ``reset_parameters()`` or ``load_state_dict`` fills it.

        >>> model = ember.nn.Linear(2, 2, device="meta").to_empty(device="cpu")
        >>> model.weight.device
        device(type='cpu')
        """
        from ..._creation import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cpu(self) -> Module:
        return self._apply(lambda t: t.cpu())

    def share_memory(self) -> Module:
        """Move every parameter, its gradient and every buffer to shared memory (in place), so
        that processes handed this module (``ember.multiprocessing``) train one set of weights.

        >>> ember.nn.Linear(2, 2).share_memory().weight.is_shared()
        True
        """
        for module in self.modules():
            for p in module._parameters.values():
                if p is not None:
                    p.share_memory_()
                    if p._grad is not None:
                        p._grad.share_memory_()
            for b in module._buffers.values():
                if b is not None:
                    b.share_memory_()
        return self

    def cuda(self, device=None) -> Module:
        return self._apply(lambda t: t.cuda(device))

    def float(self) -> Module:
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Module:
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def type(self, dst_type) -> Module:
        return self._apply(lambda t: t.type(dst_type))

    # --- hooks -------------------------------------------------------------------------------
    def _add(self, hooks: _HookDict, hook, prepend: bool, flag=None) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        if prepend:
            items = list(hooks.items())
            hooks.clear()
            hooks[handle.id] = hook
            hooks.update(items)
        else:
            hooks[handle.id] = hook
        if flag:
            self._hook_flags[handle.id] = flag
        return handle

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args)`` (or ``(module, args, kwargs)``) runs before forward."""
        return self._add(self._forward_pre_hooks, hook, prepend, "kwargs" if with_kwargs else None)

    def register_forward_hook(
        self, hook, *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ):
        """``hook(module, args, output)`` runs after forward; it may return a new output."""
        return self._add(self._forward_hooks, hook, prepend, "kwargs" if with_kwargs else None)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` runs once the input gradients are known."""
        return self._add(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output)`` runs before the module's input gradients are computed."""
        return self._add(self._backward_pre_hooks, hook, prepend)

    # --- printing ------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, mod in self._modules.items():
            mod_str = _addindent(repr(mod), 2)
            lines.append(f"({name}): {mod_str}")
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(set(k for k in keys if not k[0].isdigit()))

    def __setstate__(self, state):
        self.__dict__.update(state)


def _parse_to(args: tuple, kwargs: dict) -> tuple:
    """(device, dtype, non_blocking, memory_format) from Module.to's arguments, as torch's
    _parse_to reads them."""
    from ..._dtype import dtype as dtype_class
    from ..._dtype import to_dtype

    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, bool):
            non_blocking = a
        elif isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, dtype_class) or a in (float, int, bool, complex):
            dtype = a
        else:
            device = a
    dtype = None if dtype is None else to_dtype(dtype)
    return device, dtype, non_blocking, memory_format
