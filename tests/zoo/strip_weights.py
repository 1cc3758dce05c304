"""strip_weights.py -- drops a graph's float weights, keeping what
gen_weights.py needs to fill them again (used by export_zoo.py and
bench/models/export_rtdetr_r18vd.py).

Every float initializer of more than 256 elements becomes an external-data
stub (location 'zoo-generated') recording its mean, std, min and max. Masks
(at most two distinct values) and non-finite tensors are kept as they are.
"""
import numpy as np
import onnx
from onnx import numpy_helper


def strip(src, dst):
    m = onnx.load(src, load_external_data=True)
    for init in m.graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype.kind != "f" or arr.size <= 256:
            continue
        a = arr.astype(np.float64)
        if not np.all(np.isfinite(a)) or len(np.unique(a.ravel()[:4096])) <= 2 and len(np.unique(a)) <= 2:
            continue
        stats = {"mean": a.mean(), "std": a.std(), "min": a.min(), "max": a.max()}
        dims, dt, name = list(init.dims), init.data_type, init.name
        init.Clear()
        init.name, init.data_type = name, dt
        init.dims.extend(dims)
        init.data_location = onnx.TensorProto.EXTERNAL
        for k, v in [("location", "zoo-generated")] + [(k, repr(float(v))) for k, v in stats.items()]:
            e = init.external_data.add()
            e.key, e.value = k, v
    onnx.save(m, dst)
