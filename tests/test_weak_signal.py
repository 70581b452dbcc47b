"""The weak-signal sparsity family (docs/method/datasets.md §4.3): the group means by hand, the
draws' moments against the model, the registry's names, codes, keys and masks, and the
committed calibration table against the family's goal."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pcskm.experiments import _weak_signal, list_datasets, load
from pcskm.experiments._seeds import DATA_SEED, generator
from pcskm.experiments.datasets import (
    WEAK_SIGNAL_FIRST_CODE,
    WEAK_SIGNAL_KEY,
    WEAK_SIGNAL_SETTINGS,
    weak_signal_name,
)

CALIBRATION = Path(__file__).parents[1] / "docs/results/weak-signal-calibration/calibration.csv"


def test_group_means_by_hand():
    np.testing.assert_array_equal(_weak_signal.group_means(0.5, 2, 4),
                                  [[-0.5, -0.5, 0, 0], [0, 0, 0, 0], [0.5, 0.5, 0, 0]])
    np.testing.assert_array_equal(_weak_signal.group_means(1.0, 1, 2, n_groups=4),
                                  [[-1.5, 0], [-0.5, 0], [0.5, 0], [1.5, 0]])


@pytest.mark.parametrize("args, message", [
    ((0.0, 2, 4), "shift must be a positive"),
    ((np.nan, 2, 4), "shift must be a positive"),
    ((0.5, 0, 4), "n_informative must be between 1 and n_features"),
    ((0.5, 5, 4), "n_informative must be between 1 and n_features"),
])
def test_bad_settings_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        _weak_signal.group_means(*args)


def test_draws_follow_the_model():
    shift, q, p, n = 0.8, 3, 6, 20_000
    X, y = _weak_signal.simulate(shift, q, p, np.random.default_rng(0), n_per_group=n)
    np.testing.assert_array_equal(y, np.repeat([0, 1, 2], n))
    for g, code in enumerate((-1, 0, 1)):
        rows = X[y == g]
        # means within 5 standard errors (1 / sqrt(n)) of the model's, variances near 1
        np.testing.assert_allclose(rows.mean(axis=0), [shift * code] * q + [0] * (p - q),
                                   atol=5 / np.sqrt(n))
        np.testing.assert_allclose(rows.var(axis=0), 1, atol=0.05)
    # the features are independent: the correlation matrix of one group is near the identity
    np.testing.assert_allclose(np.corrcoef(X[y == 0].T), np.eye(p), atol=0.05)


def test_the_registry_holds_the_family_as_documented():
    names = [weak_signal_name(*setting) for setting in WEAK_SIGNAL_SETTINGS]
    assert len(names) == len(set(names)) == 20
    assert names[0] == "weak-q20-m08-p200-1" and names[-1] == "weak-q50-m07-p500-2"
    assert [n for n in list_datasets() if n.startswith("weak-")] == names
    seen = set()
    for j, (name, (q, shift, p, _)) in enumerate(zip(names, WEAK_SIGNAL_SETTINGS, strict=True)):
        data = load(name)
        assert data.code == WEAK_SIGNAL_FIRST_CODE + j
        assert data.X.shape == (90, p) and np.unique(data.y).tolist() == [0, 1, 2]
        np.testing.assert_array_equal(data.informative, np.arange(p) < q)
        np.testing.assert_array_equal(data.uninformative, np.arange(p) >= q)
        # drawn from its own key (12, j), independently of the other draws
        X, y = _weak_signal.simulate(shift, q, p, generator(DATA_SEED, (WEAK_SIGNAL_KEY, j)))
        np.testing.assert_array_equal(data.X, X)
        np.testing.assert_array_equal(data.y, y)
        first_row = data.X[0, :5].tobytes()
        assert first_row not in seen
        seen.add(first_row)


def test_the_committed_calibration_meets_the_goal_for_every_setting():
    table = pd.read_csv(CALIBRATION)
    settings = {(q, shift, p) for q, shift, p, _ in WEAK_SIGNAL_SETTINGS}
    assert set(zip(table.n_informative, table["shift"], table.n_features, strict=True)) \
        == settings
    assert (table.lkm_mean_f < 0.95).all()
    draws = pd.read_csv(CALIBRATION.with_name("draws.csv"))
    # the calibration never used a key of the family
    keys = {tuple(int(k) for k in key.strip("()").split(",")) for key in draws.key}
    assert all(key[0] == 13 for key in keys) and len(keys) == 5 * len(settings)
    recomputed = draws.groupby(["n_informative", "shift", "n_features"]).f_all_features.mean()
    for row in table.itertuples():
        assert recomputed[(row.n_informative, row.shift, row.n_features)] \
            == pytest.approx(row.lkm_mean_f, abs=1e-5)
