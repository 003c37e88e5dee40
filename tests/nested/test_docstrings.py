"""The examples in ember.nested's docstrings run and print what they show."""

import doctest
import importlib

import pytest

import ember

MODULES = ["", "._construct", "._padding", "._nested_int", "._tensor"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module("ember.nested" + name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, extraglobs={"ember": ember}, optionflags=flags)
    assert result.attempted > 0 and result.failed == 0
