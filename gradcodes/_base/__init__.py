"""The base room: exceptions, argument checks and size limits, type aliases, array conversion, the scheme registry
and the command-line output printer. Imports nothing else of gradcodes (map: ``docs/design.md``)."""
