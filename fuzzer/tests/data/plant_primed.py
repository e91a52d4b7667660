"""A fault planted in a real worker by the triage tests (see SEMFUZZ_WORKER_PLANT) that depends
on what ran before it in the process: once a layer named `semfuzz_primer*` has been called,
every ReLU called on concrete tensors adds 0.25 to its output. A case with the primer in front
of a ReLU shows the bug in a fresh worker; the ReLU alone shows it only in a worker that ran
the primer before.
"""

import keras

_relu_call = keras.layers.ReLU.call
_identity_call = keras.layers.Identity.call
_primed = [False]


def _identity(self, inputs, *args, **kwargs):
    if self.name.startswith("semfuzz_primer"):
        _primed[0] = True
    return _identity_call(self, inputs, *args, **kwargs)


def _relu(self, inputs, *args, **kwargs):
    out = _relu_call(self, inputs, *args, **kwargs)
    if isinstance(inputs, keras.KerasTensor) or not _primed[0]:
        return out
    return out + 0.25


keras.layers.Identity.call = _identity
keras.layers.ReLU.call = _relu
