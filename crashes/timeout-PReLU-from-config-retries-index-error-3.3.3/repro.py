"""Keras's Functional.from_config retries a node that raises IndexError forever.

A functional model config holding PReLU(shared_axes=[3]) on a (None, 4, 4) input: PReLU.build
raises IndexError (list assignment index out of range), which Functional.from_config takes for
"an inbound layer is not created yet" and retries without end (Keras 3.3.3 to 3.14.0, fixed in
3.14.1 and backported to 3.12.2, where it raises "Invalid Functional model configuration").

Exits 1 while from_config does not return within 30 s, 0 once it returns or raises.
Needs only TensorFlow, Keras and NumPy.
"""

import os
import sys
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402

dtype = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
         "registered_name": None}
config = {
    "name": "functional", "trainable": True,
    "layers": [
        {"module": "keras.layers", "class_name": "InputLayer",
         "config": {"batch_shape": [None, 4, 4], "dtype": "float32", "sparse": False,
                    "name": "input_layer"},
         "registered_name": None, "name": "input_layer", "inbound_nodes": []},
        {"module": "keras.layers", "class_name": "PReLU",
         "config": {"name": "p_re_lu", "trainable": True, "dtype": dtype, "shared_axes": [3]},
         "registered_name": None, "name": "p_re_lu",
         "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {
             "shape": [None, 4, 4], "dtype": "float32", "keras_history": ["input_layer", 0, 0]}}], "kwargs": {}}]},
    ],
    "input_layers": [["input_layer", 0, 0]],
    "output_layers": [["p_re_lu", 0, 0]],
}

result = {}


def load():
    try:
        keras.Model.from_config(config)
        result["outcome"] = "built"
    except Exception as e:  # noqa: BLE001
        result["outcome"] = f"refused: {type(e).__name__}: {str(e)[:200]}"


t = threading.Thread(target=load, daemon=True)
t.start()
t.join(30)
if t.is_alive():
    print("Model.from_config did not return within 30 s (retries the IndexError forever)")
    sys.stdout.flush()
    os._exit(1)
print("Model.from_config returned:", result["outcome"])
sys.exit(0)
