"""Experiment specs (experiments/spec.py and the bundled TOML files)."""

import json
import re

import pytest

from pcskm.experiments.datasets import list_datasets
from pcskm.experiments.spec import AlgorithmVariant, ExperimentSpec, load_spec, parse_spec

MINIMAL = """
datasets = ["iris"]
algorithms = ["LKM", "PCSKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1, 10]
n_runs = 2
"""


def _error(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_spec(text, source="test.toml")


def test_paper_spec_is_the_full_study():
    spec = load_spec("paper")
    assert isinstance(spec, ExperimentSpec) and spec.name == "paper"
    expected = (["fisheriris", "ionosphere"]
                + [f"digits{c}-{s}" for c in ("048", "389") for s in range(1, 11)]
                + ["mwm-ttscst", "mwm-ttchst", "brodinova-5-5", "brodinova-3-7"]
                + [f"digits{c}-contaminated-{s}" for c in ("048", "389") for s in range(1, 11)])
    assert spec.datasets == tuple(expected)
    assert [a.name for a in spec.algorithms] == ["LKM", "SKM", "PCKM", "MPCKM", "PCSKM",
                                                 "PCSKM-paper"]
    assert spec.algorithms[-1] == AlgorithmVariant("PCSKM-paper", "PCSKM",
                                                   {"weight_update": "paper"})
    assert all(a.params == {} and a.estimator == a.name for a in spec.algorithms[:5])
    assert set(spec.inits) == {"dkm++", "seeding", "robin", "maximin"}
    assert set(spec.kinds) == {"random", "must-link", "cannot-link", "balanced"}
    assert spec.seeding_kinds == ("random",)
    assert spec.percentages == tuple((10 + 5 * i) / 10 for i in range(19))
    assert (spec.n_runs, spec.n_folds, spec.max_iter, spec.seed) == (25, 10, 25, 0)
    assert (spec.sparsity_start, spec.sparsity_step, spec.sparsity_max_values) == (1.1, 0.2, 30)
    assert len(spec.sparsity_grid(34)) == 24


def test_quick_and_smoke_specs():
    quick, smoke = load_spec("quick"), load_spec("smoke")
    assert quick.datasets == ("iris", "brodinova-5-5", "brodinova-3-7")
    assert smoke.datasets == ("iris", "brodinova-5-5")
    for spec in (quick, smoke):
        assert [a.name for a in spec.algorithms] == ["LKM", "SKM", "PCKM", "MPCKM", "PCSKM"]
        assert spec.inits == ("dkm++", "seeding") and spec.n_folds == 10
        assert "REDUCED" in spec.description
    assert quick.percentages == (1.0, 5.5, 10.0) and quick.n_runs == 5
    assert smoke.percentages == (1.0, 10.0) and smoke.n_runs == 2 and smoke.kinds == ("random",)


def test_defaults_and_load_from_a_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(MINIMAL)
    spec = load_spec(path)
    assert spec.name == "mine" and spec.seed == 0 and spec.n_folds == 10
    assert spec.max_iter == 25 and spec.seeding_kinds == ("random",)
    assert spec.source_text == MINIMAL
    assert load_spec(str(path)) == spec


def test_percentage_range_is_inclusive_and_exact():
    spec = parse_spec(MINIMAL.replace("[1, 10]", "{ start = 1.1, stop = 2.0, step = 0.3 }"))
    assert spec.percentages == (1.1, 1.4, 1.7, 2.0)
    listed = parse_spec(MINIMAL.replace("[1, 10]", "[1.1, 1.4, 1.7, 2.0]"))
    assert listed.hash() == spec.hash()


def test_percentages_in_any_order_are_the_cube_order():
    """The cube keeps percentages ascending; a spec listing them otherwise is the same spec
    (a rerun of it must not look like an extension of its own store)."""
    shuffled = parse_spec(MINIMAL.replace("[1, 10]", "[10, 1, 5.5]"))
    ordered = parse_spec(MINIMAL.replace("[1, 10]", "[1, 5.5, 10]"))
    assert shuffled.percentages == (1.0, 5.5, 10.0)
    assert shuffled.hash() == ordered.hash()


def test_dataset_patterns_expand_in_registry_order():
    spec = parse_spec(MINIMAL.replace('["iris"]', '["digits389-*", "brodinova-*", "iris"]'))
    expected = ([f"digits389-{s}" for s in range(1, 11)]
                + [f"digits389-contaminated-{s}" for s in range(1, 11)]
                + [f"digits389-shuffled-{s}" for s in range(1, 11)])
    brodinova = ["brodinova-5-5", "brodinova-3-7", "brodinova-5-45", "brodinova-3-97",
                 "brodinova-10-90", "brodinova-4-46-k4", "brodinova-6-94-k5",
                 "brodinova-8-192-k4"]  # docs/method/datasets.md §4, §4.1
    assert spec.datasets == tuple(expected + brodinova + ["iris"])
    assert all(name in list_datasets() for name in spec.datasets)


def test_hash_ignores_layout_order_and_description():
    reordered = """
# same content
n_runs   = 2
percentages = [ 1.0,
                10 ]
kinds = [ "random" ]
description = "another text"
inits = ["dkm++"]
algorithms = ["LKM", "PCSKM"]
datasets = ["iris"]
seed = 0
"""
    base = parse_spec(MINIMAL)
    assert parse_spec(reordered).hash() == base.hash()
    assert parse_spec(MINIMAL.replace("n_runs = 2", "n_runs = 3")).hash() != base.hash()
    assert parse_spec(MINIMAL + "seed = 1\n").hash() != base.hash()
    variant = MINIMAL.replace('"PCSKM"]', '"PCSKM", "P"]')
    paper = parse_spec(variant + '[variants.P]\nestimator = "PCSKM"\n'
                       'params = { weight_update = "paper" }\n')
    code = parse_spec(variant + '[variants.P]\nestimator = "PCSKM"\n'
                      'params = { weight_update = "code" }\n')
    assert paper.hash() != code.hash()
    assert json.loads(json.dumps(paper.to_dict()))["algorithms"][2] == {
        "name": "P", "estimator": "PCSKM", "params": {"weight_update": "paper"}}
    assert len({hash(a) for a in paper.algorithms}) == 3


@pytest.mark.parametrize("old,new,message", [
    ('["iris"]', '["irs"]', "unknown data set 'irs'; did you mean 'iris'"),
    ('["iris"]', '["mnist-*"]', "the data set pattern 'mnist-*' matches no data set"),
    ('["iris"]', "[]", "datasets must be a non-empty list"),
    ('["LKM", "PCSKM"]', '["LKM", "PCSKN"]', "unknown algorithm 'PCSKN' in algorithms; did you "
     "mean 'PCSKM'?"),
    ('["LKM", "PCSKM"]', '["LKM", "LKM"]', "algorithms lists 'LKM' more than once"),
    ('["dkm++"]', '["robbin"]', "unknown init 'robbin' in inits; did you mean 'robin'?"),
    ('["random"]', '["both"]', "unknown kind 'both' in kinds"),
    ('["random"]', "[]", "kinds must be a non-empty list"),
    ("[1, 10]", "[]", "percentages is empty"),
    ("[1, 10]", "[1.05]", "bad percentage in percentages: percentage 1.05 is not a multiple"),
    ("[1, 10]", "[0, 10]", "percentage must lie in (0, 100]"),
    ("[1, 10]", "[1, 1.0]", "percentages lists a value twice"),
    ("[1, 10]", "{ start = 1, stop = 10, step = 0 }", "percentages.step must be positive"),
    ("[1, 10]", "{ start = 1, stop = 10, step = -0.5 }", "percentages.step must be positive"),
    ("[1, 10]", "{ start = 1, stop = 10 }", "missing step"),
    ("[1, 10]", "{ start = 5, stop = 1, step = 1 }", "percentages.stop (1) is below start"),
    ("[1, 10]", "{ start = 1, end = 10, step = 1 }", "unknown key 'end' in percentages"),
    ("n_runs = 2", "n_runs = 0", "n_runs must be an integer >= 1; got 0"),
    ("n_runs = 2", "n_run = 2", "unknown key 'n_run' in the spec; did you mean 'n_runs'?"),
    ("n_runs = 2", "n_runs = 2\nn_fold = 3", "unknown key 'n_fold' in the spec; did you mean "
     "'n_folds'?"),
    ("n_runs = 2", "n_runs = 2\nsparsity_step = 0", "sparsity_step must be positive"),
    ("n_runs = 2", "n_runs = 2\nsparsity_step = -0.2", "sparsity_step must be positive"),
    ("n_runs = 2", "n_runs = 2\nsparsity_start = 1.0", "sparsity_start must be above 1"),
    ("n_runs = 2", "n_runs = 2\nseeding_kinds = []", "seeding_kinds must be a non-empty list"),
    ("n_runs = 2", "n_runs = 2\nn_folds = 1", "n_folds must be an integer >= 2"),
    ("n_runs = 2", "n_runs = 2\nseed = -1", "seed must be an integer >= 0"),
    ("n_runs = 2", "", "missing required key(s): n_runs"),
    ("n_runs = 2", "n_runs = ", "invalid TOML"),
])
def test_errors_name_the_problem(old, new, message):
    assert old in MINIMAL
    _error(MINIMAL.replace(old, new, 1), message)


def test_variant_errors():
    listed = MINIMAL.replace('"PCSKM"]', '"PCSKM", "PCSKM-paper"]')
    _error(listed, "unknown algorithm 'PCSKM-paper'")
    _error(listed + '[variants.PCSKM-paper]\nestimator = "PCSKX"\n',
           "unknown estimator 'PCSKX' in variants.PCSKM-paper.estimator; did you mean 'PCSKM'?")
    _error(listed + '[variants.PCSKM-paper]\nestimater = "PCSKM"\n',
           "unknown key 'estimater' in variants.PCSKM-paper; did you mean 'estimator'?")
    _error(listed + "[variants.PCSKM-paper]\nparams = {}\n",
           "variants.PCSKM-paper needs an estimator")
    _error(listed + '[variants.PCSKM-paper]\nestimator = "PCSKM"\nparams = 3\n',
           "variants.PCSKM-paper.params must be a table")
    _error(MINIMAL + '[variants.unused]\nestimator = "PCSKM"\n',
           "variants unused defined but not listed in algorithms")
    _error(MINIMAL + '[variants.PCSKM]\nestimator = "PCSKM"\n',
           "a variant cannot reuse the estimator name 'PCSKM'")


def _variant(estimator, params):
    return (MINIMAL.replace('"PCSKM"]', '"PCSKM", "V"]')
            + f'[variants.V]\nestimator = "{estimator}"\nparams = {params}\n')


@pytest.mark.parametrize("estimator, params, message", [
    # issue 13: a fixed s was accepted, ignored (the whole grid ran) and recorded
    ("PCSKM", "{ sparsity = 2.0 }", "variants.V.params sets sparsity, which the runner sets for "
     "every cell from the s grid of the spec's sparsity_start, sparsity_step and "
     "sparsity_max_values"),
    ("SKM", "{ sparsity = 1.5 }", "sets sparsity"),
    ("PCSKM", "{ n_clusters = 4 }", "sets n_clusters, which the runner sets for every cell "
     "from the data set's number of classes"),
    ("PCKM", '{ init = "seeding" }', "sets init, which the runner sets for every cell from the "
     "spec's inits"),
    ("MPCKM", "{ random_state = 3 }", "sets random_state, which the runner sets"),
    ("PCSKM", "{ weight_updte = \"paper\" }", "unknown parameter 'weight_updte' in "
     "variants.V.params; did you mean 'weight_update'? (a variant of PCSKM may set "
     "empty_cluster, inner_max_iter, max_iter, tol, weight_update)"),
    ("SKM", '{ weight_update = "paper" }', "unknown parameter 'weight_update'"),
    ("LKM", "{ tol = 0.1 }", "a variant of LKM may set empty_cluster, max_iter)"),
    ("PCSKM", '{ weight_update = "papr" }', "variants.V.params: weight_update must be one of "
     "['code', 'paper']; got 'papr'"),
    ("MPCKM", "{ max_iter = 0 }", "variants.V.params: max_iter must be an integer >= 1; got 0"),
    ("PCSKM", "{ tol = -1.0 }", "tol must be a finite number >= 0"),
    ("PCKM", '{ empty_cluster = "drop" }', "empty_cluster must be one of"),
])
def test_variant_params_the_runner_sets_or_the_estimator_refuses(estimator, params, message):
    """Refused when the spec is read, naming the spec keys that control the value instead."""
    _error(_variant(estimator, params), message)


def test_variant_params_that_are_accepted_reach_the_estimator():
    """Every parameter a variant may set is passed to the estimator of its cells, over the
    spec's max_iter (docs/reference: max_iter)."""
    from pcskm.experiments import cells

    cases = {"PCSKM": '{ weight_update = "paper", max_iter = 3, inner_max_iter = 4, '
                      'tol = 0.5, empty_cluster = "zero" }',
             "SKM": '{ max_iter = 3, inner_max_iter = 4, tol = 0.5, empty_cluster = "zero" }',
             "PCKM": '{ max_iter = 3, empty_cluster = "relocate" }',
             "LKM": '{ max_iter = 3, empty_cluster = "zero" }',
             "MPCKM": '{ max_iter = 7, empty_cluster = "fail" }'}
    for estimator, params in cases.items():
        spec = parse_spec(_variant(estimator, params))
        variant = spec.algorithms[-1]
        setting = cells.Setting.from_spec(spec, "iris", variant, "dkm++", (1.1, 1.3))
        made = cells.make_estimator(setting, "seeding").get_params()
        assert {k: made[k] for k in variant.params} == variant.params, estimator
        assert made["n_clusters"] == 3 and made["init"] == "seeding"


def test_unknown_spec_name():
    with pytest.raises(ValueError, match="not a bundled spec .* did you mean 'quick'"):
        load_spec("quik")


@pytest.mark.parametrize("name", ["../../evil", "a/b", "a\\\\b", ".hidden", ""])
def test_a_spec_name_that_is_no_file_name_is_refused(name):
    """A spec named ../../evil put its default store, results/<name>.zarr, outside
    results/."""
    _error(f'name = "{name}"\n' + MINIMAL, "a spec name names its store, results/<name>.zarr")


@pytest.mark.parametrize(("kind", "length"), [("spec", 300), ("data set", 300)])
def test_a_name_too_long_for_a_file_is_refused(tmp_path, kind, length):
    """A data set name of 300 characters ran until its group's folder could not be made
    ("File name too long"), and was then taken for a full disk."""
    name = "d" * length
    (tmp_path / "points.csv").write_text("x,y,group\n0,0,a\n1,1,b\n2,2,a\n3,3,b\n")
    data = f'\n[data.{name}]\npath = "points.csv"\nlabel_column = "group"\n'
    text = (f'name = "{name}"\n' + MINIMAL if kind == "spec" else
            MINIMAL.replace('["iris"]', f'["{name}"]') + data)
    with pytest.raises(ValueError, match=f"at most 100 characters.*this one has {length}"):
        parse_spec(text, source="test.toml", folder=tmp_path)
    accepted = "d" * 100
    parse_spec(text.replace(name, accepted), source="test.toml", folder=tmp_path)
