"""An ONNX graph of a BERT encoder + mean pooling, written straight from safetensors weights.

No torch, no export, no download: the graph is built node by node with ``onnx.helper`` from the
weights of all-MiniLM-L6-v2, using ONNX Runtime's BERT contrib operators (all exact float32, erf
GELU, post-LN), then mean pooling over the attention mask. Large tensors are external initializers
handed to ORT as arrays; the word embeddings stay a view of a read-only memory map, shared by all
processes. Inputs ``input_ids`` and ``attention_mask`` (int32, batch x seq, right padded); output
``sentence_embedding`` (float32, batch x hidden, not normalised).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

__all__ = ["BertConfig", "BuiltGraph", "build_bert_mean_pooling", "load_safetensors"]

_MS = "com.microsoft"
_EXTERNAL_MIN_BYTES = 4096
_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


@dataclass(frozen=True)
class BertConfig:
    """The few numbers of a BERT ``config.json`` the graph needs."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"unsupported hidden_act {raw.get('hidden_act')!r}: only exact 'gelu' is implemented")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are implemented")
        return cls(
            hidden_size=int(raw["hidden_size"]),
            num_layers=int(raw["num_hidden_layers"]),
            num_heads=int(raw["num_attention_heads"]),
            intermediate_size=int(raw["intermediate_size"]),
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
        )


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Read-only arrays over a memory map of a safetensors file (no copy of the data)."""
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        begin, end = info["data_offsets"]
        out[name] = data[begin:end].view(dtype).reshape(info["shape"])
    return out


@dataclass
class BuiltGraph:
    """The model proto plus the arrays of its external initializers (must outlive the session)."""

    model: onnx.ModelProto
    external: dict[str, np.ndarray] = field(default_factory=dict)


class _Graph:
    def __init__(self) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.tensor_proto = TensorProto
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.external: dict[str, np.ndarray] = {}
        self._n = 0

    def const(self, name: str, arr: np.ndarray) -> str:
        arr = np.asarray(arr)
        if arr.nbytes < _EXTERNAL_MIN_BYTES:
            self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(arr), name))
            return name
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        t = self.tensor_proto()
        t.name = name
        t.data_type = self.helper.np_dtype_to_tensor_dtype(arr.dtype)
        t.dims.extend(arr.shape)
        t.data_location = self.tensor_proto.EXTERNAL
        entry = t.external_data.add()
        entry.key, entry.value = "location", "in-memory"  # supplied via add_external_initializers
        self.inits.append(t)
        self.external[name] = arr
        return name

    def op(self, op_type: str, inputs: list[str], *, domain: str = "", n_out: int = 1, **attrs: Any) -> list[str]:
        self._n += 1
        outs = [f"{op_type.lower()}_{self._n}_{i}" for i in range(n_out)]
        self.nodes.append(self.helper.make_node(op_type, inputs, outs, name=f"{op_type}_{self._n}", domain=domain, **attrs))
        return outs

    def op1(self, op_type: str, inputs: list[str], *, domain: str = "", **attrs: Any) -> str:
        return self.op(op_type, inputs, domain=domain, **attrs)[0]

    def linear_nobias(self, x: str, name: str, weight: np.ndarray) -> str:
        """x @ weight.T for a (out, in) torch Linear weight, as MatMul over a transposed copy.

        The copy is deliberate: ORT does not prepack FusedMatMul(transB=1), which makes it slower at chat
        lengths.
        """
        return self.op1("MatMul", [x, self.const(name, np.ascontiguousarray(weight.T))])


def build_bert_mean_pooling(weights: dict[str, np.ndarray], config: BertConfig) -> BuiltGraph:
    """The ONNX graph (BERT encoder + mean pooling) for ``weights``, a safetensors state dict."""
    from onnx import TensorProto, helper

    g = _Graph()
    w = {k.removeprefix("bert."): v for k, v in weights.items()}
    c = config
    eps = c.layer_norm_eps
    f32 = np.float32

    def p(key: str) -> np.ndarray:
        arr = w[key]
        if arr.dtype != f32:
            raise ValueError(f"weight {key} is {arr.dtype}, expected float32")
        return arr

    # Embeddings: word + position + token_type(0), then LayerNorm. Token types are all zero for one
    # sentence, so token_type_embeddings[0] is folded into the position table (the same sum, in another
    # order of float additions: differences ~1e-7).
    x, _mask_index = g.op(
        "EmbedLayerNormalization",
        [
            "input_ids",
            "",  # segment_ids
            g.const("word_emb", p("embeddings.word_embeddings.weight")),
            g.const("pos_emb", p("embeddings.position_embeddings.weight") + p("embeddings.token_type_embeddings.weight")[0]),
            "",  # segment_embedding
            g.const("emb_ln_g", p("embeddings.LayerNorm.weight")),
            g.const("emb_ln_b", p("embeddings.LayerNorm.bias")),
        ],
        domain=_MS,
        n_out=2,
        epsilon=eps,
    )
    for i in range(c.num_layers):
        pre = f"encoder.layer.{i}."
        names = ("query", "key", "value")
        qkv_w = np.concatenate([p(pre + f"attention.self.{n}.weight").T for n in names], axis=1)  # (H, 3H)
        qkv_b = np.concatenate([p(pre + f"attention.self.{n}.bias") for n in names])
        # softmax(QK^T / sqrt(d) + mask) V per head; padded keys get float32.min added, as in HF BERT.
        ctx = g.op1(
            "Attention",
            [x, g.const(f"l{i}_qkv_w", qkv_w), g.const(f"l{i}_qkv_b", qkv_b), "attention_mask"],
            domain=_MS,
            num_heads=c.num_heads,
            mask_filter_value=float(np.finfo(f32).min),
        )
        attn = g.linear_nobias(ctx, f"l{i}_ao_w", p(pre + "attention.output.dense.weight"))
        x1 = g.op1(
            "SkipLayerNormalization",
            [
                attn,
                x,
                g.const(f"l{i}_ln1_g", p(pre + "attention.output.LayerNorm.weight")),
                g.const(f"l{i}_ln1_b", p(pre + "attention.output.LayerNorm.bias")),
                g.const(f"l{i}_ao_b", p(pre + "attention.output.dense.bias")),
            ],
            domain=_MS,
            epsilon=eps,
        )
        inter = g.linear_nobias(x1, f"l{i}_in_w", p(pre + "intermediate.dense.weight"))
        act = g.op1("BiasGelu", [inter, g.const(f"l{i}_in_b", p(pre + "intermediate.dense.bias"))], domain=_MS)
        out = g.linear_nobias(act, f"l{i}_out_w", p(pre + "output.dense.weight"))
        x = g.op1(
            "SkipLayerNormalization",
            [
                out,
                x1,
                g.const(f"l{i}_ln2_g", p(pre + "output.LayerNorm.weight")),
                g.const(f"l{i}_ln2_b", p(pre + "output.LayerNorm.bias")),
                g.const(f"l{i}_out_b", p(pre + "output.dense.bias")),
            ],
            domain=_MS,
            epsilon=eps,
        )

    # Mean pooling over the attention mask: sum(h * m) / max(sum(m), 1e-9), as sentence-transformers does.
    mask_f = g.op1("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    m3 = g.op1("Unsqueeze", [mask_f, g.const("axes_2", np.array([2], dtype=np.int64))])
    axes1 = g.const("axes_1", np.array([1], dtype=np.int64))
    summed = g.op1("ReduceSum", [g.op1("Mul", [x, m3]), axes1], keepdims=0)
    count = g.op1("ReduceSum", [m3, axes1], keepdims=0)
    count = g.op1("Max", [count, g.const("min_count", np.array(1e-9, dtype=f32))])
    g.nodes.append(helper.make_node("Div", [summed, count], ["sentence_embedding"], name="mean_pool"))

    graph = helper.make_graph(
        g.nodes,
        "bert_mean_pooling",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT32, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT32, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", c.hidden_size])],
        initializer=g.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)],
        producer_name="deepcontext",
    )
    model.ir_version = 8
    return BuiltGraph(model=model, external=g.external)
