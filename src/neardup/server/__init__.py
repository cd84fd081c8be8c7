"""``neardup serve``: an HTTP API over an index, for checking documents as they arrive.

Install with ``pip install 'neardup[server]'`` (FastAPI, uvicorn, prometheus-client).
:func:`~neardup.server.app.create_app` builds the ASGI app for a :class:`ServerConfig`;
:func:`~neardup.server.running.serve` runs it with uvicorn, in one or several worker processes.
The app only parses, authorises, limits and renders: checking and inserting are the index's own
calls (:meth:`neardup.index.LSHIndex.check_many`, ``insert_many``, ``remove_many``).
"""

from neardup.server.config import Limits, ServerConfig

__all__ = ["Limits", "ServerConfig"]
