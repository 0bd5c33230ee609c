"""The `server_args=` dump SGLang prints at start, as a table of fields and values.

SGLang prints `f"{server_args=}"`: the dataclass repr of `ServerArgs`, one line of a few
hundred `name=value` fields with Python repr quoting (0.5.12 here), or, from 0.5.19 on, the
repr of a plain dict (0.5.23 here). The values are the ones `__post_init__` resolved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def decode_bs_list(max_bs: int) -> list[int]:
    """SGLang's default decode capture sizes up to `max_bs`: 1, 2, 4, 8, 12, then steps of 8 and 16."""
    sizes = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 1025, 16)]
    return [s for s in sizes if s <= max_bs]


def prefill_token_list(max_tokens: int) -> list[int]:
    """SGLang's default prefill (piecewise / breakable) capture token counts up to `max_tokens`."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
             *range(1280, 4097, 256), *range(4608, 16385, 512)]
    return [s for s in sizes if s <= max_tokens]


# Fields in print order with their resolved defaults. `None` values that a run sets are
# overridden by `server_args_0512` / `server_args_0523`.
_FIELDS_0512: tuple[tuple[str, Any], ...] = (
    ("model_path", None), ("tokenizer_path", None), ("tokenizer_mode", "auto"), ("tokenizer_backend", "huggingface"),
    ("tokenizer_worker_num", 1), ("skip_tokenizer_init", False), ("load_format", "auto"),
    ("model_loader_extra_config", "{}"), ("trust_remote_code", False), ("context_length", None),
    ("is_embedding", False), ("enable_multimodal", None), ("revision", None), ("model_impl", "auto"),
    ("host", "127.0.0.1"), ("port", 30000), ("fastapi_root_path", ""), ("grpc_mode", False),
    ("skip_server_warmup", False), ("warmups", None), ("nccl_port", None),
    ("checkpoint_engine_wait_weights_before_ready", False), ("ssl_keyfile", None), ("ssl_certfile", None),
    ("ssl_ca_certs", None), ("ssl_keyfile_password", None), ("enable_ssl_refresh", False), ("enable_http2", False),
    ("dtype", "auto"), ("quantization", None), ("quantization_param_path", None), ("kv_cache_dtype", "auto"),
    ("enable_fp32_lm_head", False), ("modelopt_quant", None), ("modelopt_checkpoint_restore_path", None),
    ("modelopt_checkpoint_save_path", None), ("modelopt_export_path", None), ("quantize_and_serve", False),
    ("rl_quant_profile", None), ("mem_fraction_static", None), ("max_running_requests", None),
    ("max_queued_requests", None), ("max_total_tokens", None), ("chunked_prefill_size", 8192),
    ("enable_dynamic_chunking", False), ("max_prefill_tokens", 16384), ("prefill_max_requests", None),
    ("schedule_policy", "fcfs"), ("enable_priority_scheduling", False), ("disable_priority_preemption", False),
    ("default_priority_value", None), ("abort_on_priority_when_disabled", False),
    ("schedule_low_priority_values_first", False), ("priority_scheduling_preemption_threshold", 10),
    ("schedule_conservativeness", 1.0), ("page_size", 1), ("swa_full_tokens_ratio", 0.8),
    ("disable_hybrid_swa_memory", False), ("radix_eviction_policy", "lru"), ("enable_prefill_delayer", False),
    ("prefill_delayer_max_delay_passes", 30), ("prefill_delayer_token_usage_low_watermark", None),
    ("device", "cuda"), ("tp_size", 1), ("pp_size", 1), ("pp_max_micro_batch_size", None),
    ("pp_async_batch_depth", 0), ("stream_interval", 1), ("batch_notify_size", 16),
    ("stream_response_default_include_usage", False), ("incremental_streaming_output", False),
    ("enable_streaming_session", False), ("random_seed", None), ("constrained_json_whitespace_pattern", None),
    ("constrained_json_disable_any_whitespace", False), ("watchdog_timeout", 300), ("soft_watchdog_timeout", None),
    ("dist_timeout", None), ("download_dir", None), ("model_checksum", None), ("base_gpu_id", 0),
    ("gpu_id_step", 1), ("sleep_on_idle", False), ("use_ray", False), ("custom_sigquit_handler", None),
    ("log_level", "info"), ("log_level_http", None), ("log_requests", False), ("log_requests_level", 2),
    ("log_requests_format", "text"), ("log_requests_target", None), ("uvicorn_access_log_exclude_prefixes", []),
    ("crash_dump_folder", None), ("show_time_cost", False), ("enable_metrics", True),
    ("enable_mfu_metrics", False), ("enable_metrics_for_all_schedulers", False),
    ("tokenizer_metrics_custom_labels_header", "x-custom-labels"), ("tokenizer_metrics_allowed_custom_labels", None),
    ("extra_metric_labels", None), ("bucket_time_to_first_token", None), ("bucket_inter_token_latency", None),
    ("bucket_e2e_request_latency", None), ("prompt_tokens_buckets", None), ("generation_tokens_buckets", None),
    ("gc_warning_threshold_secs", 0.0), ("decode_log_interval", 40), ("enable_request_time_stats_logging", False),
    ("kv_events_config", None), ("enable_trace", False), ("otlp_traces_endpoint", "localhost:4317"),
    ("export_metrics_to_file", False), ("export_metrics_to_file_dir", None), ("api_key", None),
    ("admin_api_key", None), ("served_model_name", None), ("weight_version", "default"), ("chat_template", None),
    ("hf_chat_template_name", None), ("completion_template", None), ("file_storage_path", "sglang_storage"),
    ("enable_cache_report", False), ("reasoning_parser", None), ("strip_thinking_cache", False),
    ("enable_strict_thinking", False), ("tool_call_parser", None), ("tool_server", None),
    ("sampling_defaults", "model"), ("dp_size", 1), ("load_balance_method", "round_robin"), ("attn_cp_size", 1),
    ("moe_dp_size", 1), ("dist_init_addr", None), ("nnodes", 1), ("node_rank", 0),
    ("json_model_override_args", "{}"), ("preferred_sampling_params", None), ("enable_lora", None),
    ("enable_lora_overlap_loading", None), ("max_lora_rank", None), ("lora_target_modules", None),
    ("lora_paths", None), ("max_loaded_loras", None), ("max_loras_per_batch", 8), ("lora_eviction_policy", "lru"),
    ("lora_backend", "csgmv"), ("max_lora_chunk_size", 16), ("attention_backend", "fa3"),
    ("decode_attention_backend", None), ("prefill_attention_backend", None), ("sampling_backend", "flashinfer"),
    ("grammar_backend", "xgrammar"), ("mm_attention_backend", None), ("fp8_gemm_runner_backend", "auto"),
    ("fp4_gemm_runner_backend", "auto"), ("nsa_prefill_backend", None), ("nsa_decode_backend", None),
    ("disable_flashinfer_autotune", False), ("mamba_backend", "triton"), ("speculative_algorithm", None),
    ("speculative_draft_model_path", None), ("speculative_draft_model_revision", None),
    ("speculative_draft_load_format", None), ("speculative_num_steps", None), ("speculative_eagle_topk", None),
    ("speculative_num_draft_tokens", None), ("speculative_accept_threshold_single", 1.0),
    ("speculative_accept_threshold_acc", 1.0), ("speculative_token_map", None),
    ("speculative_attention_mode", "prefill"), ("speculative_draft_attention_backend", None),
    ("speculative_moe_runner_backend", "auto"), ("speculative_moe_a2a_backend", None),
    ("speculative_draft_model_quantization", None), ("speculative_adaptive", False),
    ("speculative_adaptive_config", None), ("speculative_ngram_min_bfs_breadth", 1),
    ("speculative_ngram_max_bfs_breadth", 10), ("speculative_ngram_match_type", "BFS"),
    ("speculative_ngram_max_trie_depth", 18), ("speculative_ngram_capacity", 10000000),
    ("enable_multi_layer_eagle", False), ("ep_size", 1), ("moe_a2a_backend", "none"),
    ("moe_runner_backend", "auto"), ("flashinfer_mxfp4_moe_precision", "default"),
    ("enable_flashinfer_allreduce_fusion", False), ("deepep_mode", "auto"), ("ep_num_redundant_experts", 0),
    ("ep_dispatch_algorithm", None), ("init_expert_location", "trivial"), ("enable_eplb", False),
    ("eplb_algorithm", "auto"), ("eplb_rebalance_num_iterations", 1000), ("eplb_rebalance_layers_per_chunk", None),
    ("eplb_min_rebalancing_utilization_threshold", 1.0), ("expert_distribution_recorder_mode", None),
    ("expert_distribution_recorder_buffer_size", 1000), ("enable_expert_distribution_metrics", False),
    ("deepep_config", None), ("moe_dense_tp_size", None), ("elastic_ep_backend", None), ("mooncake_ib_device", None),
    ("max_mamba_cache_size", None), ("mamba_ssm_dtype", None), ("mamba_full_memory_ratio", 0.9),
    ("mamba_scheduler_strategy", "no_buffer"), ("mamba_track_interval", 256),
    ("enable_hierarchical_cache", False), ("hicache_ratio", 2.0), ("hicache_size", 0),
    ("hicache_write_policy", "write_through"), ("hicache_io_backend", "kernel"),
    ("hicache_mem_layout", "layer_first"), ("hicache_storage_backend", None),
    ("hicache_storage_prefetch_policy", "best_effort"), ("hicache_storage_backend_extra_config", None),
    ("enable_lmcache", False), ("kt_weight_path", None), ("kt_method", "AMXINT4"), ("kt_cpuinfer", None),
    ("kt_threadpool_count", 2), ("kt_num_gpu_experts", None), ("dllm_algorithm", None),
    ("dllm_algorithm_config", None), ("cpu_offload_gb", 0), ("offload_group_size", -1),
    ("offload_num_in_group", 1), ("offload_prefetch_step", 1), ("offload_mode", "cpu"),
    ("disable_radix_cache", False), ("cuda_graph_max_bs", None), ("cuda_graph_bs", None),
    ("disable_cuda_graph", False), ("disable_cuda_graph_padding", False), ("enable_profile_cuda_graph", False),
    ("enable_cudagraph_gc", False), ("debug_cuda_graph", False), ("enable_layerwise_nvtx_marker", False),
    ("enable_nccl_nvls", False), ("enable_symm_mem", False), ("disable_flashinfer_cutlass_moe_fp4_allgather", False),
    ("enable_tokenizer_batch_encode", False), ("disable_tokenizer_batch_decode", False),
    ("disable_outlines_disk_cache", False), ("disable_custom_all_reduce", False), ("enable_mscclpp", False),
    ("enable_torch_symm_mem", False), ("pre_warm_nccl", False), ("disable_overlap_schedule", False),
    ("enable_mixed_chunk", False), ("enable_dp_attention", False), ("enable_dp_lm_head", False),
    ("enable_two_batch_overlap", False), ("enable_single_batch_overlap", False),
    ("tbo_token_distribution_threshold", 0.48), ("enable_torch_compile", False),
    ("disable_piecewise_cuda_graph", True), ("enforce_piecewise_cuda_graph", False),
    ("enable_torch_compile_debug_mode", False), ("torch_compile_max_bs", 32),
    ("piecewise_cuda_graph_max_tokens", 8192), ("piecewise_cuda_graph_tokens", None),
    ("piecewise_cuda_graph_compiler", "eager"), ("torchao_config", ""), ("enable_nan_detection", False),
    ("enable_p2p_check", False), ("triton_attention_reduce_in_fp32", False), ("triton_attention_num_kv_splits", 8),
    ("triton_attention_split_tile_size", None), ("num_continuous_decode_steps", 1),
    ("delete_ckpt_after_loading", False), ("enable_memory_saver", False), ("enable_weights_cpu_backup", False),
    ("enable_draft_weights_cpu_backup", False), ("allow_auto_truncate", False),
    ("enable_custom_logit_processor", False), ("flashinfer_mla_disable_ragged", False),
    ("disable_shared_experts_fusion", False), ("disable_chunked_prefix_cache", False),
    ("disable_fast_image_processor", False), ("keep_mm_feature_on_device", False),
    ("enable_return_hidden_states", False), ("enable_return_routed_experts", False),
    ("scheduler_recv_interval", 1), ("numa_node", None), ("enable_deterministic_inference", False),
    ("rl_on_policy_target", None), ("enable_attn_tp_input_scattered", False), ("gc_threshold", None),
    ("enable_nsa_prefill_context_parallel", False), ("nsa_prefill_cp_mode", "round-robin-split"),
    ("enable_fused_qk_norm_rope", False), ("enable_precise_embedding_interpolation", False),
    ("enable_dynamic_batch_tokenizer", False), ("dynamic_batch_tokenizer_batch_size", 32),
    ("dynamic_batch_tokenizer_batch_timeout", 0.002), ("debug_tensor_dump_output_folder", None),
    ("debug_tensor_dump_layers", None), ("debug_tensor_dump_input_file", None), ("debug_tensor_dump_inject", False),
    ("disaggregation_mode", "null"), ("disaggregation_transfer_backend", "mooncake"),
    ("disaggregation_bootstrap_port", 8998), ("disaggregation_ib_device", None),
    ("disaggregation_decode_enable_radix_cache", False), ("disaggregation_decode_enable_offload_kvcache", False),
    ("num_reserved_decode_tokens", 512), ("disaggregation_decode_polling_interval", 1),
    ("encoder_only", False), ("language_only", False), ("encoder_transfer_backend", "zmq_to_scheduler"),
    ("encoder_urls", []), ("custom_weight_loader", []), ("weight_loader_disable_mmap", False),
    ("remote_instance_weight_loader_seed_instance_ip", None),
    ("remote_instance_weight_loader_seed_instance_service_port", None),
    ("remote_instance_weight_loader_send_weights_group_ports", None),
    ("remote_instance_weight_loader_backend", "nccl"), ("modelexpress_config", None), ("enable_pdmux", False),
    ("pdmux_config_path", None), ("sm_group_num", 8), ("enable_broadcast_mm_inputs_process", False),
    ("enable_prefix_mm_cache", False), ("mm_enable_dp_encoder", False), ("mm_process_config", {}),
    ("limit_mm_data_per_request", None), ("decrypted_config_file", None), ("decrypted_draft_config_file", None),
    ("forward_hooks", None),
)

# 0.5.14+ replaced the single decode-graph switch with per-stage fields; 0.5.18+ added the
# weight-load mode; 0.5.20 dropped the deprecated aliases from the dataclass.
_DROPPED_0523 = frozenset({
    "cuda_graph_max_bs", "cuda_graph_bs", "disable_cuda_graph", "disable_piecewise_cuda_graph",
    "enforce_piecewise_cuda_graph", "piecewise_cuda_graph_max_tokens", "piecewise_cuda_graph_tokens",
    "piecewise_cuda_graph_compiler",
})
_ADDED_0523: tuple[tuple[str, Any], ...] = (
    ("cuda_graph_backend_decode", "full"), ("cuda_graph_backend_prefill", "breakable"),
    ("cuda_graph_max_bs_decode", None), ("cuda_graph_bs_decode", None), ("cuda_graph_max_bs_prefill", 8192),
    ("cuda_graph_bs_prefill", None), ("disable_decode_cuda_graph", False), ("disable_prefill_cuda_graph", False),
    ("cuda_graph_config", None), ("startup_weight_load_mode", "serial"), ("attn_dp_size", 1),
)


def _fields(base: Sequence[tuple[str, Any]], overrides: Mapping[str, Any]) -> list[tuple[str, Any]]:
    unknown = set(overrides) - {name for name, _ in base}
    if unknown:
        raise KeyError(f"not a ServerArgs field here: {sorted(unknown)}")
    return [(name, overrides.get(name, value)) for name, value in base]


def server_args_0512(overrides: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The resolved fields of a 0.5.12 `ServerArgs`, in print order."""
    return _fields(_FIELDS_0512, overrides)


def server_args_0523(overrides: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The resolved fields of a 0.5.23 `server_args` dict, in print order."""
    base: list[tuple[str, Any]] = []
    for name, value in _FIELDS_0512:
        if name in _DROPPED_0523:
            if name == "disable_cuda_graph_padding":
                continue
            if name == "cuda_graph_max_bs":
                base.extend(_ADDED_0523)
            continue
        base.append((name, value))
    return _fields(base, overrides)


def repr_dataclass(fields: Sequence[tuple[str, Any]]) -> str:
    """`ServerArgs(a=1, b='x', ...)` as `repr()` of the dataclass prints it."""
    return "ServerArgs(" + ", ".join(f"{name}={value!r}" for name, value in fields) + ")"


def repr_dict(fields: Sequence[tuple[str, Any]]) -> str:
    """`{'a': 1, 'b': 'x', ...}` as `repr()` of the resolved dict prints it."""
    return repr(dict(fields))
