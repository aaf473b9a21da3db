"""The package's docstring examples run as doctests."""

import doctest

import calib
import calib._api


def test_docstring_examples():
    failures, tried = doctest.testmod(calib._api, globs={"calib": calib}, optionflags=doctest.ELLIPSIS)
    assert tried >= 20, f"only {tried} docstring examples found"
    assert failures == 0
