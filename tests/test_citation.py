"""CITATION.cff: the software (version and repository those of pyproject.toml) and the paper
(preferred-citation, with its DOI), valid for cffconvert, whose BibTeX of the software names
the repository and the version. cffconvert is not in the test extra: its jsonschema<4 pin
conflicts with moto[server]'s; .ci/run installs it in an environment of its own and puts its
command on PATH."""

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CITATION = REPO / "CITATION.cff"


@pytest.fixture(scope="module")
def project():
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_record_names_the_version_repository_and_papers_doi(project):
    record = yaml.safe_load(CITATION.read_text())
    assert record["version"] == project["version"]
    assert record["repository-code"] == record["url"] == project["urls"]["Repository"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(record["date-released"]))
    paper = record["preferred-citation"]
    assert paper["title"] == "A semi-supervised sparse K-Means algorithm"
    assert paper["doi"] == "10.48550/arXiv.2003.06973"  # arXiv's DOI of arXiv:2003.06973
    assert (paper["journal"], paper["volume"], paper["start"], paper["end"], paper["year"]) == \
        ("Pattern Recognition Letters", 142, 65, 71, 2021)


def cffconvert(*args):
    command = shutil.which("cffconvert")
    if command is None:
        pytest.skip("cffconvert is not on PATH (not in the test extra: its jsonschema<4 pin "
                    "conflicts with moto[server]; .ci/run installs it beside)")
    out = subprocess.run([command, "-i", str(CITATION), *args], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_cffconvert_validates_the_record():
    assert "Citation metadata are valid" in cffconvert("--validate")


def test_the_bibtex_names_the_repository_and_the_version(project):
    fields = dict(re.findall(r"^(\w+) = \{(.*)\},?$", cffconvert("-f", "bibtex"), re.M))
    assert fields["url"] == project["urls"]["Repository"]
    assert fields["title"].startswith(f"pcskm {project['version']}: ")
    assert fields["author"] == "pcskm developers"
