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
