"""TensorFlow dies with SIGFPE in the oneDNN MaxPool when the window is larger than the input.

A Keras model whose spatial size is declared unknown (None) cannot check the pool size when it
is built; fed a sequence shorter than the window, the float32 oneDNN max-pooling kernel divides
by zero and kills the process (no Python exception). With TF_ENABLE_ONEDNN_OPTS=0 the same call
returns an empty output instead.

Runs the model in a child process. Exits 1 while the bug is present (the child dies by a
signal), 0 once fixed (the child returns or raises a Python exception).
"""

import subprocess
import sys

CHILD = r"""
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import keras
x = keras.Input((None, 1))
model = keras.Model(x, keras.layers.MaxPooling1D(pool_size=6, strides=1)(x))
try:
    print("output shape", model(np.zeros((1, 5, 1), "float32")).shape)
except Exception as e:
    print("raised", type(e).__name__, e)
"""

child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
print(child.stdout.strip())
if child.returncode < 0:
    print(f"the process died by signal {-child.returncode}")
    sys.exit(1)
print("no crash")
sys.exit(0)
