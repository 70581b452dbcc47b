"""A small Markdown writer for report.md: headings, paragraphs, lists, tables, images."""

import math
import re
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


def anchor(heading):
    """The link target GitHub and MkDocs give a heading: lower case, punctuation dropped,
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


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

    def placeholder(self):
        """Reserve a block to :meth:`fill` once later sections are written (a summary)."""
        self.blocks.append("")
        return len(self.blocks) - 1

    def fill(self, index, blocks):
        """Put ``blocks`` (Markdown strings) in place of the :meth:`placeholder` ``index``."""
        self.blocks[index] = "\n\n".join(blocks)

    def headings(self, level=2):
        """The texts of the headings of ``level`` written so far, in order."""
        mark = "#" * level + " "
        return [block[len(mark):] for block in self.blocks if block.startswith(mark)]

    def write(self, path):
        Path(path).write_text("\n\n".join(self.blocks) + "\n", encoding="utf-8")
        return Path(path)
