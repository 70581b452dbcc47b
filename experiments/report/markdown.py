"""A small Markdown writer for report.md: headings, paragraphs, lists, tables, images."""

import math
from pathlib import Path


def _cell(value, digits):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f"{value:.3g}"
        return f"{value:.{digits}f}".rstrip("0").rstrip(".") if digits else f"{value:g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(frame, digits=4):
    """A pipe table of a DataFrame (floats with ``digits`` decimals, NaN written out)."""
    if frame is None or frame.empty:
        return "*(empty)*"
    header = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v.item() if hasattr(v, "item") else v, digits)
                                       for v in row) + " |")
    return "\n".join(lines)


class Document:
    """Collects Markdown blocks and writes them to a file."""

    def __init__(self):
        self.blocks = []

    def heading(self, text, level=2):
        self.blocks.append("#" * level + " " + text)

    def paragraph(self, text):
        self.blocks.append(text)

    def bullets(self, items):
        if items:
            self.blocks.append("\n".join(f"- {item}" for item in items))

    def table(self, frame, digits=4):
        self.blocks.append(table(frame, digits))

    def image(self, path, alt):
        self.blocks.append(f"![{alt}]({Path(path).name})")

    def write(self, path):
        Path(path).write_text("\n\n".join(self.blocks) + "\n", encoding="utf-8")
        return Path(path)
