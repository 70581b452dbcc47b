"""Store arguments that are URLs (issue 32): a URL is never taken for a local folder
(``s3://b/x.zarr`` used to create ``s3:``): ``s3://bucket/prefix`` is an Icechunk repository
(tests/test_s3_store.py), any other scheme is refused before anything is read or created,
and a ``file://`` URL names a local folder (docs/reference/cli.md)."""

import pytest

from pcskm.runner.cli import main

URLS = ["s3://bucket", "s3://bucket/smoke.zarr?versionId=1", "gs://bucket/smoke.zarr",
        "az://container/smoke.zarr",
        "abfs://container@account.dfs.core.windows.net/smoke.zarr",
        "https://example.org/smoke.zarr", "memory://smoke.zarr",
        "simplecache::s3://bucket/smoke.zarr", "file://otherhost/data/smoke.zarr"]

# Every command that takes a store, the store's place marked by URL.
COMMANDS = [["run", "smoke", "--store", "URL", "--workers", "1", "--no-progress"],
            ["run", "smoke", "--from", "URL", "--store", "local.zarr", "--workers", "1",
             "--no-progress"],
            ["status", "URL"], ["status", "URL", "--verify"], ["verify", "URL"],
            ["report", "URL", "--out", "report"]]


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:3]))
def test_an_object_store_url_is_refused_and_nothing_is_created(command, url, tmp_path,
                                                               monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([url if word == "URL" else word for word in command])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert url in err
    if url.startswith("file:"):
        assert "a file:// URL names a folder" in err
    elif url.startswith("s3:"):
        assert "an object store is named s3://bucket/prefix" in err
    else:
        scheme = url.partition("://")[0]
        assert f"{scheme}:// stores are not supported; a store is a folder" in err
        assert "(s3://bucket/prefix)" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == []  # no s3: folder, no lock, no report


@pytest.mark.parametrize("command", ["status", "verify", "report"])
def test_a_file_url_names_the_local_folder(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "a b" / "smoke.zarr"
    for url in (f"file://{tmp_path}/a%20b/smoke.zarr", f"file://localhost{folder}"):
        assert main([command, url]) == 2
        err = capsys.readouterr().err
        assert f"{folder} is missing" in err or f"no store at {folder}\n" in err
    assert list(tmp_path.iterdir()) == []


def test_paths_that_are_not_urls_are_kept_as_given(tmp_path, monkeypatch, capsys):
    """A colon in a folder name is not a URL: ``results/run:1.zarr`` stays a path."""
    monkeypatch.chdir(tmp_path)
    assert main(["status", "results/run:1.zarr"]) == 2
    assert capsys.readouterr().err.strip() == "pcskm: no store at results/run:1.zarr"
