"""The runner's object-storage path, for bench_writer.py: the store is an Icechunk repository
on an S3-compatible server of this machine, written through the runner's own code
(docs/guide/hpc.md, "The store on object storage").

* ``icechunk``: the workers' side of a task is :func:`pcskm.runner.execute.compute_and_write`
  (its compute replaced by the task's made-up result): the worker unpickles what
  :meth:`pcskm.runner.store.backends.icechunk.Repository.for_workers` gave (one fork of the run's
  session, made after the store was prepared), checks that it reaches the repository, writes
  the task's chunks into the fork (:func:`pcskm.runner.store.writer.write_task`) and returns
  the receipt with the fork, pickled. The client's side is the runner's
  :class:`pcskm.runner.store.writer.DoneMarks` taking each unpickled receipt, on the virtual
  clock: every ``flush_seconds`` of virtual time and at the end it merges the forks it holds
  (:meth:`~pcskm.runner.store.backends.icechunk.Repository.absorb`), marks their blocks done and
  commits.

The S3 server is moto's (``moto_server``), started in a process of its own so that the
client's ``process_time`` holds the client alone; the workers are simulated in the
benchmark's own process, one task after another, their CPU measured apart (the server's
CPU, answering their requests, counts for neither). Each replay (a number of workers)
writes a branch of its own, made at the prepared store's snapshot, through the runner's
:class:`~pcskm.runner.store.backends.icechunk.Transaction`.
"""

import atexit
import os
import pickle
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

# moto accepts any key; the benchmark's process only.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
               "AWS_DEFAULT_REGION": "us-east-1"}


def _cpu(function, *args):
    """``(process CPU seconds, result)`` of ``function(*args)``."""
    start = time.process_time()
    out = function(*args)
    return time.process_time() - start, out


def moto_server():
    """Start moto's S3 server on a free port of 127.0.0.1 in a process of its own (stopped
    when the benchmark exits), point the AWS variables of this process at it and return its
    endpoint."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    program = Path(sys.executable).with_name("moto_server")
    server = subprocess.Popen([str(program), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    atexit.register(server.terminate)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if server.poll() is not None:
                raise RuntimeError(f"{program} exited with status {server.returncode}") from None
            time.sleep(0.1)
    else:
        raise RuntimeError(f"{program} did not answer on 127.0.0.1:{port}")
    endpoint = f"http://127.0.0.1:{port}"
    os.environ.update({**CREDENTIALS, "AWS_ENDPOINT_URL": endpoint})
    return endpoint


class RepositoryDesign:
    """The runner on object storage: workers write into forks of the run's session
    (:func:`pcskm.runner.execute.compute_and_write`), the client merges, marks done and
    commits (:class:`pcskm.runner.store.writer.DoneMarks`)."""

    name = "icechunk"

    def __init__(self, folder, cube, spec):
        import boto3

        from pcskm.runner.store import prepare
        from pcskm.runner.store import writer as writer_module
        from pcskm.runner.store.backends.icechunk import Repository

        endpoint = moto_server()
        boto3.client("s3", endpoint_url=endpoint, region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
                     aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                     aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"]
                     ).create_bucket(Bucket="bench")
        self.location = Repository("bench", spec.name)
        self._writing = self.location.writing()
        self._writing.__enter__()  # held until the benchmark exits, as a run holds it
        self.cube, _ = prepare(self.location, spec)
        self.base = self.location.transaction.base  # the prepared store: every replay's start
        self.token = self.location.transaction.token  # the run's: every receipt's fork carries it
        self.clock = [0.0]  # the marking's clock only (asyncio and Zarr keep the real one)
        writer_module.time = types.SimpleNamespace(monotonic=lambda: self.clock[0],
                                                   perf_counter=time.perf_counter)
        # The client pickles the fork once per task it submits (Dask sends each task's
        # arguments): averaged into client_seconds_per_task.
        self.client_seconds_per_task, self.sent = _cpu(pickle.dumps,
                                                       self.location.for_workers())
        self.replays = 0

    def work(self, result):
        """The worker's side of one task, as a Dask worker runs it: ``(worker CPU, the
        pickled receipt)``."""
        from pcskm.runner import execute
        from pcskm.runner.store import task_target

        target = task_target(self.cube, result.task)  # the client's, when it submits the task

        def worker():
            execute.evaluate_on_worker = lambda task: result  # the computed task
            place = pickle.loads(self.sent)
            return pickle.dumps(execute.compute_and_write(result.task, target, place))

        return _cpu(worker)

    def replay(self, arrivals, flush_seconds):
        """The client's side: :class:`DoneMarks` takes each unpickled receipt at its virtual
        time, on a branch made at the prepared store's snapshot; the CPU of each (unpickling
        included) and of the final merge, marking and commit. Prints where the client's CPU
        went."""
        from pcskm.runner.store import Cube, DoneMarks
        from pcskm.runner.store.backends.icechunk import Transaction

        self.replays += 1
        branch = f"replay-{self.replays}"
        self.location.repo.create_branch(branch, self.base)
        self.location.transaction = Transaction(self.location.repo, branch)
        self.location.transaction.token = self.token  # the run's workers wrote the receipts
        cube = Cube(self.location)
        self.clock[0] = 0.0  # the run starts
        marks = DoneMarks(cube, flush_seconds=flush_seconds)
        spent = {"receive": 0.0, "merge": 0.0, "mark": 0.0, "commit": 0.0, "reopen": 0.0}

        def timed(part, function):
            def run(*args):
                seconds, out = _cpu(function, *args)
                spent[part] += seconds
                return out
            return run

        self.location.absorb = timed("merge", self.location.absorb)
        cube.mark_done = timed("mark", cube.mark_done)
        self.location.commit = timed("commit", self.location.commit)
        cube.commit = timed("reopen", cube.commit)  # less the commit, below
        self.commits = 0
        write = marks.write

        def counted():
            self.commits += 1
            write()

        marks.write = counted
        costs = []
        for now, sent in arrivals:
            self.clock[0] = now
            receive, receipt = _cpu(pickle.loads, sent)
            spent["receive"] += receive
            costs.append(receive + _cpu(marks.take, receipt)[0])
        end, _ = _cpu(marks.write)
        del self.location.absorb, self.location.commit
        spent["reopen"] -= spent["commit"]  # the arrays opened again after a commit
        forks = len(arrivals) / max(self.commits, 1)
        print(f"  {self.name}, {len(arrivals)} receipts in {self.commits} commits "
              f"({forks:.0f} forks per commit), client CPU s: "
              + ", ".join(f"{part} {seconds:.2f}" for part, seconds in spent.items())
              + f" (merge {1000 * spent['merge'] / max(self.commits, 1):.0f} ms per commit, "
              f"{1000 * spent['merge'] / max(len(arrivals), 1):.1f} ms per fork)", flush=True)
        return costs, end
