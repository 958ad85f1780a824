"""``_platform``: the names of EdgeOne Makers' runtime package, under ``makers-store serve``.

On the platform (and in ``edgeone makers dev``) served code can import
``from _platform.context import StreamResponse, sse``. ``makers-store serve``
puts this folder on every worker's ``sys.path`` so the same imports work;
everything here re-exports ``makers_store.emulator.runtime``. It is package
data, never installed as a top-level package.
"""
