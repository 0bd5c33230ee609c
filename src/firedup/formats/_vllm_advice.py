"""What makes a vLLM start-up slow, and what removes it: the remedies `timeline.advice` ranks.

Each `Remedy` names one engine-neutral cause (`timeline.advice.CAUSES`), the fix for the vLLM
versions whose lines show it, a regex over the lines that prove it with example lines
(tests/test_formats.py runs each through it), and, where one is published, what the work
costs once fixed. Sources: docs/advice.md.
"""

from __future__ import annotations

from firedup.formats.base import Figure, Remedy

REMEDIES = (
    Remedy(
        "cache:torch_compile", "cold torch.compile cache",
        "keep vLLM's compile cache (~/.cache/vllm/torch_compile_cache, VLLM_CACHE_ROOT) on a volume that "
        "outlives the server; its key (the folder's hash) changes with the vLLM and torch versions, the "
        "model and the compilation flags, so keep them the same",
        r"Compiling a graph for|torch\.compile|Cache the graph of|saved AOT compiled|Using cache directory",
        ("(EngineCore pid=805) INFO 12-03 21:00:55 [backends.py:393] Compiling a graph for compile range "
         "(1, 8192) takes 14.68 s",
         "(EngineCore_DP0 pid=165) INFO 03-18 06:57:23 [monitor.py:34] torch.compile takes 92.20 s in total"),
        phases=("torch_compile",),
        warm=Figure(2.32, "marin-community/marin#7615: a torch.compile cache hit took 2.32 s against 12.78 s "
                          "missed (Qwen3-0.6B, H100)")),
    Remedy(
        "cache:flashinfer_autotune", "cold FlashInfer autotune cache",
        "keep ~/.cache/vllm/flashinfer_autotune_cache on a volume that outlives the server",
        r"FlashInfer autotune",
        ("(EngineCore pid=805) WARNING 12-03 21:01:03 [kernel_warmup.py:258] No FlashInfer autotune cache "
         "entries found.Falling back to default tactics.",)),
    Remedy(
        "cache:kernel_jit", "cold kernel JIT caches (FlashInfer, Triton)",
        "keep the JIT caches on a volume that outlives the server (~/.cache/vllm, ~/.cache/flashinfer, "
        "~/.triton/cache (TRITON_CACHE_DIR)), or start once on the machine image before serving from it",
        r"init engine \(profile|KV cache size|Available KV cache memory|Graph capturing finished|Kernel JIT monitor",
        ("(EngineCore_DP0 pid=241) INFO 02-12 19:50:13 [core.py:259] init engine (profile, create kv cache, "
         "warmup model) took 143.64 seconds",
         "(EngineCore_DP0 pid=241) INFO 02-12 19:50:09 [kv_cache_utils.py:1291] GPU KV cache size: 767,552 tokens"),
        phases=("engine_init", "cuda_graph")),
    Remedy(
        "graph_capture", "CUDA graph capture, one graph per batch size",
        "capture fewer sizes: a smaller --max-num-seqs, or list them with "
        "--compilation-config '{\"cudagraph_capture_sizes\": [...]}'; --enforce-eager captures none; what "
        "fewer graphs cost in throughput the log does not show",
        r"Capturing CUDA graphs|Capturing (?:the model for CUDA graphs|cudagraphs)|Graph capturing finished",
        ("Capturing CUDA graphs (decode, FULL): 100%|██████████| 4/4 [00:01<00:00,  3.07it/s]",
         "(EngineCore_DP0 pid=165) INFO 03-18 06:57:57 [gpu_model_runner.py:4587] Graph capturing finished in "
         "32 secs, took 0.58 GiB")),
    Remedy(
        "load_weights", "loading the weights",
        "read the checkpoint from local NVMe or keep it in the page cache between starts (network file "
        "systems and object storage are slower: docs/advice.md); a streaming loader (--load-format "
        "runai_streamer or fastsafetensors) reads shards concurrently",
        r"Loading weights took|Model loading took|Starting to load model|Loading model from scratch|checkpoint shards",
        ("(VllmWorker rank=0 pid=164) INFO 11-19 18:27:57 [default_loader.py:262] Loading weights took 11.92 seconds",
         "(VllmWorker rank=0 pid=164) INFO 11-19 18:27:57 [gpu_model_runner.py:1892] Model loading took 11.9642 "
         "GiB and 13.051931 seconds")),
    Remedy(
        "serial_shards", "checkpoint shards read one after another",
        "a loader that reads shards concurrently: --load-format runai_streamer (or fastsafetensors)",
        r"Loading safetensors checkpoint shards",
        ("Loading safetensors checkpoint shards:  40% Completed | 2/5 [00:04<00:07,  2.37s/it]",)),
    Remedy(
        "slow_rank", "one rank loaded its weights slower than the others",
        "check that rank's GPU and its path to the weights (its NUMA node, its PCIe link, a disk the "
        "ranks share)",
        r"Loading weights took|Model loading took",
        ("(VllmWorker rank=0 pid=164) INFO 11-19 18:27:57 [default_loader.py:262] Loading weights took 11.92 seconds",)),
    Remedy(
        "dist_init", "distributed init waiting on a peer",
        "start every node and rank together (the ranks wait for the last one); check "
        "--data-parallel-address / MASTER_ADDR and that NCCL_SOCKET_IFNAME names the interface the nodes share",
        r"world_size=\d+ rank=|is assigned as DP rank",
        ("(EngineCore_DP0 pid=165) INFO 03-18 06:55:04 [parallel_state.py:1203] world_size=1 rank=0 local_rank=0 "
         "distributed_init_method=tcp://172.17.0.3:35599 backend=nccl",)),
    Remedy(
        "unaccounted", "time nothing in the log accounts for",
        "the log names no work here: rerun with VLLM_LOGGING_LEVEL=DEBUG, or watch the process tree with "
        "`firedup wait --pid` to see what it did",
        r"\S",
        ("INFO 02-15 22:06:45 llm_engine.py:275] # GPU blocks: 2050, # CPU blocks: 2048",)),
)

__all__ = ["REMEDIES"]
