"""Helpers that more than one test file (or a benchmark in ``bench/``) uses, one module per subject.

A test file imports helpers from here, from ``tests/helpers.py`` (what nearly every test needs) or
from its own folder's helper modules (``tests/auth/support.py``, ``tests/cli/inprocess.py`` ...),
never from another test file (``tests/test_architecture.py`` checks it).
"""
