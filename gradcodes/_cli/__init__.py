"""The command-line room: the tour and the subcommands that are not beside their subject; the entry point is
:func:`gradcodes.cli.main` (map: ``docs/design.md``)."""
