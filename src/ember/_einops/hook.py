"""Puts ember's einops backend and layers in place when a program imports einops.

A finder on ``sys.meta_path`` (installed by ``import ember``; it imports nothing) watches two
names: after ``einops._backends`` has run it defines ``EmberBackend``, a subclass einops' backend
lookup then finds; and ``einops.layers.ember`` (and ``einops.layers.torch`` when PyTorch is not
installed) is answered with ember's layers. einops' files are not touched.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys

_BACKENDS = "einops._backends"
_LAYERS = "ember._einops.layers"


def _torch_installed() -> bool:
    if "torch" in sys.modules:  # imported, or blocked with None
        return sys.modules["torch"] is not None
    return importlib.machinery.PathFinder.find_spec("torch") is not None


class _AfterBackends:
    """Runs einops' own ``_backends``, then defines ember's backend beside its others."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        sys.modules[_BACKENDS] = module  # ember's backend imports it by name
        importlib.import_module("ember._einops.backend")


class _EmberLayers:
    """Answers an ``einops.layers`` name with ember's layers module itself."""

    def create_module(self, spec):
        return importlib.import_module(_LAYERS)

    def exec_module(self, module):
        pass


class EinopsFinder:
    """A meta path finder (plain class: importlib.abc would cost ``import ember`` 30 ms)."""

    def find_spec(self, name, path=None, target=None):
        if name == _BACKENDS:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                spec.loader = _AfterBackends(spec.loader)
            return spec
        if name == "einops.layers.ember" or (
            name == "einops.layers.torch" and not _torch_installed()
        ):
            return importlib.util.spec_from_loader(name, _EmberLayers())
        return None


def install() -> None:
    if not any(isinstance(f, EinopsFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, EinopsFinder())
    if _BACKENDS in sys.modules:  # einops came first
        importlib.import_module("ember._einops.backend")
