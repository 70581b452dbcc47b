"""How the report writes its CSV tables: one number format (10 significant digits) for every
writer of a report's files, so that a table written again from the same values is the same
file."""

FLOAT_FORMAT = "%.10g"


def write_csv(frame, path):
    """Write ``frame`` (a pandas DataFrame, without its index) to ``path``."""
    frame.to_csv(path, index=False, float_format=FLOAT_FORMAT)
