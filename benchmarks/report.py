"""Results -> goal rows -> Markdown table, and the README section between the
``<!-- bench:start -->`` / ``<!-- bench:end -->`` markers.

Every figure comes from the result file of one ``benchmarks/run.py`` run;
each row says its goal and whether the measured median meets it.

Example::

    rows = build_rows(results)
    print(markdown(results, rows))
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

START, END = "<!-- bench:start -->", "<!-- bench:end -->"
ANALYSIS_GOAL = 2e6          # events/s at 10M events to every output
CORES_GOAL = 1.6             # the 10M analysis on two cores against one


def _ns(x: float) -> str:
    return f"{x:,.0f} ns" if x >= 100 else f"{x:.1f} ns"


def _rng(s: dict, fmt) -> str:
    return f"{fmt(s['median'])} [{fmt(s['min'])}–{fmt(s['max'])}]"


def _pct(r: float) -> str:
    return f"{(r - 1) * 100:+.1f}%"


def _ratio(s: dict, unit: str = "x") -> str:
    return f"{s['median']:.2f}{unit} [{s['min']:.2f}–{s['max']:.2f}]"


def _mb(b: float) -> str:
    return f"{b / 2**20:,.0f} MB"


def _s(x: float) -> str:
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def _passes(res: dict) -> str:
    """" (median of N: min-max s, CPU c s)" for a result that timed several passes, else nothing."""
    walls = res.get("seconds_passes") or []
    if len(walls) < 2:
        return ""
    cpu = f", CPU {res['cpu_seconds']:.1f} s" if "cpu_seconds" in res else ""
    return f" (median of {len(walls)}: {min(walls):.1f}–{max(walls):.1f} s{cpu})"


def _row(section: str, name: str, npuprof: str, baseline: str, ratio: str, goal: str,
         met: Optional[bool], key: str, figure: Any = None) -> dict:
    return {"section": section, "benchmark": name, "npuprof": npuprof, "baseline": baseline, "ratio": ratio,
            "goal": goal, "met": met, "key": key, "figure": figure}


def _err(section: str, name: str, res: dict, key: str) -> dict:
    return _row(section, name, "not measured", "", "", "", None, key, figure=res.get("error", "missing"))


def build_rows(results: dict) -> list[dict]:
    """One dict per table row (see :func:`markdown`)."""
    rows: list[dict] = []
    ann = results.get("annotations", {})
    if "record_function" in ann:
        rf, ck = ann["record_function"], ann["clock_pair"]
        rows.append(_row("Annotations", "`record_function` enter+exit while profiling",
                         _rng(rf, _ns), f"`perf_counter_ns()` pair {_rng(ck, _ns)}",
                         _ratio(ann["rf_over_clock"]), "< 1 µs median", rf["median"] < 1000,
                         "annotation_under_1us", rf["median"]))
        sus = ann.get("sustained") or {}
        for key, label in (("record_function", "`record_function`"), ("mstx_mark", "`mstx.mark`"),
                           ("mstx_range", "`mstx.range_start/end`"), ("trace_api", "`trace_api` call")):
            if key not in sus:
                continue
            w = sus[key]
            ok = w["median"] <= 1000 and w["median"] <= 6 * ck["median"] and w["worst"] <= 2 * w["median"]
            fallback = (ann.get("sustained_python") or {}).get(key)
            also = (f" (Python fallback: median {_ns(fallback['median'])}, worst {_ns(fallback['worst'])})"
                    if ann.get("compiled") and fallback else "")
            rows.append(_row("Annotations", f"{label} sustained: {sus['n']:,} events at full rate, per "
                                            f"{sus['window']:,}-event window, conversion and writes included",
                             f"median {_ns(w['median'])}, worst {_ns(w['worst'])}{also}",
                             f"`perf_counter_ns()` pair {_ns(ck['median'])}",
                             f"{w['median'] / ck['median']:.2f}x; worst/median {w['worst'] / w['median']:.2f}",
                             "<= 1 µs and <= 6x a clock pair; worst <= 2x median", ok, f"sustained_{key}",
                             w["median"]))
        if "dynamic_idle_step" in ann and "empty_loop" in ann:
            dyn, empty = ann["dynamic_idle_step"], ann["empty_loop"]
            over = dyn["median"] - empty["median"]
            rows.append(_row("Annotations", "idle `dynamic_profile.step()` (config watched, no capture due)",
                             _rng(dyn, _ns), f"empty loop iteration {_rng(empty, _ns)}", f"+{_ns(over)}",
                             "< 1 µs over the bare loop", over < 1000, "dynamic_idle_step", over))
        if "profiler_step" in ann:
            ps = ann["profiler_step"]
            rows.append(_row("Annotations", "`Profiler.step()` in a recording window (the step recorded)",
                             _rng(ps, _ns), "", "", "", None, "profiler_step", ps["median"]))
        if "torch_record_function" in ann:
            tr = ann["torch_record_function"]
            rows.append(_row("Annotations", "`record_function` vs `torch.profiler.record_function`, enter+exit "
                                            "(both profiling)",
                             _rng(rf, _ns), f"torch {ann['torch'].get('version', '')} {_rng(tr, _ns)}",
                             _ratio(ann["torch_over_rf"]) + " cheaper", ">= 10x cheaper",
                             ann["torch_over_rf"]["median"] >= 10, "annotation_vs_torch",
                             ann["torch_over_rf"]["median"]))
            ra, ta = ann["record_function_amortised"], ann["torch_record_function_amortised"]
            rows.append(_row("Annotations", "same, amortised with the deferred work per event (npuprof: "
                                            "columns + raw files; torch: stop and collect)",
                             _rng(ra, _ns), f"torch {_rng(ta, _ns)}",
                             _ratio(ann["torch_over_rf_amortised"]) + " cheaper", "(>= 10x cheaper)",
                             ann["torch_over_rf_amortised"]["median"] >= 10, "annotation_vs_torch_amortised",
                             ann["torch_over_rf_amortised"]["median"]))
        else:
            rows.append(_row("Annotations", "`record_function` vs torch", "", "torch not available", "",
                             ">= 10x cheaper", None, "annotation_vs_torch", ann.get("torch")))
        mk = ann["mstx_mark"]
        rows.append(_row("Annotations", "`mstx.mark` while profiling", _rng(mk, _ns),
                         f"`perf_counter_ns()` pair {_ns(ck['median'])}", f"{mk['median'] / ck['median']:.1f}x",
                         "< 1 µs median", mk["median"] < 1000, "mark_under_1us", mk["median"]))
        if "mstx_mark_amortised" in ann:
            ma = ann["mstx_mark_amortised"]
            rows.append(_row("Annotations", "`mstx.mark` amortised with its conversion and write", _rng(ma, _ns),
                             "", "", "", None, "mark_amortised", ma["median"]))
        idle = ann["record_function_idle"]
        rows.append(_row("Annotations", "`record_function` with no profiler running", _rng(idle, _ns),
                         f"empty `with` block {_ns(ann['with_empty']['median'])}",
                         f"{idle['median'] / ann['with_empty']['median']:.2f}x", "", None, "annotation_idle"))
    elif ann:
        rows.append(_err("Annotations", "annotation cost", ann, "annotation_under_1us"))
    host = results.get("host", {})
    if "ratio" in host:
        r = host["ratio"]
        rows.append(_row("Run overhead", "host collectors (default Profiler) on a numpy MLP training loop, "
                                         f"{host['unprofiled']['median'] * 1e3:.1f} ms/step",
                         f"{host['profiled']['median'] * 1e3:.3f} ms/step",
                         f"unprofiled {host['unprofiled']['median'] * 1e3:.3f} ms/step",
                         f"{_pct(r['median'])} [{_pct(r['min'])}…{_pct(r['max'])}]", "< +2%",
                         r["median"] < 1.02, "host_overhead", r["median"]))
        hs = results.get("host_sys", {})
        if "ratio" in hs:
            r = hs["ratio"]
            rows.append(_row("Run overhead", "same, plus host_sys sampling (cpu, mem at 50 Hz)",
                             f"{hs['profiled']['median'] * 1e3:.3f} ms/step",
                             f"unprofiled {hs['unprofiled']['median'] * 1e3:.3f} ms/step",
                             f"{_pct(r['median'])} [{_pct(r['min'])}…{_pct(r['max'])}]", "(< +2%)",
                             r["median"] < 1.02, "host_sys_overhead", r["median"]))
    elif host:
        rows.append(_err("Run overhead", "host collectors", host, "host_overhead"))
    for key, label, native in (("mindspore", "MindSpore 2.10 PyNative CPU", "MindSpore's profiler"),
                               ("tensorflow", "TensorFlow 2.21 `tf.function` CPU", "TF's profiler")):
        fw = results.get(key, {})
        ratio_key = f"npuprof_over_{key}"
        if ratio_key in fw:
            r, nat = fw[ratio_key], fw[f"{key}_over_none"]
            rows.append(_row("Run overhead", f"{label}: npuprof driving {native} / {native} alone "
                                             f"({fw['none']['median'] * 1e3:.2f} ms/step unprofiled)",
                             f"{fw['npuprof']['median'] * 1e3:.3f} ms/step",
                             f"{native} alone {fw[key]['median'] * 1e3:.3f} ms/step "
                             f"({_pct(nat['median'])} over none)",
                             f"{_pct(r['median'])} [{_pct(r['min'])}…{_pct(r['max'])}]", "< +3%",
                             r["median"] < 1.03, f"{key}_overhead", r["median"]))
            ss = fw.get("start_stop_s", {})
            if key in ss and "npuprof" in ss:
                rows.append(_row("Run overhead", f"same, per window: profiler start + stop ({fw['warmup']} "
                                                 "untimed steps after each start)",
                                 f"{ss['npuprof']['median'] * 1e3:.1f} ms",
                                 f"{native} alone {ss[key]['median'] * 1e3:.1f} ms", "", "", None,
                                 f"{key}_start_stop", ss["npuprof"]["median"]))
        elif fw:
            rows.append(_err("Run overhead", label, fw, f"{key}_overhead"))
    for size in ("1M", "10M"):
        a = results.get(f"analysis_{size}", {})
        if "events_per_s" in a:
            eps, rss = a["events_per_s"], a["peak_rss_bytes"]
            goal = size == "10M"
            py = a.get("python_events_per_s")
            fallback = (f"rows rendered by the numpy fallback (`NPUPROF_PURE_PYTHON=1`, same run): "
                        f"{py['median'] / 1e6:.2f}M events/s" if py else "")
            rows.append(_row("Analysis", f"synthetic host raw data, {a['events'] / 1e6:g}M events -> every "
                                         f"output ({a['raw_bytes'] / 2**20:,.0f} MB raw)",
                             f"{_s(a['seconds']['median'])} [{_s(a['seconds']['min'])}–{_s(a['seconds']['max'])}]",
                             fallback, f"{eps['median'] / 1e6:.2f}M events/s", f">= {ANALYSIS_GOAL / 1e6:g}M events/s"
                             if goal else "", eps["median"] >= ANALYSIS_GOAL if goal else None,
                             f"analysis_rate_{size}", eps["median"]))
            rows.append(_row("Analysis", f"peak RSS of that analysis ({a['events'] / 1e6:g}M)", _mb(rss["max"]),
                             f"its table alone: {a['table_bytes'] / 2**20:,.0f} MB", "",
                             "< 1 GB" if goal else "", rss["max"] < 2**30 if goal else None,
                             f"analysis_rss_{size}", rss["max"]))
            cores = a.get("cores")
            if cores and "speedup" in cores:
                sp = cores["speedup"]
                loads = cores.get("load_averages") or [0]
                rows.append(_row("Analysis", f"that analysis ({a['events'] / 1e6:g}M) on two cores against one "
                                             "(`taskset -c 0,1` / `-c 0`, alternated pairs; load average "
                                             f"{min(loads):.1f}-{max(loads):.1f})",
                                 f"2 cores {_rng(cores['two_cores_s'], _s)}", f"1 core {_rng(cores['one_core_s'], _s)}",
                                 _ratio(sp) + " faster", ">= 1.6x", sp["median"] >= CORES_GOAL,
                                 f"analysis_cores_{size}", sp["median"]))
            elif cores:
                rows.append(_err("Analysis", f"{size} events on 1 / 2 cores", cores, f"analysis_cores_{size}"))
        elif a:
            rows.append(_err("Analysis", f"{size} events", a, f"analysis_rate_{size}"))
    ms = results.get("mindspore", {})
    if "analysis_speedup" in ms:
        sp = ms["analysis_speedup"]
        rows.append(_row("Analysis", f"a MindSpore run ({ms['analysis_steps']} steps, "
                                     f"{ms['analysis_events'][0]:,} op events): npuprof vs `mindspore.profiler`",
                         _rng(ms["npuprof_analyse_s"], _s), f"MindSpore {_rng(ms['ms_analyse_s'], _s)}",
                         _ratio(sp) + " faster", ">= 10x faster", sp["median"] >= 10, "analysis_vs_mindspore",
                         sp["median"]))
    tf = results.get("tensorflow", {})
    if "convert_ratio" in tf:
        cr = tf["convert_ratio"]
        rows.append(_row("Analysis", f"XSpace -> trace ({tf['convert_steps']} steps, "
                                     f"{tf['xplane_bytes'] / 1e3:,.0f} kB xplane.pb): npuprof analyse vs "
                                     "TF's C++ converter",
                         _rng(tf["npuprof_convert_s"], _s), f"TF {_rng(tf['tf_convert_s'], _s)}",
                         f"{cr['median']:.2f}x the time", "<= 1x (no slower)", cr["median"] <= 1.0,
                         "analysis_vs_tf", cr["median"]))
    mem = results.get("memory", {})
    if "growth_bytes" in mem:
        rows.append(_row("Collection", f"RSS growth while recording {mem['n'] / 1e6:g}M events as fast as Python makes them "
                                       f"({mem['events_per_s'] / 1e3:,.0f}k events/s)",
                         _mb(mem["growth_bytes"]), f"RSS before {_mb(mem['rss_before_bytes'])}", "",
                         "< 64 MB", mem["growth_bytes"] < 64 * 2**20, "collection_memory", mem["growth_bytes"]))
    elif mem:
        rows.append(_err("Collection", "memory growth", mem, "collection_memory"))
    a1 = results.get("analysis_1M", {})
    if "trace_bytes_per_event" in a1:
        torch_b = ann.get("torch", {}).get("trace_bytes_per_event")
        rows.append(_row("Output", "trace_view.json bytes per event, plain / gzip -6",
                         f"{a1['trace_bytes_per_event']:.0f} / {a1['gzip_bytes_per_event']:.1f} B",
                         f"torch trace {torch_b:.0f} B (plain)" if torch_b else "",
                         f"gzip {a1['trace_bytes_per_event'] / a1['gzip_bytes_per_event']:.1f}x smaller", "",
                         None, "output_size", a1["trace_bytes_per_event"]))
    db = results.get("db", {})
    if "events_per_s" in db:
        rate, rss = db["events_per_s"], db["peak_rss_bytes"]
        rows.append(_row("Analysis", f"Ascend profiler database (ascend_*_profiler_0.db + analysis.db), "
                                     f"{db['events']:,} events written",
                         f"{_s(db['seconds'])}{_passes(db)}, peak RSS {_mb(rss)}", "", f"{rate / 1e6:.2f}M events/s",
                         ">= 1M events/s, peak RSS < 1 GB", rate >= 1e6 and rss < 1 << 30, "db_write", rate))
    elif "error" in db:
        rows.append(_err("Analysis", "Ascend profiler database write", db, "db_write"))
    rows += cluster_rows(results.get("cluster", {}))
    rows += memory_cost_rows(results.get("memcost", {}))
    rows += diff_rows(results.get("diff", {}))
    rows += foreign_rows(results.get("foreign", {}))
    return rows


def foreign_rows(fr: dict) -> list[dict]:
    """`npuprof analyse` of other tools' large traces, vs HTA TraceAnalysis and msprof-analyze's trace_view parser
    (benchmarks/bench_foreign.py)."""
    if not fr:
        return []
    if "error" in fr:
        return [_err("Other tools' traces", "`npuprof analyse` of large Kineto / trace_view.json traces", fr,
                     "foreign")]
    rows = []
    for key, what, size_key in (("kineto", f"a real HTA Kineto trace repeated {fr.get('kineto_copies', 25)}x",
                                 "kineto_bytes"),
                                ("trace_view", "the real Level1 torch_npu trace_view.json repeated "
                                               f"{fr.get('trace_view_copies', 60)}x", "trace_view_bytes"),
                                ("cann", "the real CANN 6.x/7.0 `msprof_*.json` device timeline (mindinsight's PROF_) "
                                         f"repeated {fr.get('cann_copies', 40)}x", "cann_bytes")):
        r = fr.get(key, {})
        if "npuprof" not in r:
            continue
        me, size = r["npuprof"], fr.get(size_key, 0)
        rate, rss = me["events_per_s"]["median"], me["peak_rss_bytes"]["max"]
        base, ratio = [], ""
        if "npuprof_orjson" in r:
            base.append(f"npuprof without msgspec (orjson{', events read one by one' if key == 'cann' else ''}) "
                        f"{_rng(r['npuprof_orjson']['seconds'], _s)}")
        if "hta" in r:
            base.append(f"HTA TraceAnalysis + temporal + kernel breakdown {_rng(r['hta']['seconds'], _s)}, "
                        f"peak RSS {_mb(r['hta']['peak_rss_bytes']['max'])}")
            ratio = f"{r['hta']['seconds']['median'] / me['seconds']['median']:.1f}x faster than HTA"
        if "msprof_analyze" in r:
            base.append(f"msprof-analyze compare's trace_view parser (NPUProfilingParser.load_data) "
                        f"{_rng(r['msprof_analyze']['seconds'], _s)}, "
                        f"peak RSS {_mb(r['msprof_analyze']['peak_rss_bytes']['max'])}")
            times = r["msprof_analyze"]["seconds"]["median"] / me["seconds"]["median"]
            ratio = (f"{times:.1f}x faster than msprof-analyze's parser" if times >= 1 else
                     f"{1 / times:.1f}x slower than msprof-analyze's parser (which loads the events, writes "
                     "nothing)")
        if "msprof_analyze_timeline" in r:
            tool = r["msprof_analyze_timeline"]
            base.append(f"msprof-analyze advisor's timeline parser (Msprof.parse_from_file on every msprof_*.json) "
                        f"{_rng(tool['seconds'], _s)}, peak RSS {_mb(tool['peak_rss_bytes']['max'])}")
            times = tool["seconds"]["median"] / me["seconds"]["median"]
            ratio = (f"{times:.1f}x faster than msprof-analyze's parser" if times >= 1 else
                     f"{1 / times:.1f}x slower than msprof-analyze's parser (which loads the events, writes "
                     "nothing)")
        rows.append(_row("Other tools' traces",
                         f"`npuprof analyse` of {what} ({me.get('events', 0):,} events, {_mb(size)}), whole process",
                         f"{_rng(me['seconds'], _s)}, {rate / 1e3:,.0f}k events/s, peak RSS {_mb(rss)}",
                         "; ".join(base), ratio,
                         f">= 500k events/s, peak RSS <= 4x the file{'s' if key == 'cann' else ''}",
                         rate >= 5e5 and rss <= 4 * size, f"foreign_{key}", rate))
    return rows


def diff_rows(df: dict) -> list[dict]:
    """`npuprof diff` vs HTA TraceDiff.compare_traces vs msprof-analyze compare (benchmarks/bench_diff.py)."""
    if not df:
        return []
    if "error" in df:
        return [_err("Diff", "`npuprof diff` vs HTA TraceDiff and msprof-analyze compare", df, "diff")]
    rows = []

    def others(r: dict) -> str:
        parts = [f"{label} {_rng(r[k], _s)}" if k in r else f"{label}: {r.get(k + '_error', 'not run')}"
                 for k, label in (("hta", "HTA TraceDiff.compare_traces"), ("msprof", "msprof-analyze compare"))]
        return "; ".join(parts)

    def ratio(r: dict) -> str:
        out = []
        for k, label in (("hta", "HTA"), ("msprof", "msprof-analyze")):
            if k in r:
                x = r[k]["median"] / r["npuprof"]["median"]
                out.append(f"{x:.1f}x faster than {label}" if x >= 1 else f"{1 / x:.1f}x slower than {label}")
        return ", ".join(out)

    real = df.get("real", {})
    if "npuprof" in real:
        ev = real.get("complete_events", [])
        rows.append(_row("Diff", "two runs compared, HTA's trace_diff pair (real GPU Kineto traces, "
                                 f"{' and '.join(f'{e:,}' for e in ev)} events), whole processes",
                         _rng(real["npuprof"], _s), others(real), ratio(real), "measured", None, "diff_real",
                         real["npuprof"]["median"]))
    elif real:
        rows.append(_err("Diff", "two runs compared, HTA's trace_diff pair", real, "diff_real"))
    syn = df.get("synthetic", {})
    if "npuprof_raw_runs" in syn:
        raw = syn["npuprof_raw_runs"]
        rows.append(_row("Diff", f"`npuprof diff` of two {syn['events']:,}-event npuprof runs, whole process "
                                 "(reading and analysing both, comparing, JSON)",
                         _rng(raw, _s), f"the comparison alone (analysed results) {_rng(syn['compare_only'], _s)}",
                         "", "< 2 s", raw["median"] < 2, "diff_1M_raw", raw["median"]))
    if "npuprof" in syn:
        rows.append(_row("Diff", f"two runs compared, the same two {syn['events']:,}-event runs as Kineto-form "
                                 "trace JSON (all three tools read the same files), whole processes",
                         _rng(syn["npuprof"], _s), others(syn), ratio(syn), "measured", None, "diff_1M_trace",
                         syn["npuprof"]["median"]))
    elif "error" in syn:
        rows.append(_err("Diff", "two 1M-event runs compared", syn, "diff_1M"))
    return rows


def memory_cost_rows(mc: dict) -> list[dict]:
    """profile_memory / python_memory on vs off (benchmarks/bench_profile_memory.py): step time ratios."""
    rows = []
    ms = mc.get("mindspore", {})
    if "npuprof_on_over_off" in ms:
        rows.append(_row("Memory profiling", "MindSpore 2.10 MLP step, `profile_memory=True` / off",
                         f"npuprof {_ratio(ms['npuprof_on_over_off'])}",
                         f"MindSpore's profiler alone {_ratio(ms['mindspore_on_over_off'])}", "", "measured", None,
                         "memcost_mindspore", ms["npuprof_on_over_off"]["median"]))
    elif ms:
        rows.append(_err("Memory profiling", "MindSpore profile_memory cost", ms, "memcost_mindspore"))
    off, on = mc.get("tensorflow_off", {}), mc.get("tensorflow_on", {})
    if "npuprof" in off and "npuprof" in on:
        ours = on["npuprof"]["median"] / off["npuprof"]["median"]
        theirs = on["tensorflow"]["median"] / off["tensorflow"]["median"]
        rows.append(_row("Memory profiling", "TF 2.21 Keras step, `profile_memory=True` (BFC allocator, its "
                                             "allocation events) / off: medians of two processes",
                         f"npuprof {ours:.2f}x ({_us(on['npuprof']['median'])} / {_us(off['npuprof']['median'])})",
                         f"TF's profiler alone, BFC / default allocator {theirs:.2f}x", "", "measured", None,
                         "memcost_tensorflow", ours))
    elif off or on:
        rows.append(_err("Memory profiling", "TensorFlow profile_memory cost", on if "error" in on else off,
                         "memcost_tensorflow"))
    py = mc.get("python", {})
    if "on_over_off" in py:
        rows.append(_row("Memory profiling", "pure-Python allocating step, `python_memory=True` (tracemalloc) / off",
                         f"{_ratio(py['on_over_off'])} ({_us(py['on']['median'])} / {_us(py['off']['median'])})",
                         "", "", "opt-in; measured", None, "memcost_python", py["on_over_off"]["median"]))
    elif py:
        rows.append(_err("Memory profiling", "python_memory cost", py, "memcost_python"))
    return rows


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def _tables_equal(res: dict) -> Optional[bool]:
    """True when every table the bench compared was equal, None when nothing was compared."""
    eq = {k: v for k, v in res.get("equal", {}).items() if not k.endswith("_note")}
    return all(v == "equal" for v in eq.values()) if eq else None


def cluster_rows(cl: dict) -> list[dict]:
    """`npuprof cluster` vs msprof-analyze `cluster` rows (benchmarks/bench_cluster.py)."""
    if not cl:
        return []
    if "error" in cl:
        return [_err("Analysis", "`npuprof cluster` vs msprof-analyze `cluster`", cl, "cluster_vs_msprof")]
    rows = []
    ver = cl.get("msprof_version", "")
    for key, what in (("real", "real {ranks}-rank torch_npu job (Ascend910B text export, {mb:.1f} MB)"),
                      ("scaled", "{ranks}-rank job made of {copies} copies of each of its ranks ({mb:.0f} MB; rank ids "
                                 "rewritten in profiler_info, directory names and communication peers; every "
                                 "timestamp shifted by one offset per rank{shift})")):
        r = cl.get(key)
        if not r:
            continue
        shifts = cl.get("gen", {}).get("shift_us_range")
        label = what.format(ranks=r["ranks"], mb=r["bytes"] / 2**20, copies=cl.get("gen", {}).get("copies", "?"),
                            shift=f", {shifts[0]:+d}…{shifts[1]:+d} µs" if shifts else "")
        np_ = r["npuprof"]
        ours = (f"{_rng(np_['seconds'], _s)}, peak PSS {_mb(np_['tree_pss_bytes']['max'])} "
                f"({np_['processes']} processes)")
        name = (f"`npuprof cluster` vs msprof-analyze `cluster -m all`, {label}, whole processes "
                "(peak PSS: the process tree's, sampled every 20 ms)")
        if "msprof" not in r:
            rows.append(_row("Analysis", name, ours, cl.get("msprof_missing", "msprof-analyze not available"),
                             "", ">= 3x faster at equal tables", None, f"cluster_vs_msprof_{key}"))
            continue
        ms, sp, eq = r["msprof"], r["speedup"], _tables_equal(r)
        theirs = (f"msprof-analyze {ver} {_rng(ms['seconds'], _s)}, peak PSS "
                  f"{_mb(ms['tree_pss_bytes']['max'])} ({ms['processes']} processes)")
        compared = ", ".join(k for k in r.get("equal", {}) if not k.endswith("_note"))
        name += f"; equal tables: {'yes' if eq else 'NO'} ({compared}, checked in this run)"
        met = bool(eq) and sp["median"] >= 3
        rows.append(_row("Analysis", name, ours, theirs,
                         _ratio(sp) + (" faster" if sp["median"] >= 1 else " the speed (npuprof slower)"),
                         ">= 3x faster at equal tables", met, f"cluster_vs_msprof_{key}", sp["median"]))
    return rows + cluster_scaling_rows(cl)


def _scaling_rows(sc: dict, label: str, key: str) -> list[dict]:
    """The 2-vs-1-worker and Dask-vs-pool rows of one ``scaling`` result."""
    rows: list[dict] = []
    load = lambda r: "load " + "/".join(f"{x:.1f}" for x in r["load1"])   # noqa: E731
    p1, p2, d2 = sc["process_1"], sc["process_2"], sc["dask_2"]
    job = f"{sc['ranks']}-rank {label} ({sc['bytes'] / 2**20:.0f} MB), whole processes, " \
          f"alternated {sc['reps']}x, 1-min load average at each run's start"
    sp = sc["workers_2_vs_1"]
    cm = sc.get("cpu_model", {})
    one = cm.get("process_1") or {"serial_cpu_s": cm.get("serial_cpu_s"), "workers_cpu_s": cm.get("workers_cpu_s_1")}
    two = cm.get("process_2", {}).get("workers_cpu_s")
    model = (f"; from CPU seconds (serial {one['serial_cpu_s']:.2f} s, workers {one['workers_cpu_s']:.2f} s"
             + (f", {two:.2f} s with 2 at once" if two else "") + f"): {cm['workers_2_vs_1']:.2f}x on 2 free cores"
             ) if cm else ""
    rows.append(_row("Analysis", f"`npuprof cluster --recompute`, process pool 2 workers vs 1, {job}",
                     f"2 workers {_rng(p2['seconds'], _s)} ({load(p2)})",
                     f"1 worker {_rng(p1['seconds'], _s)} ({load(p1)})", _ratio(sp) + " faster" + model,
                     ">= 1.8x on 2 cores", sp["median"] >= 1.8, "cluster_recompute_workers" + key, sp["median"]))
    dr = sc["dask_vs_process_2"]
    rows.append(_row("Analysis", f"`npuprof cluster --recompute --backend dask` (local Dask cluster) vs the "
                                 f"process pool, 2 workers each, {job}",
                     f"Dask {_rng(d2['seconds'], _s)} ({load(d2)})",
                     f"process pool {_rng(p2['seconds'], _s)} ({load(p2)})", _ratio(dr) + " the time" + (
                         f"; from CPU seconds (Dask serial {cm['dask_2']['serial_cpu_s']:.2f} s, workers "
                         f"{cm['dask_2']['workers_cpu_s']:.2f} s; pool {cm['process_2']['serial_cpu_s']:.2f} s, "
                         f"{cm['process_2']['workers_cpu_s']:.2f} s): {cm['dask_vs_process_2']:.2f}x on 2 free cores"
                         if "dask_vs_process_2" in cm else ""),
                     "<= 1.25x the process pool's time", dr["median"] <= 1.25, "cluster_dask_vs_process" + key,
                     dr["median"]))
    return rows


def cluster_scaling_rows(cl: dict) -> list[dict]:
    """``npuprof cluster --recompute``: 1 vs 2 workers and Dask vs the process pool, on the 32-rank copy and
    on 16 ranks of a user's size, and the driver's serial part per rank from 32 to 256 ranks
    (benchmarks/bench_cluster.py ``scaling``, ``heavier_ranks``, ``serial_per_rank``)."""
    rows: list[dict] = []
    if cl.get("scaling"):
        rows += _scaling_rows(cl["scaling"], "copy of the real job", "")
    heavy = cl.get("scaling_heavy")
    if heavy:
        rows += _scaling_rows(heavy, f"job of a user's rank size (each rank's trace_view.json the real one "
                                     f"x{heavy['trace_view_copies']})", "_user_size")
    spr = cl.get("serial_per_rank")
    if spr:
        sizes = sorted(spr.values(), key=lambda r: r["ranks"])
        per = [r["serial_cpu_ms_per_rank"] for r in sizes]
        start = max(r.get("startup_cpu_s", 0) for r in sizes)
        rows.append(_row("Analysis", "`npuprof cluster --recompute --workers 2`: the driver's serial CPU per rank "
                                     "(from the analysis's start to the first rank handed out + after the last "
                                     f"summary arrives; the process's start-up before it, <= {start:.2f} CPU s, "
                                     "apart), " + ", ".join(f"{r['ranks']}" for r in sizes)
                         + " ranks generated as make_job does",
                         ", ".join(f"{r['ranks']}: {r['serial_cpu_ms_per_rank']:.1f} ms" for r in sizes),
                         "wall: " + ", ".join(f"{r['serial_wall_ms_per_rank']:.1f} ms (load {r['load1']:.1f})"
                                              for r in sizes),
                         f"{per[-1] / per[0]:.2f}x from {sizes[0]['ranks']} to {sizes[-1]['ranks']} ranks",
                         "flat or falling per rank", per[-1] <= per[0] * 1.1, "cluster_serial_per_rank",
                         per[-1] / per[0]))
    return rows


def bounds(results: dict) -> list[str]:
    """The measured costs that bound the figures (clock, Python call, JSON encoding, disk)."""
    out = []
    ann = results.get("annotations", {})
    if "clock_pair" in ann:
        out.append(f"clock: a `perf_counter_ns()` pair {_ns(ann['clock_pair']['median'])} "
                   f"(empty loop iteration {_ns(ann['empty_loop']['median'])})")
        out.append(f"Python: an empty call {_ns(ann['python_call']['median'])}, an empty `with` block on a "
                   f"Python class (construct + `__enter__` + `__exit__`) {_ns(ann['with_empty']['median'])}")
    a1 = results.get("analysis_1M", {})
    if "trace_json_events_per_s" in a1:
        out.append(f"JSON encoding: trace_view.json alone {a1['trace_json_events_per_s'] / 1e6:.2f}M events/s "
                   f"({a1['trace_json_bytes_per_s'] / 1e6:.0f} MB/s, writes included); phases at 1M: "
                   + ", ".join(f"{k} {v:.2f} s" for k, v in a1.get("phases_s", {}).items()))
    cl = results.get("cluster", {})
    for key in ("real", "scaled"):
        r = cl.get(key, {}) if isinstance(cl, dict) else {}
        if "speedup" in r and r["speedup"]["median"] < 3:
            fast = r.get("npuprof_tool_table_ranks")
            how = (f"npuprof read the tool's own tables of {fast} of {r['ranks']} ranks"
                   + (" and parsed the others' events" if fast < r["ranks"] else "") if fast else
                   f"npuprof parsed every rank's events (the whole {r['bytes'] / 2**20:,.0f} MB: trace_view.json, "
                   f"kernel_details.csv, memory CSVs)")
            out.append(f"cluster ({r['ranks']} ranks): {how} ({r['npuprof']['cpu_seconds']['median']:.1f} CPU s) on "
                       f"{r.get('npuprof_backend', '?')} with {cl.get('cpus', '?')} CPUs and wrote CSV, JSON and "
                       f"Parquet; msprof-analyze's cluster only aggregates each rank's precomputed "
                       f"step_trace_time.csv and communication*.json ({r['precomputed_bytes'] / 2**10:,.0f} kB; "
                       f"{r['msprof']['cpu_seconds']['median']:.1f} CPU s, {r['msprof']['processes']} processes)")
    sustained = ann.get("sustained") or {}
    ck = (ann.get("clock_pair") or {}).get("median")
    slow = [k for k, v in sustained.items() if isinstance(v, dict) and "median" in v and ck
            and (v["median"] > 1000 or v["median"] > 6 * ck)]
    if slow and "record_function" in ann and "record_function_amortised" in ann:
        burst, amortised = ann["record_function"]["median"], ann["record_function_amortised"]["median"]
        how = "compiled" if ann.get("compiled") else "in Python"
        out.append(f"sustained medians ({', '.join(slow)}): the annotation itself ({how}: `record_function` in a "
                   f"burst, nothing converted: {_ns(burst)}, {burst / ck:.1f}x a clock pair) plus the conversion and "
                   f"write the recording thread does itself ({_ns(amortised - burst)} per event: amortised minus "
                   "burst)")
    spiky = [k for k, v in sustained.items() if isinstance(v, dict) and "worst" in v and v["worst"] > 2 * v["median"]]
    if spiky:
        out.append(f"sustained worst windows ({', '.join(spiky)}): a window holds one or two of the recording "
                   "thread's own 30,000-event writes, plus the flusher's periodic write when it lands there; "
                   "beyond that the spread is the machine's (other processes, the second core)")
    a10 = results.get("analysis_10M", {})
    if "events_per_s" in a10 and a10["events_per_s"]["median"] < ANALYSIS_GOAL:
        outputs = a10.get("outputs") or {}
        events = max(1, a10.get("events", 1))
        written = sum(outputs.values())
        line = (f"analysis at 10M: writing {written / events:.0f} B/event of outputs (trace_view.json, "
                "kernel_details.csv)")
        cold, warm = a1.get("disk_write_bytes_per_s"), a1.get("disk_rewrite_bytes_per_s")
        behind = a1.get("disk_write_behind_bytes_per_s")
        if cold and warm and "children_cpu_seconds" in a10:
            parent, child = a10["cpu_seconds"]["median"], a10["children_cpu_seconds"]["median"]
            cores = results.get("machine", {}).get("cores") or 1
            plain = f"{written / warm:.1f}–{written / cold:.1f} CPU s at the two plain write speeds below"
            at = f"{written / behind:.1f} s at the written-behind speed below (plain: {plain})" if behind else plain
            line += (f": {written / 1e9:.2f} GB, {at}, of the run's {parent + child:.1f} CPU s (parent {parent:.1f}, "
                     f"forked trace child {child:.1f}), where the goal allows {events / ANALYSIS_GOAL:.1f} s on "
                     f"{cores} cores for everything")
            if "system_seconds" in a10:
                line += (f"; of those CPU s, {a10['system_seconds']['median']:.1f} in the kernel (faulting in fresh "
                         f"memory for the event table, writing the outputs) and "
                         f"{a10['user_seconds']['median']:.1f} in npuprof's own code (parsing, sorting, the "
                         "analyzers, compiled row rendering)")
        out.append(line + "; loading the raw data is serial (load_raw_and_sort above)")
    if "disk_write_bytes_per_s" in a1:
        line = f"disk: plain buffered writes {a1['disk_write_bytes_per_s'] / 1e6:.0f} MB/s in the output directory"
        if "disk_write_behind_bytes_per_s" in a1:
            line += (f", {a1['disk_write_behind_bytes_per_s'] / 1e6:.0f} MB/s written behind as npuprof writes its "
                     "long outputs (most of the file leaves the page cache as it is written)")
        if "disk_rewrite_bytes_per_s" in a1:
            line += (f", {a1['disk_rewrite_bytes_per_s'] / 1e6:.0f} MB/s plain again right after deleting those "
                     "files (into memory just freed; memory the VM has not touched for a few seconds costs the "
                     "first figure)")
        out.append(line)
    return out


def markdown(results: dict, rows: list[dict]) -> str:
    m = results.get("machine", {})
    lines = [f"Measured by `make bench` on {m.get('summary', 'this machine')} "
             f"({results.get('started', '')}, {results.get('duration_s', 0) / 60:.1f} min). "
             "Medians of interleaved repetitions (balanced orders), [min–max]; ratios are per repetition. "
             f"{m.get('load_note', '')}".rstrip() + measured_note(results), "",
             "| Benchmark | npuprof | Baseline | Ratio | Goal | Status |", "|---|---|---|---|---|---|"]
    for r in rows:
        status = {True: "met", False: "**missed**", None: ""}[r["met"]]
        lines.append(f"| {r['benchmark']} | {r['npuprof']} | {r['baseline']} | {r['ratio']} | {r['goal']} | "
                     f"{status} |")
    b = bounds(results)
    if b:
        lines += ["", "What bounds these numbers here: " + "; ".join(b) + "."]
    lines += ["", "Method, workloads and the closing note per goal: [docs/performance.md](docs/performance.md). "
                  "Raw results: `benchmarks/results/latest.json`."]
    return "\n".join(lines) + "\n"


def measured_note(results: dict) -> str:
    """Which run measured which suites, where a partial re-run (``run.py --only ... --update``) kept the
    others from an earlier run; empty when one run measured the whole table."""
    by_run: dict[str, list[str]] = {}
    for suite, when in (results.get("measured_at") or {}).items():
        by_run.setdefault(when, []).append(suite)
    if len(by_run) < 2:
        return ""
    parts = [f"{', '.join(suites)} at {when}" for when, suites in sorted(by_run.items())]
    return " Suites measured in different runs: " + "; ".join(parts) + "."


def update_readme(path: Path, section: str) -> bool:
    """Replace the text between the bench markers; False (file untouched) when they are missing."""
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        return False
    new = pattern.sub(lambda _: f"{START}\n{section}{END}", text, count=1)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return True
