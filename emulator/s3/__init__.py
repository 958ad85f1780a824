"""The S3 backend (``s3://``, ``makers-store[s3]``): a map.

==================  ==========================================================
module              what is in it
==================  ==========================================================
:mod:`.backend`     ``S3BlobStore``: the client per event loop, the URL,
                    ``from_url``
:mod:`.requests`    each blob operation as S3 requests (conditional PUT and
                    DELETE, a nonce in every body)
:mod:`.errors`      S3's errors as the store's
==================  ==========================================================

Imports: the store's blob interface (:mod:`makers_store.blob`,
:mod:`makers_store.blob_ops`, :mod:`makers_store.retry`'s queue allowance),
:mod:`makers_store.errors` and the emulator's shared :mod:`..per_loop`; no
other backend. aiobotocore is imported on use.
"""

from __future__ import annotations

from .backend import S3BlobStore, from_url

__all__ = ["S3BlobStore", "from_url"]
