"""Safe readers for prediction/reference arrays: never unpickle, never trust file contents."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

_MISSING_CSV = {"", "nan", "NaN", "NAN", "NA", "N/A", "n/a", "null", "NULL", "None", "<NA>", "-nan", "#N/A"}


class ArrayLoadError(ValueError):
    pass


def load_npy(path: Path) -> np.ndarray:
    """``np.load`` with ``allow_pickle=False``; only a plain ndarray is accepted."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            value = np.load(fh, allow_pickle=False)
            if not isinstance(value, np.ndarray):  # .npz archive under an .npy name
                raise ArrayLoadError(f"{path.name}: not a single .npy array ({type(value).__name__})")
    except ArrayLoadError:
        raise
    except FileNotFoundError:
        raise ArrayLoadError(f"{path.name}: file not found") from None
    except ValueError as exc:
        if "pickle" in str(exc):
            raise ArrayLoadError(f"{path.name}: refused to load pickled/object data (allow_pickle=False)") from None
        raise ArrayLoadError(f"{path.name}: cannot load .npy: {exc}") from None
    except (OSError, EOFError) as exc:
        raise ArrayLoadError(f"{path.name}: cannot load .npy: {exc}") from None
    return value


def read_csv_column(path: Path, column: str) -> np.ndarray:
    """One named column of a header-first CSV as float64 (empty/NA cells → NaN, blank rows skipped)."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            rows = [row for row in csv.reader(fh) if any(cell.strip() for cell in row)]
    except FileNotFoundError:
        raise ArrayLoadError(f"{path.name}: file not found") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ArrayLoadError(f"{path.name}: cannot read CSV: {exc}") from None
    if not rows:
        raise ArrayLoadError(f"{path.name}: empty CSV")
    header = rows[0]
    if column not in header:
        raise ArrayLoadError(f"{path.name}: no column {column!r} (columns: {', '.join(header)})")
    index = header.index(column)
    values = []
    for line_no, row in enumerate(rows[1:], start=2):
        cell = row[index].strip() if index < len(row) else ""
        if cell in _MISSING_CSV:
            values.append(math.nan)
            continue
        try:
            values.append(float(cell))
        except ValueError:
            raise ArrayLoadError(f"{path.name}: line {line_no}: {column}={cell!r} is not a number") from None
    return np.asarray(values, dtype=np.float64)
