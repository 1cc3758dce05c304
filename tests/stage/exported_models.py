"""exported_models.py — small generated stand-ins for the real exports of
issue 34, each reproducing the mechanism the real one has (python3-onnx only,
seeded, so every run writes the same bytes):
  - conv_net: a Conv/Relu net with a residual Add and a side output (the
    FP32 twin);
  - to_fp16_weights: what onnxconverter-common's float16 converter writes
    from it (keep_io_types=True): FLOAT16 initializers and activations, FP32
    graph I/O through Cast nodes named graph_input_cast_N / graph_output_cast_N,
    the input Casts appended after their readers (the graph is not sorted),
    and the last computing nodes' outputs renamed so the Casts write the
    graph outputs' names;
  - shuffled: the same graph with its nodes in a seeded random order;
  - conv_bn_head: Conv -> BatchNormalization -> Relu whose running variance
    is 1e7-1e8, beyond FP16's 65504 (a paddle2onnx text detector's head)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _conv(rng, name, x, y, cin, cout, k, inits, group=1):
    w = (rng.standard_normal((cout, cin // group, k, k)) * (1.0 / np.sqrt(cin // group * k * k))).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    inits += [numpy_helper.from_array(w, name + ".weight"), numpy_helper.from_array(b, name + ".bias")]
    return helper.make_node("Conv", [x, name + ".weight", name + ".bias"], [y], name=name,
                            pads=[k // 2] * 4, group=group)


def conv_net(seed=1, ch=8, size=16, blocks=3):
    """x[1,3,size,size] -> stem conv -> blocks of (conv, relu, conv, add, relu) -> head conv 'output' and a
    1x1 side output 'side' from the first block."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    nodes += [_conv(rng, "/stem/Conv", "input", "s0", 3, ch, 3, inits),
              helper.make_node("Relu", ["s0"], ["a0"], name="/stem/Relu")]
    cur = "a0"
    for b in range(blocks):
        p = "/block%d" % b
        nodes += [_conv(rng, p + "/conv1/Conv", cur, p + "/c1", ch, ch, 3, inits),
                  helper.make_node("Relu", [p + "/c1"], [p + "/r1"], name=p + "/Relu"),
                  _conv(rng, p + "/conv2/Conv", p + "/r1", p + "/c2", ch, ch, 3, inits),
                  helper.make_node("Add", [p + "/c2", cur], [p + "/sum"], name=p + "/Add"),
                  helper.make_node("Relu", [p + "/sum"], [p + "/out"], name=p + "/Relu_1")]
        cur = p + "/out"
        if b == 0:
            nodes.append(_conv(rng, "/side/Conv", cur, "side", ch, 1, 1, inits))
    nodes.append(_conv(rng, "/head/Conv", cur, "output", ch, 2, 3, inits))
    g = helper.make_graph(nodes, "conv_net",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 2, size, size]),
                           helper.make_tensor_value_info("side", TensorProto.FLOAT, [1, 1, size, size])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def to_fp16_weights(m):
    """The float16 converter's rewrite (keep_io_types=True) of an FP32 model."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    g = m.graph
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            a = numpy_helper.to_array(t).astype(np.float16)
            t.CopyFrom(numpy_helper.from_array(a, t.name))
    casts_in, casts_out = [], []
    for i, vi in enumerate(g.input):
        new = "graph_input_cast_%d" % i
        for n in g.node:
            for k, x in enumerate(n.input):
                if x == vi.name:
                    n.input[k] = new
        casts_in.append(helper.make_node("Cast", [vi.name], [new], name=new, to=TensorProto.FLOAT16))
    for i, vo in enumerate(g.output):
        new = "graph_output_cast_%d" % i
        for n in g.node:
            for k, x in enumerate(n.output):
                if x == vo.name:
                    n.output[k] = new
            for k, x in enumerate(n.input):
                if x == vo.name:
                    n.input[k] = new
        casts_out.append(helper.make_node("Cast", [new], [vo.name], name=new, to=TensorProto.FLOAT))
    nodes = list(g.node) + casts_in + casts_out     # input Casts after their readers, as the converter leaves them
    del g.node[:]
    g.node.extend(nodes)
    return m


def shuffled(m, seed=7):
    m = onnx.ModelProto.FromString(m.SerializeToString())
    nodes = list(m.graph.node)
    order = np.random.default_rng(seed).permutation(len(nodes))
    del m.graph.node[:]
    m.graph.node.extend(nodes[i] for i in order)
    return m


def conv_bn_head(seed=3, ch=8, size=16, var_lo=1e7, var_hi=1e8):
    """input -> Conv(3->ch) -> Relu -> Conv(ch->ch, no bias) -> BatchNormalization (running variance in
    [var_lo, var_hi], the conv's output of that scale) -> Relu -> Conv 1x1 -> Sigmoid 'output'."""
    rng = np.random.default_rng(seed)
    inits = []
    nodes = [_conv(rng, "/backbone/Conv", "input", "f0", 3, ch, 3, inits),
             helper.make_node("Relu", ["f0"], ["f1"], name="/backbone/Relu")]
    var = np.exp(rng.uniform(np.log(var_lo), np.log(var_hi), ch)).astype(np.float32)
    # the head conv's outputs: standard deviation about sqrt(var) / 2, within FP16 (trained statistics)
    w = (rng.standard_normal((ch, ch, 3, 3)) * np.sqrt(var)[:, None, None, None] / 12.0).astype(np.float32)
    inits.append(numpy_helper.from_array(w, "head.conv.weight"))
    nodes.append(helper.make_node("Conv", ["f1", "head.conv.weight"], ["h0"], name="/head/Conv", pads=[1] * 4))
    gamma = rng.uniform(0.5, 1.5, ch).astype(np.float32)
    beta = rng.uniform(-0.5, 0.5, ch).astype(np.float32)
    mean = (rng.standard_normal(ch) * np.sqrt(var) * 0.1).astype(np.float32)
    inits += [numpy_helper.from_array(gamma, "head.bn.weight"), numpy_helper.from_array(beta, "head.bn.bias"),
              numpy_helper.from_array(mean, "head.bn.running_mean"),
              numpy_helper.from_array(var, "head.bn.running_var")]
    nodes += [helper.make_node("BatchNormalization", ["h0", "head.bn.weight", "head.bn.bias", "head.bn.running_mean",
                                                      "head.bn.running_var"], ["h1"], name="/head/BatchNormalization",
                               epsilon=1e-5),
              helper.make_node("Relu", ["h1"], ["h2"], name="/head/Relu"),
              _conv(rng, "/head/Conv_1", "h2", "h3", ch, 1, 1, inits),
              helper.make_node("Sigmoid", ["h3"], ["output"], name="/head/Sigmoid")]
    g = helper.make_graph(nodes, "conv_bn_head",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, size, size])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m
