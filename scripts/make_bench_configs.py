"""Write the model configs the oracle benchmarks check (no weights, no inputs).

Usage, from the repository root: .venv/bin/python scripts/make_bench_configs.py
"""

import json
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "oracle" / "benches" / "data"


def write(name, model):
    case = {"format": "semfuzz-case/1", "keras_version": keras.__version__, "dtype": "float32", "model": model.get_config()}
    (OUT / f"{name}.case.json").write_text(json.dumps(case, separators=(",", ":")) + "\n")
    print(name, len(model.layers), "layers")


OUT.mkdir(parents=True, exist_ok=True)
write("resnet50", keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3)))
