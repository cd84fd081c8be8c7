"""Sizes as people write them: the parser behind ``--memory-limit``."""

from __future__ import annotations

import pytest

from neardup.errors import ConfigError
from neardup.sizes import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1048576", 1048576),
        ("0", 0),
        ("512B", 512),
        ("6GB", 6_000_000_000),
        ("6gb", 6_000_000_000),
        ("1.5 GB", 1_500_000_000),
        ("800KB", 800_000),
        ("2TB", 2 * 10**12),
        ("512MiB", 512 * 2**20),
        ("512mib", 512 * 2**20),
        ("3GiB", 3 * 2**30),
        ("64KiB", 65536),
        ("1TiB", 2**40),
        ("4Gi", 4 * 2**30),
        ("800M", 800 * 2**20),
        ("800m", 800 * 2**20),
        ("64k", 65536),
        ("2G", 2 * 2**30),
        (" 7 MB ", 7_000_000),
        (".5GiB", 2**29),
        ("10.7", 10),
    ],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "GB", "lots", "6 GBs", "-1GB", "6 XB", "1e9", "6GB5", "1,000"])
def test_parse_size_refuses(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_size(text)
    assert str(info.value) == f"not a size: {text!r} (try 6GB, 512MiB, 800M or a number of bytes)"


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 bytes"),
        (999, "999 bytes"),
        (1000, "1 KB"),
        (1024, "1 KiB"),
        (65536, "64 KiB"),
        (6_000_000_000, "6 GB"),
        (3 * 2**30, "3 GiB"),
        (1_234_567, "1.2 MB"),
        (2**40, "1 TiB"),
        (6_171_023 * 1024, "6.3 GB"),  # a quarter of RAM: exact only in KiB, too many digits
    ],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text
    if not text.endswith("bytes") and "." not in text:
        assert parse_size(text.replace(" ", "")) == size
