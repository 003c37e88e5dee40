"""The examples in ember.fx's docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "ember.fx",
    "ember.fx.graph",
    "ember.fx.graph_module",
    "ember.fx.node",
    "ember.fx.proxy",
    "ember.fx.immutable_collections",
    "ember.fx.interpreter",
    "ember.fx.subgraph_rewriter",
    "ember.fx._symbolic_trace",
    "ember.fx._wrap",
    "ember.fx.passes.shape_prop",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried > 0 and failures == 0
