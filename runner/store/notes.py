"""The note of a run in progress (root attribute ``run_in_progress``) and what it tells:
whether its process is known to have ended (:func:`is_gone`), whether the run recorded
itself (:func:`recorded_as`), how a message names it (:func:`describe_run`)."""

import os
import platform
from pathlib import Path


def process_start(pid):
    """The identity of the start of process ``pid`` on this host: the boot id and the start
    time (clock ticks since boot, field 22 of ``/proc/PID/stat``), which no other process
    shares even when the kernel gives it the same PID; None where ``/proc`` cannot tell."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, TypeError, ValueError):
        return None
    # the command name (field 2) is in parentheses and may hold spaces: count after it
    return f"{boot}:{stat.rpartition(')')[2].split()[19]}"


def has_ended(pid):
    """Whether process ``pid`` has ended but is not yet reaped by its parent (a zombie: state
    Z or X, field 3 of ``/proc/PID/stat``): a client killed with SIGKILL stays one until the
    shell or program that started it waits for it, and ``kill(pid, 0)`` still finds it."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, TypeError, ValueError):
        return False
    return stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"])


def is_gone(note):
    """Whether the run of ``note`` is known to have ended: its process is gone from this
    host or has ended unreaped (:func:`has_ended`), or its PID now names another process
    (its start, ``client_start``, differs; a note without it is judged by the PID alone)."""
    if note.get("client_host") != platform.node():
        return False
    try:
        pid = int(note.get("client_pid"))
    except (TypeError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's: its start tells whether it is the run
        pass
    if has_ended(pid):
        return True
    started = note.get("client_start")
    return started is not None and process_start(pid) not in (None, started)


def recorded_as(note, runs):
    """``(tag, record)`` of the run that the note ``note`` names among ``runs`` (those of
    :meth:`Repository.runs`) if it recorded itself (a record with the note's ``run_id``),
    else None: a branch reset to a snapshot taken while that run wrote holds its note,
    though the run ended. A note written before runs drew an id is matched by its process
    and start (``started`` is to the second: two runs of one process in one second are
    told apart only by the id)."""
    same = ("run_id",) if note.get("run_id") else (
        "client_host", "client_pid", "client_start", "started")
    return next(((tag, record) for tag, _, record, _ in runs
                 if all(record.get(key) == note.get(key) for key in same)), None)


def describe_run(note):
    """``pcskm run smoke (started ..., process N on HOST)``: a run as its note names it."""
    return (f"the run `{note.get('command') or 'pcskm run ' + str(note.get('spec'))}` "
            f"(started {note.get('started')}, process {note.get('client_pid')} on "
            f"{note.get('client_host')})")
