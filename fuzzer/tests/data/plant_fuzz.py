"""Faults planted in a real worker by the fuzz-loop tests (see SEMFUZZ_WORKER_PLANT).

Every ReLU adds 0.25 to its output: a planted semantic bug that a campaign must find as a
`mismatch` at a ReLU layer. When SEMFUZZ_PLANT_CRASH_ONCE names a file that does not exist
yet, the first ReLU call creates it and aborts the worker: a planted crash, once per campaign,
that the campaign must record and survive. When SEMFUZZ_PLANT_SLOW_ONCE names a file that
does not exist yet, the first ReLU call after that creates it and sleeps for a minute: a case
that is only slow once, which the campaign must run again rather than report as a hang; when
SEMFUZZ_PLANT_SLOW_DONE names a file, it is created once that minute is over.
"""

import os
import time

import keras

_relu_call = keras.layers.ReLU.call


def _first_time(variable):
    """Whether the file the environment variable names was just created (by this call)."""
    marker = os.environ.get(variable)
    if not marker:
        return False
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def _relu(self, inputs, *args, **kwargs):
    if _first_time("SEMFUZZ_PLANT_CRASH_ONCE"):
        os.abort()
    if _first_time("SEMFUZZ_PLANT_SLOW_ONCE"):
        time.sleep(60)
        if os.environ.get("SEMFUZZ_PLANT_SLOW_DONE"):
            open(os.environ["SEMFUZZ_PLANT_SLOW_DONE"], "w").close()
    return _relu_call(self, inputs, *args, **kwargs) + 0.25


keras.layers.ReLU.call = _relu
