"""The examples in the modules' docstrings run as written."""

import doctest
import importlib
import pkgutil

import patchbay


def test_the_docstring_examples_run_as_written():
    failed, attempted = {}, 0
    for info in pkgutil.iter_modules(patchbay.__path__, "patchbay."):
        result = doctest.testmod(importlib.import_module(info.name), optionflags=doctest.ELLIPSIS)
        attempted += result.attempted
        if result.failed:
            failed[info.name] = result.failed
    assert failed == {}
    assert attempted >= 10
