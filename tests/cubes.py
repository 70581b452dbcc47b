"""Helpers shared by the tests that compare result cubes and run ``pcskm run`` in a
subprocess."""

import os
import re
import threading


def results_attrs(tree):
    """A cube's root attributes without ``runs``, the log of when and where it was computed
    (it differs between two stores of the same results)."""
    return {key: value for key, value in tree.attrs.items() if key != "runs"}


class Progress:
    """Reads a ``pcskm run`` subprocess's stderr (``stderr=subprocess.PIPE``) in a thread:
    ``cells()`` is the largest cell count its progress bar has shown so far, which tells that
    results have reached the client (the writer may hold them in memory, unmarked, until the
    run ends)."""

    def __init__(self, process):
        self._received = []
        self._reader = threading.Thread(target=lambda: self._received.extend(iter(
            lambda: os.read(process.stderr.fileno(), 4096), b"")))
        self._reader.start()

    def text(self):
        return b"".join(self._received).decode(errors="replace")

    def cells(self):  # tqdm's "cells:  12%|#  | 96/800 [..."
        return max(map(int, re.findall(r"(\d+)/\d+ \[", self.text())), default=0)

    def join(self):
        """The whole stderr, once the process has closed it."""
        self._reader.join()
        return self.text()
