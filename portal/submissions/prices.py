"""The dated price table (`model_prices.toml`): what a model call costs when its record has tokens but no cost.

Pure Python, no Django. The table is repository data, reviewed like code: every price names the date its
source stated it and the source. It is read once per process and checked as it is read, so a malformed
table stops the Portal at start-up instead of pricing a run wrongly. A model the table does not list is
never guessed at: `PriceTable.find` answers None and the call's cost stays unknown.
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

PRICE_TABLE = Path(__file__).with_name("model_prices.toml")
PER_TOKENS = 1_000_000


class PriceTableError(ValueError):
    """The price table is malformed; the message names the entry and what is wrong."""


@dataclass(frozen=True)
class Price:
    model: str
    input: float
    output: float
    as_of: date
    source: str
    cache_read: float | None = None
    cache_write: float | None = None
    above_tokens: int | None = None
    above_input: float | None = None
    above_output: float | None = None

    def public(self) -> dict[str, Any]:
        """What pages and exports say about a price that was used."""
        return {"model": self.model, "input_per_mtok": self.input, "output_per_mtok": self.output,
                "as_of": self.as_of.isoformat(), "source": self.source}


def model_key(model: str) -> str:
    return " ".join(model.split()).lower()


@dataclass(frozen=True)
class PriceTable:
    prices: tuple[Price, ...]
    by_id: dict[str, Price]

    def find(self, model: str | None) -> Price | None:
        """The price of `model` as a call record names it, with or without a provider prefix
        (`anthropic/claude-sonnet-4-5`); None for a model the table does not list."""
        if not model:
            return None
        key = model_key(model)
        return self.by_id.get(key) or self.by_id.get(key.rsplit("/", 1)[-1])

    @staticmethod
    def call_cost(price: Price, *, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0,
                  cache_write_tokens: int = 0) -> float | None:
        """USD for one call; None when it records cache tokens the price does not cover."""
        if (cache_read_tokens and price.cache_read is None) or (cache_write_tokens and price.cache_write is None):
            return None
        prompt = input_tokens + cache_read_tokens + cache_write_tokens
        scale, output = 1.0, price.output
        if price.above_tokens is not None and prompt > price.above_tokens:
            assert price.above_input is not None and price.above_output is not None
            scale, output = price.above_input / price.input if price.input else 1.0, price.above_output
        usd = (input_tokens * price.input * scale + output_tokens * output
               + cache_read_tokens * (price.cache_read or 0.0) * scale
               + cache_write_tokens * (price.cache_write or 0.0) * scale) / PER_TOKENS
        return usd


def _number(entry: dict[str, Any], key: str, where: str, *, required: bool = True) -> float | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, (int, float)) or type(value) is bool or not math.isfinite(value) or value < 0:
        raise PriceTableError(f"{where}: {key} must be a non-negative number of USD per million tokens, got {value!r}")
    return float(value)


def _price(entry: Any, where: str) -> tuple[Price, list[str]]:
    if not isinstance(entry, dict):
        raise PriceTableError(f"{where}: each [[price]] must be a table")
    known = {"model", "aliases", "input", "output", "cache_read", "cache_write", "above_tokens", "above_input",
             "above_output", "as_of", "source"}
    unknown = sorted(set(entry) - known)
    if unknown:
        raise PriceTableError(f"{where}: unknown key(s) {', '.join(unknown)}")
    model, aliases = entry.get("model"), entry.get("aliases", [])
    if not isinstance(model, str) or not model.strip():
        raise PriceTableError(f"{where}: model must be a model id")
    where = f"{where} ({model})"
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise PriceTableError(f"{where}: aliases must be a list of model ids")
    as_of, source = entry.get("as_of"), entry.get("source")
    if type(as_of) is not date:
        raise PriceTableError(f"{where}: as_of must be the date the source stated the price (YYYY-MM-DD)")
    if not isinstance(source, str) or not source.startswith("https://"):
        raise PriceTableError(f"{where}: source must be the https:// address the price was read from")
    above = [entry.get(k) for k in ("above_tokens", "above_input", "above_output")]
    if any(v is not None for v in above) and not all(v is not None for v in above):
        raise PriceTableError(f"{where}: above_tokens, above_input and above_output go together")
    if above[0] is not None and (type(above[0]) is not int or above[0] <= 0):
        raise PriceTableError(f"{where}: above_tokens must be a positive whole number of tokens")
    price = Price(model=model.strip(), input=_number(entry, "input", where) or 0.0,
                  output=_number(entry, "output", where) or 0.0, as_of=as_of, source=source,
                  cache_read=_number(entry, "cache_read", where, required=False),
                  cache_write=_number(entry, "cache_write", where, required=False),
                  above_tokens=above[0], above_input=_number(entry, "above_input", where, required=False),
                  above_output=_number(entry, "above_output", where, required=False))
    return price, [price.model, *aliases]


def parse_price_table(text: str) -> PriceTable:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceTableError(f"not valid TOML: {exc}") from None
    entries = data.get("price")
    if set(data) - {"price"} or not isinstance(entries, list):
        raise PriceTableError("the table holds only [[price]] entries")
    prices: list[Price] = []
    by_id: dict[str, Price] = {}
    for number, entry in enumerate(entries, 1):
        price, ids = _price(entry, f"price {number}")
        for model_id in ids:
            key = model_key(model_id)
            if key in by_id:
                raise PriceTableError(f"price {number} ({price.model}): {model_id!r} is already priced by "
                                      f"{by_id[key].model}")
            by_id[key] = price
        prices.append(price)
    return PriceTable(prices=tuple(prices), by_id=by_id)


@functools.cache
def price_table(path: Path = PRICE_TABLE) -> PriceTable:
    return parse_price_table(path.read_text(encoding="utf-8"))
