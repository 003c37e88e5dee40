"""ember.__version__ compares as a version, as torch.__version__ does."""

from __future__ import annotations

import pytest

import ember
from ember.torch_version import TorchVersion


def test_versions_compare_as_versions_not_as_text():
    assert isinstance(ember.__version__, str) and isinstance(ember.__version__, TorchVersion)
    assert TorchVersion("0.10.0") > "0.9" and TorchVersion("0.10.0") > (0, 9, 5)
    assert TorchVersion("2.1.0+cpu") >= "2.1" and TorchVersion("2.1.0") == (2, 1)
    assert TorchVersion("1.0.0rc1") < "1.0.0"
    assert TorchVersion("1.2") != 3 and not (TorchVersion("1.2") == "not a version")


def test_comparing_with_a_number_raises_torchs_type_error(torch_mod):
    for version in (ember.__version__, torch_mod.__version__):
        with pytest.raises(
            TypeError, match="'<' not supported between instances of 'TorchVersion'"
        ):
            version < 5  # noqa: B015
