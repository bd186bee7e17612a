"""The core room: the code type (storage, encode, decode, decodability, identity), its decoders and its numerics
(rounding bounds, the acceptance rule, deterministic linear algebra, exact and GF(p) fields, straggle
probabilities). Imports only :mod:`gradcodes._base` (map: ``docs/design.md``)."""
