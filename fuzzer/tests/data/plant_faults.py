"""Faults planted in a real worker by the harness tests (see SEMFUZZ_WORKER_PLANT).

An Identity layer whose name starts with `semfuzz_abort` aborts the process, `semfuzz_sigterm`
sends the process SIGTERM (as a service stopping every process of its group does), `semfuzz_hang`
sleeps forever, `semfuzz_slow` sleeps 3 seconds, `semfuzz_alloc` allocates without bound, `semfuzz_leak` keeps
200 MiB more on every call (as TF's caches grow over many cases) and then sleeps 0.3 seconds. Every ReLU adds 0.25 to its output
(a planted semantic bug that the reference must catch at that layer). A ReLU named
`semfuzz_lax*` skips Keras's check of `negative_slope` (a planted missing validation). A Dense
named `semfuzz_refuse_weights*` refuses its weights (a message that names no layer), and an
Identity named `semfuzz_raise*` raises when called (a message that names only the class), and one
named `semfuzz_widen*` returns its input twice along the last axis (an output of the wrong shape,
which a later layer refuses).
"""

import os
import signal
import time

import keras

_identity_call = keras.layers.Identity.call
_leaked = []


def _identity(self, inputs, *args, **kwargs):
    if self.name.startswith("semfuzz_abort"):
        os.abort()
    if self.name.startswith("semfuzz_sigterm"):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
    if self.name.startswith("semfuzz_hang"):
        time.sleep(3600)
    if self.name.startswith("semfuzz_slow"):
        time.sleep(3)
    if self.name.startswith("semfuzz_leak"):
        _leaked.append(b"\x01" * (200 * 1024 * 1024))
        time.sleep(0.3)
    if self.name.startswith("semfuzz_alloc"):
        hog = []
        while True:
            hog.append(bytearray(64 * 1024 * 1024))
    if self.name.startswith("semfuzz_widen") and not isinstance(inputs, keras.KerasTensor):
        # Only on real tensors: the model is built with the layer's declared shape.
        return keras.ops.concatenate([inputs, inputs], axis=-1)
    return _identity_call(self, inputs, *args, **kwargs)


keras.layers.Identity.call = _identity

_relu_call = keras.layers.ReLU.call


def _relu(self, inputs, *args, **kwargs):
    return _relu_call(self, inputs, *args, **kwargs) + 0.25


keras.layers.ReLU.call = _relu

_relu_init = keras.layers.ReLU.__init__


def _relu_lax_init(self, *args, negative_slope=0.0, **kwargs):
    if kwargs.get("name", "").startswith("semfuzz_lax") and negative_slope < 0:
        _relu_init(self, *args, **kwargs)
        self.negative_slope = negative_slope
        return
    _relu_init(self, *args, negative_slope=negative_slope, **kwargs)


keras.layers.ReLU.__init__ = _relu_lax_init

_dense_set_weights = keras.layers.Dense.set_weights


def _dense_refusing_weights(self, weights):
    if self.name.startswith("semfuzz_refuse_weights"):
        raise ValueError("the weights do not fit")
    return _dense_set_weights(self, weights)


keras.layers.Dense.set_weights = _dense_refusing_weights

_identity_call_unraising = keras.layers.Identity.call


def _identity_raising(self, inputs, *args, **kwargs):
    if self.name.startswith("semfuzz_raise"):
        raise ValueError("a planted refusal")
    return _identity_call_unraising(self, inputs, *args, **kwargs)


keras.layers.Identity.call = _identity_raising
