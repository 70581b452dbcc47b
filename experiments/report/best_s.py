"""Tables of the selected s (docs/method/protocol.md §9): per data set in the CSV, per reported
data set in report.md, with the optimism of the paper-style selection (its F minus the honest F)."""

import pandas as pd

from .fits import quiet


def by_dataset(results):
    """Per cube data set, init, kind, sparse algorithm and percentage: the paper-style s and
    F, the honest selection's mean and most frequent s (with its share of the cells) and F."""
    rows = []
    for name, summary in results.best_s.items():
        frame = summary.to_dataframe().reset_index()
        f_mean = results.by_dataset[name].f_mean
        paper = f_mean.sel(selection="paper").to_dataframe(name="paper_f").reset_index()
        honest = f_mean.sel(selection="honest").to_dataframe(name="honest_f").reset_index()
        keys = ["algorithm", "init", "kind", "percent"]
        frame = frame.merge(paper[[*keys, "paper_f"]], on=keys).merge(
            honest[[*keys, "honest_f"]], on=keys)
        frame = frame[frame.honest_n > 0]
        frame.insert(0, "dataset", name)
        rows.append(frame)
    if not rows:
        return pd.DataFrame()
    table = pd.concat(rows, ignore_index=True)
    for column in ("algorithm", "init", "kind"):
        table[column] = table[column].astype(str)
    order = ["dataset", "init", "kind", "algorithm", "percent", "paper_s", "paper_f",
             "honest_s_mean", "honest_s_mode", "honest_s_mode_share", "honest_n", "honest_f"]
    return table[order].sort_values(order[:5]).reset_index(drop=True)


def _span(values):
    if not len(values):
        return "none"
    if values.min() == values.max():
        return f"{values.min():.1f}"
    return f"{values.min():.1f} to {values.max():.1f} (mostly {values.mode().iloc[0]:.1f})"


def by_family(results, detail):
    """One row per (reported data set, init, kind) and sparse algorithm: the range of the
    paper-style s over percentages (and subsets), the mean honest s, and the mean over
    percentages of F(paper) - F(honest)."""
    if detail.empty:
        return pd.DataFrame()
    member_of = {name: label for label, members in results.family_members.items()
                 for name in members}
    detail = detail.assign(family=detail.dataset.map(member_of))
    rows = []
    with quiet():
        for (family, init, kind, algorithm), group in detail.groupby(
                ["family", "init", "kind", "algorithm"], sort=False):
            s = group.paper_s.dropna()
            gain = (group.paper_f - group.honest_f).mean()
            rows.append({
                "dataset": results.family_labels[family], "init": init, "kind": kind,
                "algorithm": algorithm,
                "paper_s": _span(s),
                "honest_s_mean": group.honest_s_mean.mean(),
                "F_paper_minus_honest": gain,
            })
    return pd.DataFrame(rows)
