import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "pcskm-data"


def paper_data_dir():
    """The paper's data files: $PCSKM_DATA, else the shared copy beside the repository."""
    return Path(os.environ.get("PCSKM_DATA", DEFAULT_DATA))


@pytest.fixture(scope="session")
def data_dir():
    path = paper_data_dir()
    if not (path / "datasets" / "real" / "fisheriris.mat").exists():
        pytest.skip(f"the paper's data files are not in {path}; set PCSKM_DATA")
    return path


@pytest.fixture(scope="session")
def smoke_report(tmp_path_factory):
    """The smoke spec computed into a store and its report: ``(store, report.md path)``."""
    from distributed import Client

    from experiments import load_spec
    from experiments.report import write_report
    from runner import run_spec

    folder = tmp_path_factory.mktemp("smoke")
    store = folder / "smoke.zarr"
    with Client(processes=False, n_workers=1, threads_per_worker=2,
                dashboard_address=":0") as client:
        run_spec(load_spec("smoke"), store, client=client, progress=False)
    return store, write_report(store)
