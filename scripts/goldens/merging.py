"""Golden cases for the merging layers. See common.py.

Merge layers take one list of tensors: `list_input=True`, several input shapes (batch first;
the models declare an unknown batch). Beyond `valid`/`invalid`, two helpers make invalid cases
the ordinary machinery cannot build: `retyped` (a valid model whose layer becomes another
class, e.g. a `Subtract` on three inputs) and `bare_call` (a merge layer called on a tensor
instead of a list). `known_divergence` marks an invalid case Keras accepts because of a
missing check (the reference keeps the check; the golden test then requires the disagreement).
"""

import json

import keras
from keras import layers

import common
from common import invalid, valid, write_all


def _rerun(name, case, arrays):
    """Records what Keras does when it rebuilds and runs a hand-edited case."""
    try:
        keras.backend.clear_session()
        rebuilt = keras.Model.from_config(json.loads(json.dumps(case["model"])))
        rebuilt(arrays if len(arrays) > 1 else arrays[0], training=False)
        expected = {"keras_accepts": True}
    except Exception as e:  # what Keras says is the point of the case
        expected = {"error": common._describe(e)}
    common._CASES.append((name, case, expected))


def _edited(name, make_layer, input_shapes, edit, seed=0):
    invalid(name, make_layer, input_shapes, {}, seed=seed, list_input=True)
    _, case, _ = common._CASES.pop()
    entry = next(e for e in case["model"]["layers"] if e["class_name"] not in ("InputLayer",))
    edit(entry)
    arrays = common.inputs_for(input_shapes, seed)
    _rerun(name, case, arrays)


def retyped(name, make_layer, input_shapes, class_name, config=None):
    """A valid call of `make_layer()` whose layer is then declared as `class_name` (with these
    extra config entries)."""

    def edit(entry):
        entry["class_name"] = class_name
        entry["config"].update(config or {})
        entry.pop("build_config", None)

    _edited(name, make_layer, input_shapes, edit)


def bare_call(name, make_layer, input_shapes):
    """A merge layer called on its first input tensor alone, not on a list."""

    def edit(entry):
        node = entry["inbound_nodes"][0]
        node["args"] = [node["args"][0][0]]
        entry.pop("build_config", None)

    _edited(name, make_layer, input_shapes, edit)


def known_divergence(why):
    """Marks the last (invalid) case as one Keras accepts for want of a check."""
    name, case, expected = common._CASES[-1]
    assert expected.get("keras_accepts"), (name, expected)
    expected["divergence"] = why


def v(name, make_layer, shapes, **kw):
    valid(name, make_layer, shapes, list_input=True, **kw)


def x(name, make_layer, shapes, patch=None, **kw):
    invalid(name, make_layer, shapes, patch or {}, list_input=True, **kw)


# Element-wise merges: same shapes, several inputs, lower-rank inputs (size-1 axes inserted
# after the batch), size-1 broadcasting, a single input, empty tensors.
ELEMENTWISE = {
    "add": layers.Add,
    "multiply": layers.Multiply,
    "average": layers.Average,
    "maximum": layers.Maximum,
    "minimum": layers.Minimum,
}
for name, cls in ELEMENTWISE.items():
    v(f"{name}_two", cls, [(2, 3), (2, 3)])
    v(f"{name}_three", cls, [(2, 4), (2, 4), (2, 4)], seed=1)
    v(f"{name}_ranks", cls, [(2, 3), (2, 2, 3)], seed=2)
    v(f"{name}_ranks_three", cls, [(3, 2, 1, 4), (3,), (3, 4)], seed=3)
    v(f"{name}_ones", cls, [(2, 1, 3), (2, 4, 1)], seed=4)
    v(f"{name}_single", cls, [(2, 5)], seed=5)
    v(f"{name}_ties", cls, [(2, 6), (2, 6), (2, 1)], dist="integers", seed=6)
    v(f"{name}_empty", cls, [(2, 0, 3), (2, 1, 3)], seed=7)
    x(f"{name}_mismatch", cls, [(2, 3), (2, 3)], feed=[(2, 3), (2, 4)])
    x(f"{name}_mismatch_inner", cls, [(2, 2, 3), (2, 3)], feed=[(2, 2, 3), (2, 2)])
    x(f"{name}_batches", cls, [(2, 3), (2, 3)], feed=[(2, 3), (3, 3)])
    # A batch of 1 against 2: TF broadcasts it when the inputs declare no batch size (Keras
    # refuses declared different sizes), so the reference calls it semantic.
    x(f"{name}_batch_of_one", cls, [(2, 3), (2, 3)], feed=[(1, 3), (2, 3)])
    bare_call(f"{name}_bare_tensor", cls, [(2, 3)])

v("subtract", layers.Subtract, [(2, 3), (2, 3)])
v("subtract_ranks", layers.Subtract, [(2, 4, 3), (2, 3)], seed=1)
v("subtract_ones", layers.Subtract, [(2, 1, 3), (2, 4, 1)], seed=2)
v("subtract_empty", layers.Subtract, [(0, 3), (0, 3)], seed=3)
x("subtract_mismatch", layers.Subtract, [(2, 3), (2, 3)], feed=[(2, 3), (2, 5)])
x("subtract_batches", layers.Subtract, [(2, 3), (2, 3)], feed=[(2, 3), (3, 3)])
retyped("subtract_three", layers.Add, [(2, 3)] * 3, "Subtract")
retyped("subtract_one", layers.Add, [(2, 3)], "Subtract")
bare_call("subtract_bare_tensor", layers.Subtract, [(2, 3), (2, 3)])

C = layers.Concatenate
v("concatenate", C, [(2, 3), (2, 4)])
v("concatenate_axis1", lambda: C(axis=1), [(2, 3, 4), (2, 1, 4)], seed=1)
v("concatenate_axis_neg2", lambda: C(axis=-2), [(2, 1, 3), (2, 2, 3), (2, 4, 3)], seed=2)
v("concatenate_axis2_rank4", lambda: C(axis=2), [(2, 2, 1, 3), (2, 2, 3, 3)], seed=3)
v("concatenate_batch_axis", lambda: C(axis=0), [(2, 3), (3, 3)], seed=4)
v("concatenate_rank1", lambda: C(axis=-1), [(2,), (3,)], seed=5)
v("concatenate_single", C, [(2, 3)], seed=6)
v("concatenate_single_neg", lambda: C(axis=-2), [(2, 3)], seed=7)
v("concatenate_empty", lambda: C(axis=1), [(2, 0, 3), (2, 2, 3), (2, 0, 3)], seed=8)
v("concatenate_batch_axis_neg", lambda: C(axis=-3), [(2, 3, 2), (1, 3, 2)], seed=9)
x("concatenate_mismatch", lambda: C(axis=1), [(2, 3, 4), (2, 1, 4)], feed=[(2, 3, 4), (2, 1, 5)])
x("concatenate_no_broadcast", lambda: C(axis=1), [(2, 3, 4), (2, 1, 4)], feed=[(2, 3, 1), (2, 1, 4)])
x("concatenate_ranks", lambda: C(axis=1), [(2, 3), (2, 3)], feed=[(2, 3), (2, 3, 4)])
x("concatenate_ranks_last", C, [(2, 3), (2, 3)], feed=[(2, 3), (2, 3, 3)])
x("concatenate_batches", lambda: C(axis=1), [(2, 3), (2, 3)], feed=[(2, 3), (3, 3)])
x("concatenate_axis_high", C, [(2, 3), (2, 3)], {"axis": 2})
x("concatenate_axis_low", C, [(2, 3), (2, 3)], {"axis": -3})
x("concatenate_single_axis_low", C, [(2, 3)], {"axis": -3})
x("concatenate_axis_float", C, [(2, 3), (2, 3)], {"axis": 1.0})
x("concatenate_axis_null", C, [(2, 3), (2, 3)], {"axis": None})
x("concatenate_single_axis_high", C, [(2, 3)], {"axis": 5})
known_divergence("Concatenate on one tensor never checks a positive axis: Concatenate.build only deletes "
                 "the axis when len(shape) > axis, compute_output_shape indexes it only for a second input, "
                 "and tf.concat returns a single input unchecked (array_ops.concat's degenerate case), so "
                 "axis=5 on a rank-2 input is accepted as the identity")
bare_call("concatenate_bare_tensor", C, [(2, 3)])

D = layers.Dot
v("dot", lambda: D(axes=1), [(2, 3), (2, 3)])
v("dot_last", lambda: D(axes=-1), [(2, 4, 3), (2, 5, 3)], seed=1)
v("dot_pair", lambda: D(axes=(1, 2)), [(2, 3, 5), (2, 4, 3)], seed=2)
v("dot_pair_neg", lambda: D(axes=(-1, -2)), [(2, 2, 3), (2, 3, 4)], seed=3)
v("dot_rank4_rank3", lambda: D(axes=(2, 1)), [(2, 3, 4, 2), (2, 4, 3)], seed=4)
v("dot_rank2_rank4", lambda: D(axes=(1, 3)), [(2, 3), (2, 2, 4, 3)], seed=5)
v("dot_rank3_rank2", lambda: D(axes=(1, 1)), [(2, 5, 3), (2, 5)], seed=6)
v("dot_rank2_rank3_last", lambda: D(axes=-1), [(2, 3), (2, 4, 3)], seed=7)
v("dot_size1", lambda: D(axes=1), [(3, 1), (3, 1)], seed=8)
v("dot_empty_axis", lambda: D(axes=2), [(2, 3, 0), (2, 4, 0)], seed=9)
v("dot_empty_batch", lambda: D(axes=(3, 1)), [(0, 2, 2, 3), (0, 3, 2)], seed=10)
v("dot_long", lambda: D(axes=1), [(2, 60), (2, 60)], seed=11)
v("dot_normalize", lambda: D(axes=1, normalize=True), [(2, 3), (2, 3)], seed=12)
v("dot_normalize_pair", lambda: D(axes=(1, 2), normalize=True), [(2, 3, 4), (2, 2, 3)], seed=13)
v("dot_normalize_rank4", lambda: D(axes=(-2, 1), normalize=True), [(2, 2, 5, 3), (2, 5, 2)], seed=14)
v("dot_normalize_null", lambda: D(axes=1, normalize=None), [(2, 3), (2, 3)], seed=19)
v("dot_normalize_zeros", lambda: D(axes=1, normalize=True), [(6, 2), (6, 2)], dist="integers", seed=15)
v("dot_normalize_long", lambda: D(axes=-1, normalize=True), [(2, 2, 50), (2, 3, 50)], seed=16)
v("dot_normalize_f32", lambda: D(axes=-1, normalize=True), [(2, 3, 20), (2, 2, 20)], seed=17, dtype="float32")
v("dot_f32", lambda: D(axes=-1), [(2, 3, 20), (2, 2, 20)], seed=18, dtype="float32")
x("dot_mismatch", lambda: D(axes=1), [(2, 3), (2, 3)], feed=[(2, 3), (2, 4)])
x("dot_batches", lambda: D(axes=1), [(2, 3), (2, 3)], feed=[(2, 3), (3, 3)])
x("dot_batch_of_one", lambda: D(axes=1), [(2, 3), (2, 3)], feed=[(1, 3), (2, 3)])
x("dot_batch_axis", lambda: D(axes=1), [(2, 3), (2, 3)], {"axes": 0})
x("dot_batch_axis_neg", lambda: D(axes=1), [(2, 3), (2, 3)], {"axes": -2})
x("dot_batch_axis_pair", lambda: D(axes=1), [(2, 3), (2, 3)], {"axes": [1, 0]})
x("dot_axis_high", lambda: D(axes=1), [(2, 3), (2, 3)], {"axes": 2})
x("dot_pair_low", lambda: D(axes=1), [(2, 3), (2, 3)], {"axes": [-3, 1]})
x("dot_rank1", lambda: D(axes=-1), [(2, 3), (2, 3)], feed=[(2,), (2,)])
x("dot_rank1_one", lambda: D(axes=1), [(2, 3), (2, 3)], feed=[(2, 3), (2,)])
x("dot_axes_three", lambda: D(axes=1), [(2, 3), (2, 3)], {"axes": [1, 1, 1]})
x("dot_axes_float", lambda: D(axes=1), [(2, 3), (2, 3)], {"axes": 1.0})
x("dot_axes_list_float", lambda: D(axes=1), [(2, 3), (2, 3)], {"axes": [1, 1.0]})
x("dot_axis_low", lambda: D(axes=1), [(2, 3), (2, 3)], {"axes": -3})
known_divergence("Dot takes an integer axes modulo each input's rank (self.axes % len(shape) in build and "
                 "_merge_function) with no range check, so axes=-3 on rank-2 inputs silently reduces axis 1; "
                 "a pair [-3, -3] is refused (build indexes the shape with it)")
retyped("dot_three", layers.Add, [(2, 3)] * 3, "Dot", {"axes": 1, "normalize": False})
retyped("dot_one", layers.Add, [(2, 3)], "Dot", {"axes": 1, "normalize": False})
bare_call("dot_bare_tensor", lambda: D(axes=1), [(2, 3), (2, 3)])

write_all("merging")
