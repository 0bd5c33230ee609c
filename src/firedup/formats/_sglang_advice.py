"""What makes an SGLang start-up slow, and what removes it: the remedies `timeline.advice` ranks.

Each `Remedy` names one engine-neutral cause (`timeline.advice.CAUSES`), the fix for the SGLang
versions whose lines show it (flags, cache folders, the command that fills a cache), a regex over
the lines that prove it with example lines (tests/test_formats.py runs each through it), and,
where one is published, what the work costs once fixed. Sources: docs/advice.md.
"""

from __future__ import annotations

from firedup.formats.base import Figure, Remedy

REMEDIES = (
    Remedy(
        "cache:deepgemm_jit", "cold DeepGEMM kernel cache (its GEMM kernels JIT-compiled)",
        "fill the cache once before serving with the same model and flags: `python3 -m sglang.compile_deep_gemm "
        "--model <model> --tp <tp>`, and keep ~/.cache/deep_gemm (SGLANG_DG_CACHE_DIR) on a volume that "
        "outlives the server",
        r"DeepGEMM JIT Compiling|Entering DeepGEMM JIT|DeepGEMM warmup",
        ("[2026-11-05 08:31:15 TP0] Try DeepGEMM JIT Compiling for <GEMM_NT_F8F8BF16> N=1152, K=4096, "
         "num_groups=1 with all Ms. It only takes a little time (typically 1 sec) if you have run "
         "`python3 -m sglang.compile_deep_gemm`.",
         "[2026-11-05 08:31:15 TP0] Entering DeepGEMM JIT Pre-Compile session. It may take a long time "
         "(typically 10-20 mins) if you have not run `sglang.compile_deep_gemm`."),
        warm=Figure(1.0, "SGLang's line: 'typically 1 sec' per shape once compiled; sgl-project/sglang#29170",
                    per=r"DeepGEMM JIT Compiling for")),
    Remedy(
        "cache:kernel_jit", "cold kernel JIT caches (Triton, FlashInfer, sgl-kernel)",
        "keep the JIT caches on a volume that outlives the server (~/.cache/flashinfer, ~/.triton/cache "
        "(TRITON_CACHE_DIR), ~/.cache/torch), or start once on the machine image before serving from it",
        r"flashinfer\.jit: (?:Finished loading|Loading) JIT ops",
        ("2025-05-02 16:15:03,610 - INFO - flashinfer.jit: Loading JIT ops: batch_prefill_with_kv_cache_dtype_q_bf16",
         "2025-05-02 16:15:35,723 - INFO - flashinfer.jit: Finished loading JIT ops: batch_prefill_with_kv_cache"),
        phases=("cuda_graph", "draft.cuda_graph", "warmup")),
    Remedy(
        "cache:flashinfer_autotune", "cold FlashInfer autotune cache",
        "keep the autotune cache file the `Running FlashInfer autotune with cache:` line names on a volume "
        "that outlives the server",
        r"FlashInfer autotune",
        ("[2026-03-01 10:01:02 TP0] Running FlashInfer autotune with cache: /root/.cache/flashinfer/autotune.json",
         "[2026-03-01 10:02:11 TP0] FlashInfer autotune completed.")),
    Remedy(
        "cache:torch_compile", "cold torch.compile cache (piecewise graphs compiled)",
        "keep Inductor's cache (TORCHINDUCTOR_CACHE_DIR, by default /tmp/torchinductor_$USER) on a volume "
        "that outlives the server; the same torch, Triton and flags keep its key",
        r"Compiling num tokens|torch\.compile|Capture piecewise",
        ("Compiling num tokens (num_tokens=8192):   2%|▏         | 1/58 [00:03<03:01,  3.18s/it]",
         "[2026-04-27 02:36:09] Capture piecewise CUDA graph begin. avail mem=23.54 GB")),
    Remedy(
        "graph_capture", "CUDA graph capture, one graph per batch size",
        "capture fewer sizes: lower --cuda-graph-max-bs (0.5.14+: --cuda-graph-max-bs-decode, "
        "--cuda-graph-max-bs-prefill) or list them with --cuda-graph-bs; a debug server can "
        "--disable-cuda-graph; what fewer graphs cost in throughput the log does not show",
        r"Capture [\w ]*graph (?:begin|end)|Capturing (?:batches|num tokens|prefill shape)",
        ("[2026-11-05 08:40:02 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, "
         "avail mem=18.90 GB",
         "[2025-01-23 19:35:27 TP0] Capture cuda graph end. Time elapsed: 6.57 s",
         "Capturing batches (bs=1 avail_mem=18.03 GB): 100%|██████████| 12/12 [01:35<00:00,  7.93s/it]"),
        sizes=r"\((?:bs|num_tokens)=(?P<size>\d+)"),
    Remedy(
        "load_weights", "loading the weights",
        "read the checkpoint from local NVMe or keep it in the page cache between starts (network file "
        "systems and object storage are slower: docs/advice.md)",
        # parallel shard loading is serial_shards' fix, given only where the log shows shards read one
        # after another: a log that prints "Multi-thread loading shards" already does it
        r"Load weight (?:begin|end)|checkpoint shards|loading shards",
        ("[2026-11-05 08:30:56 TP0] Load weight end. elapsed=186.33 s, type=Qwen3MoeForCausalLM, quant=fp8, "
         "fmt=e4m3, avail mem=108.59 GB, mem usage=29.62 GB.",
         "[2026-11-05 08:27:49 TP0] Load weight begin. avail mem=138.21 GB")),
    Remedy(
        "serial_shards", "checkpoint shards read one after another",
        "load shards in parallel: --model-loader-extra-config '{\"enable_multithread_load\": true}' "
        "(SGLang 0.5+)",
        r"Loading safetensors checkpoint shards",
        ("Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:00<00:02,  1.08it/s]",)),
    Remedy(
        "slow_rank", "one rank loaded its weights slower than the others",
        "check that rank's GPU and its path to the weights (its NUMA node, its PCIe link, a disk the "
        "ranks share)",
        r"Load weight end",
        ("[2026-11-05 08:31:07 TP1] Load weight end. elapsed=197.50 s, type=Qwen3MoeForCausalLM, quant=fp8, "
         "fmt=e4m3, avail mem=108.57 GB, mem usage=29.64 GB.",)),
    Remedy(
        "dist_init", "distributed init waiting on a peer",
        "start every node and rank together (the ranks wait for the last one); check --dist-init-addr and "
        "that NCCL_SOCKET_IFNAME names the interface the nodes share",
        r"Init torch distributed (?:begin|ends)|Init nccl begin",
        ("[2025-01-23 19:35:14 TP0] Init torch distributed begin.",
         "[2026-04-14 16:08:44 TP1] Init torch distributed ends. elapsed=0.65 s, mem usage=0.09 GB")),
    Remedy(
        "warmup", "the server's warm-up request",
        "--skip-server-warmup makes the server ready sooner, but the first request then pays this time",
        r"Uvicorn running on|fired up and ready|End of (?:\w+ )*warmup|warmup|Prefill batch",
        ("[2025-01-23 19:35:27] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
         "[2025-01-23 19:35:33] The server is fired up and ready to roll!")),
    Remedy(
        "draft", "the draft model of speculative decoding (its weights and graphs)",
        "fewer --speculative-num-steps capture fewer draft graphs; serving without --speculative-algorithm "
        "saves all of it, at a decoding speed the log does not show",
        r"(?i)draft|eagle|nextn|mtp",
        ("[2026-11-05 08:42:09 TP0] Capture draft decode CUDA graph end. elapsed=30.18 s, mem usage=0.11 GB, "
         "avail mem=17.84 GB.",
         "[2026-11-05 08:31:12 TP2] Load weight end. elapsed=5.05 s, type=LlamaForCausalLMEagle3, avail "
         "mem=108.25 GB, mem usage=0.47 GB.")),
    Remedy(
        "unaccounted", "time nothing in the log accounts for",
        "the log names no work here: rerun with --log-level debug, or watch the process tree with "
        "`firedup wait --pid` to see what it did",
        r"\S",
        ("[2026-12-05 22:38:01] server_args=ServerArgs(model_path='/tmp/model')",)),
)

__all__ = ["REMEDIES"]
