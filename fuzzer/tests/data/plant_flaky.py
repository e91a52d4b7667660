"""A nondeterministic fault planted in a real worker by the triage tests (see
SEMFUZZ_WORKER_PLANT): a ReLU called on concrete tensors adds 0.25 to its output on every
other such call only, so replaying the same case gives a mismatch, then agreement, then a
mismatch again: a flaky finding.
"""

import keras

_relu_call = keras.layers.ReLU.call
_calls = [0]


def _relu(self, inputs, *args, **kwargs):
    out = _relu_call(self, inputs, *args, **kwargs)
    if isinstance(inputs, keras.KerasTensor):
        return out
    _calls[0] += 1
    return out + 0.25 if _calls[0] % 2 == 1 else out


keras.layers.ReLU.call = _relu
