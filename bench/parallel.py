"""Simulation seeds run side by side in fresh processes, for the benchmarks whose seeds are independent."""

import multiprocessing
import os
from collections.abc import Callable

# BLAS libraries that would otherwise each start a thread per core in every process.
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def seeds_map(run: Callable, tasks: list, *, processes: int) -> list:
    """``[run(task) for task in tasks]``, over ``processes`` fresh processes (``run`` must be a module-level
    function) with single-threaded BLAS: the matrices are small, and threads per process would only fight
    over the cores."""
    if processes == 1:
        return [run(task) for task in tasks]
    saved = {name: os.environ.get(name) for name in _BLAS_THREADS}
    os.environ.update(dict.fromkeys(saved, "1"))
    try:
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            return pool.map(run, tasks, chunksize=1)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
