"""A Makers project on disk, read without running any of it (and written, by ``init``).

:mod:`.routes` says which file answers which URL, using :mod:`.entry_patterns`
(which ``cloud-functions/`` Python files are routes) and :mod:`.node_entry`
(which Node files are, and how they are entered); :mod:`.edgeone` reads
``edgeone.json`` and :mod:`.envfile` the ``.env`` files; :mod:`.frontend`
finds the project's frontend as the platform does (a dev command, or a
built ``outputDirectory``); :mod:`.scaffold`
writes a new project from :mod:`.templates` (``makers-store init``);
:mod:`.data_dir` is the ``.makers-store/`` folder serve writes in a project.

A room of its own because both processes read the project: the front when
serve starts (the route table it prints, the checks that stop it early, what
``--reload`` watches) and every worker (its routes). Nothing here imports
project code, starlette or uvicorn, and nothing here imports another room of
the runtime but the shared modules at its top (errors, platform choices).
"""
