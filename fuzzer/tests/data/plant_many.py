"""Faults planted in a real worker by the triage benchmark (see SEMFUZZ_WORKER_PLANT).

Each Keras layer class named in SEMFUZZ_PLANT_CLASSES (comma-separated) adds 0.25 to its
output: a planted semantic bug per class, so a folder of random models holds several
distinct findings (`mismatch/<class>`), as a night of fuzzing would.
"""

import os

import keras


def _plant(cls):
    call = cls.call

    def planted(self, inputs, *args, **kwargs):
        return call(self, inputs, *args, **kwargs) + 0.25

    cls.call = planted


for _name in filter(None, os.environ.get("SEMFUZZ_PLANT_CLASSES", "").split(",")):
    _plant(getattr(keras.layers, _name.strip()))
