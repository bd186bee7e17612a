"""``torchrun --standalone --nproc-per-node N+1 -m gradcodes.torch``: the built-in job.

See :mod:`gradcodes.torch._job`.
"""

from ._job import main

raise SystemExit(main())
