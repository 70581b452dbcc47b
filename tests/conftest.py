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
