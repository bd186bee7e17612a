"""``mpiexec -n SIZE python -m mpi4py -m gradcodes.mpi --scheme NAME ...`` (see :mod:`gradcodes.mpi._cli`)."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
