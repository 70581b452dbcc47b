"""One import name: the distribution installs the single top-level package ``pcskm``, which
works from a folder holding modules named like the repository's folders."""

import subprocess
import sys


def test_pcskm_imports_beside_a_users_own_runner_module(tmp_path):
    for name in ("runner", "algorithms", "experiments"):
        (tmp_path / f"{name}.py").write_text(f"NAME = 'the user own {name}.py'\n")
    code = (
        "import runner, algorithms, experiments\n"
        "assert runner.NAME == 'the user own runner.py', runner\n"
        "import pcskm\n"
        "from pcskm import PCSKMeans, pairwise_f_score\n"
        "from pcskm.runner import open_cube, run_spec\n"
        "from pcskm.experiments import load_spec\n"
        "from pcskm.experiments.report import write_report\n"
        "assert load_spec('smoke').name == 'smoke'\n"
        "assert PCSKMeans.__module__.startswith('pcskm.algorithms.')\n"
        "print(pcskm.__version__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() and out.stdout.strip() != "0+unknown"


def test_the_command_line_reports_the_package_version(tmp_path):
    from importlib import metadata

    out = subprocess.run([sys.executable, "-m", "pcskm.runner.cli", "--version"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["pcskm", metadata.version("pcskm")]


def test_static_tools_resolve_every_module_of_the_package(tmp_path):
    """Type checkers and IDEs (mypy, pyright) find every module of ``pcskm`` in the
    environment: true of a wheel and of the documented development install
    (``editable_mode=strict``, docs/guide/install.md), not of setuptools' default editable
    install of this package-dir layout, whose import hook they cannot follow. Only the
    resolution of the imports is checked: the package is not typed (``import-untyped``)."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    modules = sorted(
        "pcskm." + ".".join(path.relative_to(repo).with_suffix("").parts).removesuffix(
            ".__init__")
        for folder in ("algorithms", "experiments", "runner")
        for path in (repo / folder).rglob("*.py"))
    assert "pcskm.runner.store.writer" in modules and "pcskm.experiments" in modules
    code = "\n".join(["import pcskm", *(f"import {module}" for module in modules)])
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir", str(tmp_path),
         "--disable-error-code", "import-untyped", "-c", code],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ci_runs_the_readmes_test_command():
    """.ci/run runs the README's test command (and the install guide shows the same); then
    runs it again offline, without the data folders."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]

    def test_commands(path):
        return [line.split("#")[0].strip() for line in (repo / path).read_text().splitlines()
                if "python -m pytest -n auto" in line and line.startswith("pip install")]

    readme = test_commands("README.md")
    assert len(readme) == 1
    assert test_commands(".ci/run") == readme
    assert test_commands("docs/guide/install.md") == readme


def test_the_citation_file_and_the_readme_cite_this_version_and_the_paper():
    """CITATION.cff (CFF 1.2.0: its required keys) names the version and licence of
    pyproject.toml and, as its preferred citation, the paper the docs name; the README's
    "How to cite" gives the same references."""
    import tomllib
    from pathlib import Path

    import yaml

    repo = Path(__file__).resolve().parents[1]
    cff = yaml.safe_load((repo / "CITATION.cff").read_text())
    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0"
    assert {"message", "title", "authors"} <= set(cff)
    assert (cff["version"], cff["license"]) == (project["version"], project["license"])
    paper = cff["preferred-citation"]
    assert [a["family-names"] for a in paper["authors"]] == ["Vouros", "Vasilaki"]
    assert f"*{paper['title']}*" in (repo / "docs" / "method" / "index.md").read_text()
    readme = (repo / "README.md").read_text().split("## How to cite")[1]
    flat = " ".join(readme.split())
    assert (f"Vouros, A. & Vasilaki, E. ({paper['year']}). {paper['title']}. "
            f"*{paper['journal']}*, {paper['volume']}, {paper['start']}-{paper['end']}.") in flat
    assert f"version {cff['version']}. Licence {cff['license']}." in flat
