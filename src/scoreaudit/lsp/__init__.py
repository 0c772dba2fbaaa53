"""`scoreaudit lsp`: a Language Server for `.audit` files (pip install 'scoreaudit[lsp]').

Only `server.py` imports pygls; the rest works on plain text and offsets over
the api/compiler layer, so it is tested without a client and stays as light
as `scoreaudit check`:

- `index.py`: what each name in a parsed spec is (declaration, reference,
  plugin, parameter, setting), for hover, go-to-definition, references, rename.
- `context.py`: what may be typed at the cursor, read from the text before it
  (works on text that does not parse yet), for completion.
- `features.py`: hover text, completion items, document symbols, rename edits.
- `positions.py`: character offsets ↔ LSP positions (UTF-16, UTF-8 or UTF-32 units).
"""
