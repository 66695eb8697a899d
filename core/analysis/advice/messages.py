"""The advice's words: one catalogue, every message id with its English and Chinese text side by side.

Rules never hold a title or an advice inline: they name a message id and its fields, and
:func:`say` renders it in the language asked (``npuprof advise --lang zh``). A message id is
``<rule>.<part>``; ``rule.<id>`` is a rule's own title (the rules' status list). Numbers are
rendered by the format fields, the same in both languages.

Example::

    >>> say("en", "dataloader.title", ms=3.25)
    'The step waits 3.250 ms for its data'
    >>> say("zh", "dataloader.title", ms=3.25)
    '每个 step 等待数据 3.250 ms'
"""
from __future__ import annotations

from ...errors import ProfilerConfigError

LANGS = ("en", "zh")

MESSAGES: dict[str, dict[str, str]] = {
    # -- rule titles (the status list) ---------------------------------------------------------------
    "rule.breakdown": {"en": "Step time breakdown", "zh": "单步耗时拆解"},
    "rule.byte_alignment": {"en": "Communication sizes aligned to 512 bytes", "zh": "通信数据量 512 字节对齐"},
    "rule.small_packets": {"en": "Small communication packets", "zh": "通信小包"},
    "rule.bandwidth": {"en": "Communication below the link's bandwidth", "zh": "通信带宽低于链路带宽"},
    "rule.slow_link": {"en": "Links slower than their peers", "zh": "慢链路"},
    "rule.host_bound": {"en": "Device waiting for the host's dispatch", "zh": "设备等待 host 下发"},
    "rule.dataloader": {"en": "Step time waiting for data", "zh": "数据加载等待"},
    "rule.gc": {"en": "Python garbage-collector pauses", "zh": "Python 垃圾回收停顿"},
    "rule.sync_stream": {"en": "Host synchronisations stalling the device", "zh": "host 同步导致设备停顿"},
    "rule.ai_cpu": {"en": "Operators on the AI CPU", "zh": "AI CPU 算子"},
    "rule.dynamic_shape": {"en": "Operators compiled per shape", "zh": "动态 shape 算子"},
    "rule.block_dim": {"en": "AI Core kernels using fewer cores than the device has", "zh": "AI Core 核数未用满的算子"},
    "rule.memory": {"en": "Memory peak and what was alive then", "zh": "内存峰值及其时存活的分配"},
    "rule.mfu": {"en": "Model FLOPs utilisation", "zh": "模型算力利用率（MFU）"},
    "rule.slow_rank": {"en": "Slow ranks of a job and why", "zh": "慢卡及其原因"},
    # -- breakdown ---------------------------------------------------------------------------------
    "breakdown.title": {"en": "{share:.1f}% of the step is not computing ({parts} per step)",
                        "zh": "单步 {share:.1f}% 的时间不在计算（每步 {parts}）"},
    "breakdown.part.uncovered": {"en": "uncovered communication {ms:.3f} ms", "zh": "未被掩盖的通信 {ms:.3f} ms"},
    "breakdown.part.free": {"en": "free {ms:.3f} ms", "zh": "空闲 {ms:.3f} ms"},
    "breakdown.advice": {
        "en": "Overlap communication with computation (gradient bucketing, communication streams) and remove "
              "device idle time (host dispatch, data loading, synchronisation: see the other rules).",
        "zh": "让通信与计算并行（梯度分桶、独立通信流），并消除设备空闲时间（host 下发、数据加载、同步：见其他规则）。"},
    "breakdown.advice.top": {"en": " Of the computing time, {family} takes the most ({ms:.3f} ms per step).",
                             "zh": "计算时间中 {family} 占比最大（每步 {ms:.3f} ms）。"},
    # -- communication -----------------------------------------------------------------------------
    "byte_alignment.title": {"en": "{count} communication operator(s) move data not aligned to {bytes} bytes",
                             "zh": "{count} 个通信算子的数据量未按 {bytes} 字节对齐"},
    "byte_alignment.advice": {
        "en": "Pad the tensors a collective sends (bucket sizes, fused gradient buffers) to a multiple of {bytes} "
              "bytes: SDMA copies of unaligned sizes run below the link's bandwidth.",
        "zh": "将集合通信发送的张量（分桶大小、融合的梯度缓冲区）补齐到 {bytes} 字节的整数倍：未对齐的 SDMA 拷贝达不到链路带宽。"},
    "small_packets.title": {"en": "Small communication packets: {parts}", "zh": "通信小包：{parts}"},
    "small_packets.part": {"en": "{small} of {count} {transport} operators under {limit:g} MB",
                           "zh": "{count} 个 {transport} 算子中 {small} 个小于 {limit:g} MB"},
    "small_packets.advice": {
        "en": "Fewer, larger collectives: larger gradient buckets, gradient accumulation, a larger batch; fused "
              "optimizers; ZeRO-2/1 instead of ZeRO-3 where memory allows.",
        "zh": "减少通信次数、增大每次的数据量：更大的梯度分桶、梯度累积、更大的 batch；融合优化器；内存允许时用 ZeRO-2/1 代替 ZeRO-3。"},
    "bandwidth.title": {"en": "Communication below the link's bandwidth: {parts}", "zh": "通信带宽低于链路带宽：{parts}"},
    "bandwidth.part": {"en": "{below} of {count} {link} operators under {limit:g} GB/s",
                       "zh": "{count} 个 {link} 算子中 {below} 个低于 {limit:g} GB/s"},
    "bandwidth.advice": {
        "en": "Check what shares the link while these collectives run (computation contending for the SDMA "
              "engines, other jobs on the node), their sizes (small ones never reach the bandwidth: see "
              "small_packets) and the link's health (npu-smi, hccn_tool).",
        "zh": "检查这些集合通信执行时还有谁在使用该链路（与计算争抢 SDMA、同节点的其他任务）、通信数据量（小包达不到带宽：见 "
              "small_packets）以及链路健康状况（npu-smi、hccn_tool）。"},
    "slow_link.title": {"en": "{count} link(s) slower than their peers: {parts}", "zh": "{count} 条链路比同类链路慢：{parts}"},
    "slow_link.part": {"en": "{link} ({link_type} {bw:g} GB/s, median {median:g})",
                       "zh": "{link}（{link_type} {bw:g} GB/s，中位数 {median:g}）"},
    "slow_link.advice": {
        "en": "Check the slow link's hardware and configuration (hccn_tool link and optical-module status, npu-smi "
              "HCCS status, retransmissions) and what else uses it; the collectives over it wait for it.",
        "zh": "检查慢链路的硬件与配置（hccn_tool 链路与光模块状态、npu-smi HCCS 状态、重传）以及还有谁在使用它；经过它的集合通信都在等它。"},
    # -- host --------------------------------------------------------------------------------------
    "dataloader.title": {"en": "The step waits {ms:.3f} ms for its data", "zh": "每个 step 等待数据 {ms:.3f} ms"},
    "dataloader.advice": {
        "en": "Prefetch batches in worker processes (DataLoader num_workers, pin_memory, prefetch_factor; tf.data "
              "prefetch; MindSpore dataset num_parallel_workers) so the next batch is ready when the step ends.",
        "zh": "用多进程预取数据（DataLoader 的 num_workers、pin_memory、prefetch_factor；tf.data 的 prefetch；MindSpore dataset 的 "
              "num_parallel_workers），让 step 结束时下一批数据已就绪。"},
    "gc.title": {"en": "Python GC pauses {ms:.3f} ms per step", "zh": "Python 垃圾回收每步停顿 {ms:.3f} ms"},
    "gc.advice": {
        "en": "Free reference cycles (break them, use weakref), or call gc.freeze() after building the model and "
              "gc.disable() in the loop with gc.collect() every N steps.",
        "zh": "消除循环引用（打断引用环、使用 weakref），或在构建模型后调用 gc.freeze()，训练循环中 gc.disable() 并每 N 步 gc.collect()。"},
    "gc.advice.gen2": {"en": " Full (generation 2) collections take {ms:.3f} ms in all.",
                       "zh": "完整回收（第 2 代）共耗时 {ms:.3f} ms。"},
    "host_bound.title": {"en": "The device idles {ms:.3f} ms per step waiting for the host's dispatch ({gaps} gaps)",
                         "zh": "设备每步空闲 {ms:.3f} ms 等待 host 下发（{gaps} 个空隙）"},
    "host_bound.advice": {
        "en": "Launch less from the host: fuse small operators, capture the step as a graph (MindSpore graph mode, "
              "torch_npu's graph mode / aclgraph, TensorFlow tf.function), enable the task queue, keep Python work "
              "between launches out of the step's critical path.",
        "zh": "减少 host 侧下发：融合小算子，把 step 整图下沉（MindSpore 图模式、torch_npu 图模式 / aclgraph、TensorFlow "
              "tf.function），开启 task queue，把下发之间的 Python 工作移出关键路径。"},
    "sync_stream.title": {"en": "The host waits {ms:.3f} ms per step in synchronisations",
                          "zh": "host 每步在同步中等待 {ms:.3f} ms"},
    "sync_stream.advice": {
        "en": "Avoid synchronising inside the step (tensor.item(), printing losses each step, explicit stream "
              "synchronize): accumulate on the device and read every N steps.",
        "zh": "避免在 step 内同步（tensor.item()、每步打印 loss、显式流同步）：在设备上累积，每 N 步读取一次。"},
    # -- operators ---------------------------------------------------------------------------------
    "ai_cpu.title": {"en": "{count} operator type(s) run on the AI CPU", "zh": "{count} 种算子运行在 AI CPU 上"},
    "ai_cpu.advice": {
        "en": "Replace these operators or their inputs' data types (int64 -> int32, double -> float) with ones the "
              "AI Core supports; check the operator's supported shapes.",
        "zh": "替换这些算子或其输入的数据类型（int64 -> int32、double -> float）为 AI Core 支持的类型；检查算子支持的 shape。"},
    "dynamic_shape.title.all": {"en": "Dynamic shape: all operators are compiled per shape",
                                "zh": "动态 shape：所有算子都按 shape 编译"},
    "dynamic_shape.title.some": {"en": "Dynamic shape: {dynamic} of {judged} kernels are compiled per shape",
                                 "zh": "动态 shape：{judged} 个 kernel 中 {dynamic} 个按 shape 编译"},
    "dynamic_shape.advice": {
        "en": "Disable per-shape compilation where shapes are few and fixed: "
              "torch_npu.npu.set_compile_mode(jit_compile=False) and torch_npu.npu.config.allow_internal_format = "
              "False at the start of the script; pad inputs to a few fixed shapes (buckets).",
        "zh": "shape 少且固定时关闭按 shape 编译：在脚本开头设置 torch_npu.npu.set_compile_mode(jit_compile=False) 与 "
              "torch_npu.npu.config.allow_internal_format = False；把输入补齐到少数几种固定 shape（分桶）。"},
    "block_dim.title": {"en": "AI Core kernels leave cores idle ({types} operator types)",
                        "zh": "AI Core 算子未用满核数（{types} 种算子）"},
    "block_dim.advice": {
        "en": "Split the work of these operators into a multiple of the device's core count (tiling, batch or "
              "sequence dimension); merge small kernels.",
        "zh": "把这些算子的工作切分为设备核数的整数倍（tiling、batch 或序列维度）；合并小 kernel。"},
    # -- memory ------------------------------------------------------------------------------------
    "memory.title": {"en": "Memory peak {mb:.1f} MB allocated", "zh": "内存峰值 {mb:.1f} MB"},
    "memory.title.step": {"en": " in step {step}", "zh": "（第 {step} 步）"},
    "memory.title.share": {"en": " ({share:.1f}% of the device's {gb:g} GB)", "zh": "（占设备 {gb:g} GB 的 {share:.1f}%）"},
    "memory.advice": {
        "en": "Near the device's memory: activation recomputation, smaller micro-batches, freeing the operators' "
              "outputs alive at the peak earlier; far below it: a larger batch uses the device better. Reserved "
              "far above allocated is the allocator's cache (fragmentation: "
              "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True).",
        "zh": "接近设备内存时：重计算激活值、减小 micro-batch、提前释放峰值时存活的算子输出；远低于设备内存时：更大的 batch "
              "能更好地利用设备。reserved 远高于 allocated 是分配器的缓存（碎片：PYTORCH_NPU_ALLOC_CONF=expandable_segments:True）。"},
    # -- mfu ---------------------------------------------------------------------------------------
    "mfu.title": {"en": "MFU {mfu:.2f}% of {peak:g} TFLOP/s ({dtype}; {uncounted} kernels without a FLOP count left out)",
                  "zh": "MFU 为 {peak:g} TFLOP/s 的 {mfu:.2f}%（{dtype}；{uncounted} 个无法计算 FLOPs 的 kernel 未计入）"},
    "mfu.title.rate": {"en": "Counted kernels reach {tflops:.3f} TFLOP/s", "zh": "已计算的 kernel 达到 {tflops:.3f} TFLOP/s"},
    "mfu.advice": {
        "en": "Raise the arithmetic intensity: larger batches or fused operators, matmul dimensions that are "
              "multiples of 16 (Cube unit), fp16/bf16 instead of fp32 where accuracy allows.",
        "zh": "提高计算密度：更大的 batch 或融合算子，矩阵乘维度取 16 的倍数（Cube 单元），精度允许时用 fp16/bf16 代替 fp32。"},
    # -- slow_rank ---------------------------------------------------------------------------------
    "slow_rank.title": {"en": "Rank {rank} is slow: {ms:.3f} ms per step over the median rank, most in {top}",
                        "zh": "rank {rank} 是慢卡：每步比中位 rank 多 {ms:.3f} ms，主要在 {top}"},
    "slow_rank.advice": {"en": "Look at rank {rank}'s {top}: the other ranks wait for it in every collective.",
                         "zh": "检查 rank {rank} 的 {top}：其他 rank 在每次集合通信中都在等它。"},
}


def check_lang(lang: object) -> str:
    """``lang`` if it is a language of the catalogue, else a :class:`ProfilerConfigError` naming ``--lang``."""
    if lang not in LANGS:
        raise ProfilerConfigError("--lang", lang, f"one of {', '.join(LANGS)}")
    return str(lang)


def say(lang: str, msg_id: str, **fields: object) -> str:
    """Message ``msg_id`` in ``lang`` with ``fields`` filled in (English where ``lang`` is not in the catalogue)."""
    texts = MESSAGES[msg_id]
    return texts.get(lang, texts["en"]).format(**fields)


def joiner(lang: str) -> str:
    """How listed parts are joined in ``lang``."""
    return "、" if lang == "zh" else ", "
