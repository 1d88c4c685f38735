"""Every plugin package ships the ``py.typed`` marker (PEP 561), so a type checker reads
the types of code that imports it."""

from __future__ import annotations

from importlib import resources

import pytest

PLUGIN_PACKAGES = ("greenroom_deferred", "greenroom_ranking", "greenroom_priors", "greenroom_demo", "greenroom_gateway")


@pytest.mark.parametrize("package", PLUGIN_PACKAGES)
def test_the_plugin_package_ships_py_typed(package: str) -> None:
    assert (resources.files(package) / "py.typed").is_file(), f"{package} has no py.typed"
