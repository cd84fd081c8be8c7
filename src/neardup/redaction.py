"""Secrets kept out of messages: a URL's password is shown as ``***``.

>>> redact_url("redis://:s3cret@cache:6379/0?prefix=news")
'redis://:***@cache:6379/0?prefix=news'
>>> redact_url("rediss://reader:s3cret@cache:6380/1")
'rediss://reader:***@cache:6380/1'
>>> redact_url("idx.db")
'idx.db'
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (a path, or a URL without one, as it is)."""
    if "://" not in url or "@" not in url:
        return url
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a malformed netloc (a bad port): hide everything before the last @
        scheme, _, rest = url.partition("://")
        return f"{scheme}://***@{rest.rpartition('@')[2]}"
    if password is None:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}"))
