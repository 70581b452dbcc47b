"""Helpers shared by the tests that compare result cubes."""


def results_attrs(tree):
    """A cube's root attributes without ``runs``, the log of when and where it was computed
    (it differs between two stores of the same results)."""
    return {key: value for key, value in tree.attrs.items() if key != "runs"}
