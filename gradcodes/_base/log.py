"""The ``gradcodes`` logger: diagnostics of the library (a rank whose children did not finish, an error after the
stop message), never results.

Loggers are named after the package that logs (``gradcodes.torch``, ``gradcodes.mpi``), children of
``logging.getLogger("gradcodes")``, so an application configures or silences them in one place. The library adds
no handler: when the application configures no logging, Python's last-resort handler prints warnings and errors to
stderr, so a diagnostic is never lost. Warnings about a caller's result (a run that finished and then lost a rank)
go through :mod:`warnings`; results go to stdout only from the command line.
"""

from __future__ import annotations

import logging

__all__ = ["get_logger", "logger"]

#: ``logging.getLogger("gradcodes")``, the parent of every logger of the library
logger = logging.getLogger("gradcodes")


def get_logger(name: str) -> logging.Logger:
    """The logger ``gradcodes.<name>`` (``name`` without the ``gradcodes.`` prefix, e.g. ``"torch"``)."""
    return logging.getLogger(f"gradcodes.{name}" if name else "gradcodes")
