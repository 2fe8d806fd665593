"""The models of the model-level checks: tiny transformers built from a configuration with
fixed-seed random weights (no download), in float64 on the CPU by default.

``tiny_llama_config`` is a Hugging Face Llama (RoPE, GQA); ``tiny_mrope_config`` a Qwen2-VL text
model, whose RoPE has three position axes (mRoPE, ``position_ids`` ``[3, batch, sequence]``);
``tiny_gpt2_config`` a GPT-2, whose learned position embeddings are absolute (RoPE is relative:
a document whose positions do not restart at 0 attends the same; under GPT-2 it does not).
``position_kind`` says which of the three a configuration is.
``load_config`` reads a user's configuration (a ``config.json`` or a model directory holding
one); ``fit_for_cpu`` shrinks one too large to check on a CPU in seconds and says what it
changed. ``Model.logits`` runs a forward pass with one attention implementation.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from batchspec.conformance.helpers.corpus import BOS_ID, EOS_ID, PAD_ID

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = [
    "CPU_LIMITS",
    "Model",
    "build_model",
    "fit_for_cpu",
    "load_config",
    "position_kind",
    "tiny_gpt2_config",
    "tiny_llama_config",
    "tiny_mrope_config",
]

# The largest configuration checked as given on a CPU; a larger one is shrunk to these bounds
# (query heads keep their ratio to the key/value heads, up to 4 to 1). The corpus's token ids are
# folded into a smaller vocabulary (``Model.fold``): the check needs the same tokens in the
# packed batch and in the documents alone, not these particular ones, and the logits of a
# vocabulary of 1024 cost an eighth of the corpus's.
CPU_LIMITS = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "vocab_size": 1024,
}


def tiny_llama_config() -> dict[str, Any]:
    """A Llama configuration: 2 layers, width 32, 4 query heads over 2 key/value heads (GQA),
    head dimension 8, a vocabulary of 1024."""
    return {
        "model_type": "llama",
        "vocab_size": CPU_LIMITS["vocab_size"],
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        # weights of std 0.5 (transformers' default is 0.02): attention that is far from uniform
        # and logits that move with every position, so a wrong position or key shows by 1e-3 and more
        "initializer_range": 0.5,
        "pad_token_id": PAD_ID,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
    }


def tiny_mrope_config() -> dict[str, Any]:
    """A Qwen2-VL text configuration of ``tiny_llama_config``'s size, with mRoPE: the 4 rotary
    frequency pairs of a head split 2/1/1 over the temporal, height and width axes."""
    return {
        **tiny_llama_config(),
        "model_type": "qwen2_vl_text",
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]},
    }


def tiny_gpt2_config() -> dict[str, Any]:
    """A GPT-2 configuration of ``tiny_llama_config``'s size (2 layers, width 32, 4 heads), with
    learned absolute position embeddings for 1024 positions."""
    tiny = tiny_llama_config()
    shared = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "initializer_range")
    ids = ("pad_token_id", "bos_token_id", "eos_token_id")
    return {"model_type": "gpt2", **{k: tiny[k] for k in (*shared, *ids)}, "n_positions": 1024}


# position embeddings learned per absolute position (model types transformers builds them for)
ABSOLUTE_POSITION_MODELS = ("gpt2",)


def position_kind(config: dict[str, Any]) -> str:
    """``"mrope"`` (an ``mrope_section``), ``"absolute"`` (``ABSOLUTE_POSITION_MODELS``) or
    ``"rope"``: the positions a configuration's model reads."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    if isinstance(rope, dict) and rope.get("mrope_section"):
        return "mrope"
    return "absolute" if config.get("model_type") in ABSOLUTE_POSITION_MODELS else "rope"


# GPT-2-style names of the sizes fit_for_cpu bounds
_ALIASES = {
    "n_embd": "hidden_size",
    "n_layer": "num_hidden_layers",
    "n_head": "num_attention_heads",
    "n_inner": "intermediate_size",
}


def load_config(path: str | Path) -> dict[str, Any]:
    """A configuration dict from ``path``: a JSON file, or a directory holding ``config.json``.
    A multimodal configuration with a ``text_config`` gives its text model's, with its
    ``model_type``.

    Raises:
        ValueError: ``path`` does not exist, holds no ``config.json``, or is not a JSON object
            naming its ``model_type``.
    """
    path = Path(path)
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ValueError(f"--config {str(path)!r}: no such file (a config.json, or a model directory holding one)")
    config = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(config, dict) or "model_type" not in config:
        raise ValueError(f"--config {str(file)!r}: not a transformers configuration (no model_type)")
    if isinstance(config.get("text_config"), dict):
        text = dict(config["text_config"])
        text.setdefault("model_type", f"{config['model_type']}_text")
        return text
    return config


def fit_for_cpu(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``config`` bounded by ``CPU_LIMITS``: ``(config, changes)``, ``changes`` one line per value
    changed (``hidden_size 4096 -> 64``), empty when it fits."""
    out, changes = dict(config), []
    for alias, name in _ALIASES.items():
        if alias in out and name not in out:
            out[name] = out.pop(alias)

    def put(key: str, value: Any) -> None:
        if out.get(key) != value:
            changes.append(f"{key} {out.get(key)} -> {value}")
            out[key] = value

    heads = int(out.get("num_attention_heads", 4))
    kv_heads = int(out.get("num_key_value_heads") or heads)
    if int(out.get("hidden_size", 0)) > CPU_LIMITS["hidden_size"] or heads > CPU_LIMITS["num_attention_heads"]:
        ratio = max(1, heads // max(1, kv_heads))
        new_heads = CPU_LIMITS["num_attention_heads"]
        put("num_attention_heads", new_heads)
        put("num_key_value_heads", max(1, new_heads // ratio))
        put("hidden_size", CPU_LIMITS["hidden_size"])
        if "head_dim" in out:
            put("head_dim", CPU_LIMITS["hidden_size"] // new_heads)
        section = (out.get("rope_parameters") or out.get("rope_scaling") or {}).get("mrope_section")
        if section:
            # keep the axes' shares of the now smaller head: head_dim / 2 frequency pairs
            pairs = CPU_LIMITS["hidden_size"] // new_heads // 2
            scaled = [max(1, round(s * pairs / sum(section))) for s in section]
            scaled[0] += pairs - sum(scaled)
            key = "rope_parameters" if "rope_parameters" in out else "rope_scaling"
            put(key, {**out[key], "mrope_section": scaled})
    for key in ("num_hidden_layers", "intermediate_size", "vocab_size"):
        if int(out.get(key, 0)) > CPU_LIMITS[key]:
            put(key, CPU_LIMITS[key])
    if isinstance(out.get("layer_types"), list):
        put("layer_types", out["layer_types"][: out["num_hidden_layers"]])
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
        value = out.get(key)
        if isinstance(value, int) and value >= int(out.get("vocab_size", 0)):
            put(key, None)
    return out, changes


@dataclass
class Model:
    """A causal LM under test: ``module`` maps ``input_ids`` to logits ``[batch, sequence,
    vocab]`` (a ``*ForCausalLM``, or a text model with ``head``)."""

    module: PreTrainedModel
    name: str
    head: torch.nn.Module | None = None
    dtype: torch.dtype = torch.float64
    device: str = "cpu"
    config: dict[str, Any] = field(default_factory=dict)
    # for a low-precision model: the same weights in float64 (its documents alone measure what the
    # low precision itself costs, the yardstick of the low-precision tolerances)
    twin: Model | None = None

    @property
    def vocab(self) -> int:
        """The vocabulary size: the width of the logits."""
        return int(self.config["vocab_size"])

    def fold(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens`` folded into the vocabulary: ``t % vocab`` where ``t >= 0``, unchanged
        elsewhere (``ignore_index`` and other negative labels)."""
        return torch.where(tokens >= 0, tokens % self.vocab, tokens)

    def set_attention(self, implementation: str) -> None:
        """Use ``implementation`` (``sdpa``, ``eager`` or a registered name) in every layer."""
        self.module.set_attn_implementation(implementation)

    def logits(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None, **kwargs) -> torch.Tensor:
        """Logits ``[batch, sequence, vocab]`` of ``input_ids`` int64 ``[batch, sequence]`` at
        ``position_ids`` (``[batch, sequence]``, or ``[3, batch, sequence]`` for mRoPE; ``None``:
        the model's own ``0 .. sequence - 1``); the ids are folded into the vocabulary (``fold``);
        ``kwargs`` go to the forward pass and on to the attention implementation. No cache
        (``use_cache=False``)."""
        device = self.device
        moved = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        if position_ids is not None:
            position_ids = position_ids.to(device)
        out = self.module(
            input_ids=self.fold(input_ids.to(device)), position_ids=position_ids, use_cache=False, **moved
        )
        if self.head is None:
            return out.logits
        return self.head(out.last_hidden_state)


def build_model(config: dict[str, Any], *, seed: int = 0, dtype=torch.float64, device: str = "cpu") -> Model:
    """A model with ``config``'s architecture and random weights drawn from ``seed``, in
    ``dtype`` on ``device``, in eval mode (no dropout). A ``*_text`` model type (a text
    backbone without its own head) gets a bias-free linear head of the same seed. A dtype
    other than float64 gets the float64 weights it was rounded from as its ``twin``.

    Raises:
        ValueError: ``config``'s ``model_type`` is not one transformers knows.
    """
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    values = {k: v for k, v in config.items() if k != "model_type"}
    try:
        hf_config = AutoConfig.for_model(config["model_type"], **values)
    except (KeyError, ValueError) as error:
        raise ValueError(f"model_type {config['model_type']!r}: transformers cannot build it ({error})") from error
    torch.manual_seed(seed)
    head = None
    if config["model_type"].endswith("_text"):
        module = AutoModel.from_config(hf_config)
        head = torch.nn.Linear(hf_config.hidden_size, hf_config.vocab_size, bias=False)
        head = head.to(dtype=torch.float64, device=device)
    else:
        module = AutoModelForCausalLM.from_config(hf_config)
    module = module.to(dtype=torch.float64, device=device).eval()
    exact = Model(module, config["model_type"], head, torch.float64, device, dict(config))
    if dtype == torch.float64:
        return exact
    low = copy.deepcopy(exact)
    low.module, low.dtype = low.module.to(dtype), dtype
    low.head = None if low.head is None else low.head.to(dtype)
    low.twin = exact
    return low
