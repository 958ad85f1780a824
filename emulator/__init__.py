"""Blob-store backends and the local agent runtime.

``memory`` (in-process, for tests) and ``sqlite`` (the zero-config default
emulator of the platform's Blob storage). Import through
:func:`makers_store.open_store`; backends are loaded lazily by URL scheme.
"""
