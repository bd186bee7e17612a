"""The code-file room: saving and loading codes (``.npz`` archives, sparse storage) and the bounds on untrusted
input. Imports only the core and base rooms (map: ``docs/design.md``)."""
