"""The report's forked children (experiments/report/forking.py): the same results as the loop
they replace, in its order, and a child's error raised in the parent."""

import os

import pytest

from pcskm.experiments.report import forking


def _square_and_pid(item):
    return item * item, os.getpid()


def _fails_at_three(item):
    if item == 3:
        raise ValueError(f"item {item} refused")
    return item


def test_forked_map_is_the_loop_in_its_order():
    """Six items on two workers: the squares in the items' order, as a plain loop gives them;
    where the process can fork, computed by other processes than this one."""
    found = forking.forked_map(_square_and_pid, range(6), workers=2)
    assert [value for value, _pid in found] == [item * item for item in range(6)]
    pids = {pid for _value, pid in found}
    if forking.can_fork():
        assert os.getpid() not in pids
    else:
        assert pids == {os.getpid()}


def test_one_item_or_one_worker_stays_in_this_process():
    assert forking.forked_map(_square_and_pid, [4]) == [(16, os.getpid())]
    assert forking.forked_map(_square_and_pid, [1, 2], workers=1) == [(1, os.getpid()),
                                                                      (4, os.getpid())]


def test_a_childs_error_is_raised_here():
    with pytest.raises(ValueError, match="item 3 refused"):
        forking.forked_map(_fails_at_three, range(5), workers=2)
