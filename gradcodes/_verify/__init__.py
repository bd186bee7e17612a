"""The verification room: exact verification (engine, kernel, search, cost model, parallel and MPI drivers,
checkpoints, reports, the block theorem), load bounds and approximate evaluation. Imports only the core and base
rooms (map: ``docs/design.md``)."""
