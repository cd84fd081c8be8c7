"""Secrets kept out of messages: a URL's password is shown as ``***``.

>>> redact_url("redis://:s3cret@cache:6379/0?prefix=news")
'redis://:***@cache:6379/0?prefix=news'
>>> redact_url("rediss://reader:s3cret@cache:6380/1")
'rediss://reader:***@cache:6380/1'
>>> redact_url("redis://cache:6379/0?password=s3cret&socket_timeout=5")
'redis://cache:6379/0?password=***&socket_timeout=5'
>>> redact_url("idx.db")
'idx.db'
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

# a password given as a query option (redis-py reads ?password=...)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*")


def redact_url(url: str) -> str:
    """``url`` with any password (in its user part or a ``password`` query option) replaced by
    ``***`` (a path, or a URL without one, as it is)."""
    if "://" not in url:
        return url
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    if "@" not in url:
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
