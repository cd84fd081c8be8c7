"""Sizes in bytes as people write them: ``6GB``, ``512MiB``, ``800M``, ``1048576``.

Units are case-insensitive. ``KB``, ``MB``, ``GB`` and ``TB`` are decimal (powers of
1000); ``KiB``, ``MiB``, ``GiB`` and ``TiB`` (or ``Ki`` ... ``Ti``) are binary (powers of
1024), and so are the bare letters ``K``, ``M``, ``G`` and ``T``, as in ``sort -S``,
``docker -m`` and ``java -Xmx``. A plain number, or one followed by ``B``, is bytes.

>>> parse_size("6GB"), parse_size("512MiB"), parse_size("800m"), parse_size("1.5 kb")
(6000000000, 536870912, 838860800, 1500)
>>> format_size(6_000_000_000), format_size(536870912), format_size(65536), format_size(999)
('6 GB', '512 MiB', '64 KiB', '999 bytes')
"""

from __future__ import annotations

import re

from neardup.errors import ConfigError

_UNITS: dict[str, int] = {"": 1, "b": 1}
for _i, _letter in enumerate("kmgt", start=1):
    _UNITS[f"{_letter}b"] = 1000**_i
    _UNITS[_letter] = _UNITS[f"{_letter}i"] = _UNITS[f"{_letter}ib"] = 1024**_i

_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*")
_HINT = "try 6GB, 512MiB, 800M or a number of bytes"


def parse_size(text: str) -> int:
    """Bytes in ``text``; anything else is a :class:`ConfigError` naming what was given."""
    m = _SIZE.fullmatch(text.lower())
    if m is None or m.group(2) not in _UNITS:
        raise ConfigError(f"not a size: {text!r} ({_HINT})")
    return int(float(m.group(1)) * _UNITS[m.group(2)])  # a fraction of a byte is dropped


def format_size(n: int) -> str:
    """``n`` bytes in the largest unit that shows it exactly in at most four digits (else in
    decimal units, to one place)."""
    exact = [(f, u) for u, f in _NAMES if n >= f and n % f == 0 and n // f < 10_000]
    if exact:
        factor, unit = max(exact)
        return f"{n // factor} {unit}"
    for unit, factor in (("GB", 1000**3), ("MB", 1000**2), ("KB", 1000)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} bytes"


_NAMES = [(f"{p}iB", 1024**i) for i, p in enumerate("KMGT", 1)] + [
    (f"{p}B", 1000**i) for i, p in enumerate("KMGT", 1)
]


def memory_limit_bytes(limit: int | str | None) -> int:
    """A memory limit in bytes from a whole number of bytes, a size string (``"6GB"``) or ``None``
    (a quarter of physical memory); one below 64 KiB, or of another type, is a :class:`ConfigError`.

    >>> memory_limit_bytes("512MiB")
    536870912
    """
    from neardup.engines.plan import MIN_MEMORY_LIMIT, default_memory_limit

    if limit is None:
        return default_memory_limit()
    if isinstance(limit, str):
        try:
            value = parse_size(limit)
        except ConfigError as exc:
            raise ConfigError(f"memory_limit: {exc}") from None
    elif isinstance(limit, int) and not isinstance(limit, bool):
        value = limit
    else:
        raise ConfigError(f"memory_limit must be a size (6GB, 512MiB) or a number of bytes, got {limit!r}")
    if value < MIN_MEMORY_LIMIT:
        raise ConfigError(
            f"memory_limit must be at least {format_size(MIN_MEMORY_LIMIT)} ({MIN_MEMORY_LIMIT} bytes), "
            f"got {limit}"
        )
    return value
