"""The runtime engine, shared by every transport (:mod:`gradcodes.mpi`, :mod:`gradcodes.torch`).

What a distributed gradient-coding job does is written here once, with no transport in it: the rank layout and
the tree message format (:mod:`.layout`), the collection protocol of a parent (:mod:`.engine`: the wait policy,
stale, NaN/inf and lost messages, timeouts naming the ranks), the set-up every rank checks (:mod:`.setup`) and the
straggler models (:mod:`.delays`). A transport supplies the buffers and the wait for the next arrival.
"""
