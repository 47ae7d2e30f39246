"""model.summary()'s table as Keras 3 lays it out: columns placed by `positions` over `line_length`, long cells
wrapped (given neither, each column as wide as its cells), a Trainable column, nested models expanded, a `layer_range` of rows; plain text (no colours)."""

import os
import re
import sys
import textwrap


def _terminal_columns():
    """the terminal's width (COLUMNS first), or no limit when printing to a notebook, a file or a pipe (Keras
    takes 80 there, wrapping the default 108-wide table)"""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 1 << 30


def _widths(positions, line_length):
    """column widths from Keras's positions: fractions of line_length when all <= 1, else absolute column ends"""
    if any(p > 1 for p in positions):
        ends = [int(p) for p in positions]
    else:
        ends = [int(p * line_length) for p in positions]
    widths, current = [], 0
    for e in ends:
        if e - current < 4:
            raise ValueError(f"summary: positions={list(positions)} with line_length={line_length} leave a column "
                             "narrower than 4 characters (Keras's 'Insufficient console width')")
        widths.append(e - current)
        current = e
    return widths


def _layer_bounds(layers, layer_range):
    """Keras's layer_range: the first layer matching layer_range[0] to the last matching layer_range[1], inclusive"""
    if layer_range is None:
        return 0, len(layers)
    if not isinstance(layer_range, (list, tuple)) or len(layer_range) != 2:
        raise ValueError(f"summary: layer_range must be a list or tuple of two layer names, got {layer_range!r}")
    if not all(isinstance(s, str) for s in layer_range):
        raise ValueError(f"summary: layer_range should contain strings only, got {layer_range!r}")
    lo = [i for i, l in enumerate(layers) if re.match(layer_range[0], l.name)]
    hi = [i for i, l in enumerate(layers) if re.match(layer_range[1], l.name)]
    if not lo or not hi:
        missing = layer_range[0] if not lo else layer_range[1]
        raise ValueError(f"summary: layer_range: no layer's name matches {missing!r}; the layers are "
                         f"{[l.name for l in layers]}")
    if lo[0] > hi[-1]:
        raise ValueError(f"summary: layer_range={list(layer_range)}: {layer_range[0]!r} comes after {layer_range[1]!r}")
    return lo[0], hi[-1] + 1


def _wrap(cell, width):
    """a cell over lines of its column (one space kept between columns), broken at spaces where it can"""
    return textwrap.wrap(cell, max(width - 1, 1), break_on_hyphens=False) or [""]


def table(header, rows, line_length=None, positions=None, show_trainable=False, layer_range=None,
          expand=None):
    """The summary's table as lines. rows: (layer, cells); expand(layer) gives a nested model's (layer, cells)
    rows (or None: not expanded)."""
    functional = len(header) == 4
    given = (line_length, positions) if line_length or positions else None
    default = 108 if functional else 88
    positions = list(positions or ([0.3, 0.56, 0.74, 1.0] if functional else [0.45, 0.80, 1.0]))
    header = list(header)
    if show_trainable:
        default += 12
        positions = [p * 0.90 for p in positions] + [1.0]
        header.append("Trainable")
    if len(positions) != len(header):
        raise ValueError(f"summary: positions needs {len(header)} entries (one per column: {header}), "
                         f"got {len(positions)}")
    line_length = line_length or min(default, _terminal_columns() - 4)
    if not isinstance(line_length, int) or line_length < 4:
        raise ValueError(f"summary: line_length must be a positive integer, got {line_length!r}")
    lo, hi = _layer_bounds([l for l, _ in rows], layer_range)
    fit_content = given is None
    widths = _widths(positions, line_length) if not fit_content else [1 << 20] * len(header)

    def lines_of(cells):
        parts = [_wrap(str(c), w) for c, w in zip(cells, widths)]
        return ["".join(p[k].ljust(w) if k < len(p) else " " * w for p, w in zip(parts, widths)).rstrip()
                for k in range(max(len(p) for p in parts))]

    def rows_of(layer, cells, level):
        cells = list(cells)
        if level:   # a nested model's layer: Keras gives it no connections of the outer graph
            cells = ["   " * level + "└ " + cells[0]] + cells[1:3] + ["-"] * functional
        if show_trainable:
            cells.append("-" if cells[2] == "0" else ("Y" if getattr(layer, "trainable", True) else "N"))
        out = [cells]
        for sub, sub_cells in (expand(layer) if expand else None) or []:
            out += rows_of(sub, sub_cells, level + 1)
        return out

    body = [rows_of(layer, cells, 0) for layer, cells in rows[lo:hi]]
    if fit_content:   # neither line_length nor positions: each column as wide as its widest cell (no wrapping)
        widths = [max(len(str(r[j])) for r in [header] + [r for b in body for r in b]) + 2 for j in range(len(header))]
    total = sum(widths)
    out = lines_of(header) + ["=" * total]
    for i, b in enumerate(body):
        if i:
            out.append("-" * total)
        for r in b:
            out += lines_of(r)
    return out + ["=" * total]
