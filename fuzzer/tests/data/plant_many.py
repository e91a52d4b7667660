"""Faults planted in a real worker by the triage benchmark (see SEMFUZZ_WORKER_PLANT).

Each layer of the classes listed below adds 0.25 to its output: a planted semantic bug per
class, so a folder of random models holds several distinct findings (`mismatch/<class>`),
as a night of fuzzing would.
"""

import keras

PLANTED = (
    "Activation",
    "BatchNormalization",
    "Dense",
    "ELU",
    "LayerNormalization",
    "LeakyReLU",
    "ReLU",
    "Softmax",
)


def _plant(cls):
    call = cls.call

    def planted(self, inputs, *args, **kwargs):
        return call(self, inputs, *args, **kwargs) + 0.25

    cls.call = planted


for _name in PLANTED:
    _plant(getattr(keras.layers, _name))
