"""Faults planted in a real worker by the fuzz-loop tests (see SEMFUZZ_WORKER_PLANT).

Every ReLU adds 0.25 to its output: a planted semantic bug that a campaign must find as a
`mismatch` at a ReLU layer. When SEMFUZZ_PLANT_CRASH_ONCE names a file that does not exist
yet, the first ReLU call creates it and aborts the worker: a planted crash, once per campaign,
that the campaign must record and survive.
"""

import os

import keras

_relu_call = keras.layers.ReLU.call


def _relu(self, inputs, *args, **kwargs):
    marker = os.environ.get("SEMFUZZ_PLANT_CRASH_ONCE")
    if marker:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            os.close(fd)
            os.abort()
    return _relu_call(self, inputs, *args, **kwargs) + 0.25


keras.layers.ReLU.call = _relu
