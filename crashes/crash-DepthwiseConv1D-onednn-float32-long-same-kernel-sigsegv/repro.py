"""TensorFlow 2.16's float32 oneDNN depthwise convolution dies by SIGSEGV on a long `same` kernel.

Keras's DepthwiseConv1D runs `tf.nn.depthwise_conv2d` on the input with an axis of length 1
added; with `padding="same"` and a kernel of 25 taps over a sequence of length 1, the float32
oneDNN kernel kills the process (no Python exception). float64, TF_ENABLE_ONEDNN_OPTS=0 and
TensorFlow 2.21 return the output (zeros here).

Runs the layer in a child process. Exits 1 while the bug is present (the child dies by a
signal), 0 once fixed (the child returns or raises a Python exception).
"""

import subprocess
import sys

CHILD = r"""
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
import numpy as np
import keras
layer = keras.layers.DepthwiseConv1D(kernel_size=25, padding="same", dtype="float32")
try:
    print("output shape", layer(np.zeros((1, 1, 1), "float32")).shape)
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
