"""TensorFlow dies with SIGFPE in float32 AdaptiveMaxPooling1D(output_size=1).

Keras's TF backend pools adaptively with two VALID max pools, one of window
`length // output_size` and one a position longer, then gathers. With `output_size=1` the
longer window exceeds the input, and the float32 oneDNN max-pooling kernel divides by zero on
a window larger than its input (crashes/crash-MaxPooling1D-sigfpe), killing the process.

Runs the model in a child process. Exits 1 while the bug is present (the child dies by a
signal), 0 once fixed (the child returns or raises a Python exception).
"""

import subprocess
import sys

CHILD = r"""
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
import numpy as np
import keras
x = keras.Input((3, 1))
model = keras.Model(x, keras.layers.AdaptiveMaxPooling1D(output_size=1)(x))
try:
    print("output", model(np.array([[[1.0], [2.0], [3.0]]], "float32")).numpy().tolist())
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
