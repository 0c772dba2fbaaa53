"""The bundle explorer: `scoreaudit view DIR [DIR ...]` (pages served on 127.0.0.1) and `scoreaudit diff A B`.

A report is a document to send; the explorer is for drilling down from a cell to the images behind it
and for comparing two runs. It reads only the bundles it is given (spec/explorer.md): every file is
opened through `safeio` with the bundle as root, and pages address cells, images and files by ids
looked up in the bundle's own tables and manifest, never by a path from the request.

`bundle` and `compare` need only pandas (so `diff` works without the `view` extra); `app` needs
starlette and uvicorn.
"""
