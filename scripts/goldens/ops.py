"""Golden cases for the operation nodes Keras records for arithmetic on tensors (`x + 3.0`,
`x * y`, ...): module keras.src.ops.numpy, classes Add, Subtract, Multiply, TrueDivide.
See common.py; these cases are built directly since they are not layers."""

import keras
import numpy as np

import common


def op_case(name, fn, shapes, dtype="float64", seed=0):
    keras.utils.set_random_seed(seed)
    keras.backend.clear_session()
    keras.config.set_floatx(dtype)
    keras.config.set_dtype_policy(dtype)
    try:
        ins = [keras.Input(batch_shape=(None,) + tuple(s[1:]), dtype=dtype) for s in shapes]
        model = keras.Model(ins if len(ins) > 1 else ins[0], fn(*ins))
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")
    arrays = common.inputs_for(shapes, seed)
    out = np.asarray(model(arrays if len(arrays) > 1 else arrays[0]), dtype=np.float64)
    case = {
        "format": "semfuzz-case/1",
        "keras_version": keras.__version__,
        "dtype": dtype,
        "model": model.get_config(),
        "weights": {},
        "inputs": [common.tensor(a) for a in arrays],
    }
    common._CASES.append((name, case, {"outputs": [common.tensor(out)]}))


op_case("add_scalar", lambda x: x + 3.0, [(2, 4)])
op_case("add_scalar_left", lambda x: 3.0 + x, [(2, 4)])
op_case("subtract_scalar_left", lambda x: 1.0 - x, [(2, 4)])
op_case("subtract_tensors_broadcast", lambda x, y: x - y, [(2, 3, 4), (2, 1, 4)])
op_case("multiply_tensors", lambda x, y: x * y, [(2, 5), (2, 5)])
op_case("multiply_sixth", lambda x: x * 0.16666666666666666, [(2, 3)], dtype="float32")
op_case("true_divide_scalar", lambda x: x / 6.0, [(2, 4)])
op_case("true_divide_tensors", lambda x, y: x / y, [(2, 4), (2, 4)])
op_case("true_divide_rank_broadcast", lambda x, y: x / y, [(2, 3, 4), (3, 4)])

common.write_all("ops")
