"""The persistent LSH index: insert, query and remove documents in memory, an SQLite file or Redis.

>>> from neardup.index import LSHIndex
>>> index = LSHIndex.open("memory://")
>>> index.insert("doc-1", "MinHash estimates the Jaccard similarity of two sets")
>>> [m.key for m in index.query("minhash estimates the jaccard similarity of two sets!")]
['doc-1']
"""

from neardup.index.base import DocumentInfo, Storage, bucket_ids
from neardup.index.containment import ContainmentMatch
from neardup.index.lsh_index import LSHIndex, Match
from neardup.index.memory import MemoryStorage
from neardup.index.redis import RedisStorage
from neardup.index.settings import FORMAT_VERSION, IndexSettings
from neardup.index.sqlite import SQLiteStorage
from neardup.index.url import open_storage

__all__ = [
    "FORMAT_VERSION",
    "ContainmentMatch",
    "DocumentInfo",
    "IndexSettings",
    "LSHIndex",
    "Match",
    "MemoryStorage",
    "RedisStorage",
    "SQLiteStorage",
    "Storage",
    "bucket_ids",
    "open_storage",
]
