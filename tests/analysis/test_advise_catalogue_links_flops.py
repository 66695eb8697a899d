"""``npuprof advise``: the message catalogue (``--lang zh``), the ``bandwidth`` and ``slow_link`` rules on the
real Level1 runs (judged against torch_npu's own communication.json / communication_matrix.json), and the
FLOP formulas of convolutions, attention and element-wise kernels against hand-computed values.
"""
from __future__ import annotations

import json
import re
import string
from pathlib import Path

import pytest

from realdata import realdata

from npuprof.analysis.advice.flops import attention_flops, conv_flops, kernel_flops
from npuprof.analysis.advice.messages import LANGS, MESSAGES
from npuprof.cli import main

LEVEL1 = "msinsight/test/data/pytorch/text/level1"
RULES_DIR = Path(__file__).resolve().parents[2] / "core" / "analysis" / "advice" / "rules"
CJK = re.compile(r"[\u4e00-\u9fff]")


def _fields(text: str) -> set:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


# -- the catalogue ----------------------------------------------------------------------------------------

def test_every_message_has_both_languages_with_the_same_fields():
    for msg_id, texts in MESSAGES.items():
        assert set(texts) == set(LANGS), msg_id
        assert all(t.strip() for t in texts.values()), msg_id
        assert _fields(texts["en"]) == _fields(texts["zh"]), msg_id
        assert CJK.search(texts["zh"]), f"{msg_id}: no Chinese in its zh text"


def test_rules_name_catalogue_ids_and_hold_no_inline_title_or_advice():
    from npuprof.analysis.advice.rules import BUILTIN_RULES

    used = set()
    for source in RULES_DIR.glob("*.py"):
        text = source.read_text()
        used |= set(re.findall(r"ctx\.say\(\s*\"([\w.]+)\"", text))
        # a Finding's title and advice come from the catalogue: no string literal in those places
        for call in re.findall(r"Finding\(\"\w+\",\s*(.{0,12})", text):
            assert call.startswith(("ctx.say", "title")), (source.name, call)
    assert used and used <= set(MESSAGES), sorted(used - set(MESSAGES))
    assert {f"rule.{r.id}" for r in BUILTIN_RULES} <= set(MESSAGES)


def test_advise_lang_zh_prints_chinese_and_a_bad_lang_is_a_usage_error(capsys):
    run = realdata(f"{LEVEL1}/rank0_ascend_pt")
    assert main(["advise", str(run), "--json", "--lang", "zh"]) == 0
    (adv,) = json.loads(capsys.readouterr().out)["runs"]
    assert adv["findings"]
    for f in adv["findings"]:
        assert CJK.search(f["title"]) and CJK.search(f["advice"]), f["rule"]
    assert all(CJK.search(r["title"]) for r in adv["rules"])
    # the same numbers in both languages
    assert main(["advise", str(run), "--json"]) == 0
    (en,) = json.loads(capsys.readouterr().out)["runs"]
    assert [(f["rule"], f["at_stake_ms"]) for f in en["findings"]] == [(f["rule"], f["at_stake_ms"])
                                                                       for f in adv["findings"]]
    assert not any(CJK.search(f["title"] + f["advice"]) for f in en["findings"])
    # the terminal text too
    assert main(["advise", str(run), "--lang", "zh", "--rules", "breakdown"]) == 0
    assert "单步" in capsys.readouterr().out
    assert main(["advise", str(run), "--lang", "fr"]) == 2
    err = capsys.readouterr().err
    assert "--lang" in err and "'fr'" in err and "en, zh" in err


# -- bandwidth and slow_link on the real Level1 job ---------------------------------------------------------

@pytest.mark.parametrize("rank", [0, 1])
def test_bandwidth_names_the_operators_under_the_link_reference_that_torch_npu_measured(rank, capsys):
    run = realdata(f"{LEVEL1}/rank{rank}_ascend_pt")
    with open(run / "ASCEND_PROFILER_OUTPUT" / "communication.json") as fh:
        theirs = {op: info["Communication Bandwidth Info"]["HCCS"] for op, info in
                  json.load(fh)["step50"]["collective"].items() if op != "Total Op Info"}
    below = {op: bw for op, bw in theirs.items() if bw["Bandwidth(GB/s)"] < 0.8 * 18}
    assert below      # the real runs have HCCS operators under 14.4 GB/s
    assert main(["advise", str(run), "--json", "--rules", "bandwidth"]) == 0
    (f,) = json.loads(capsys.readouterr().out)["runs"][0]["findings"]
    head, *rows = f["evidence"]
    assert head["link type"] == "HCCS" and head["operators"] == len(theirs) and head["below"] == len(below)
    assert {r["op"]: r["bandwidth(GB/s)"] for r in rows} == pytest.approx(
        {op: bw["Bandwidth(GB/s)"] for op, bw in below.items()}, abs=1e-3)
    lost = sum(bw["Transit Time(ms)"] - bw["Transit Size(MB)"] / 18 for bw in below.values())
    assert f["at_stake_ms"] == pytest.approx(lost, abs=1e-3)      # one step
    # a reference given for the link type moves the judgement: at 15 GB/s nothing is below 12
    assert main(["advise", str(run), "--json", "--rules", "bandwidth", "--link-gbps", "HCCS=15"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["rules"][0]["status"] == "checked"
    assert main(["advise", str(run), "--rules", "bandwidth", "--link-gbps", "NVLINK=5"]) == 2
    assert "--link-gbps" in capsys.readouterr().err


def test_slow_link_compares_the_links_torch_npu_measured_and_pools_a_jobs_ranks(capsys):
    from npuprof.analysis.advice.rules.communication import _run_links
    from npuprof.analysis.pipeline import analyse_run

    job = realdata(LEVEL1)
    for rank in (0, 1):
        run = job / f"rank{rank}_ascend_pt"
        with open(run / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json") as fh:
            matrix = json.load(fh)["step50"]["collective"]
        totals = {(link, v["Transport Type"]): v for key, links in matrix.items() if "-total@" in key
                  for link, v in links.items() if v["Transport Type"] != "LOCAL"}
        mine = _run_links(analyse_run(run))
        assert set(mine) == set(totals)
        for key, (size, ms) in mine.items():
            assert size / ms == pytest.approx(totals[key]["Bandwidth(GB/s)"], abs=1e-3), key
    assert main(["advise", str(job), "--json", "--rules", "slow_link"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert runs[0]["run"].startswith("job: ")
    # 14 HCCS links within 15.1-16.0 GB/s on both ranks: none is slower than its peers
    assert [r["status"] for r in runs[0]["rules"]] == ["checked"] and runs[0]["findings"] == []
    assert all(r["rules"][0]["status"] == "checked" for r in runs[1:])


# -- FLOPs against hand-computed values -------------------------------------------------------------------

def test_conv_flops_are_two_n_cout_hout_wout_cin_kh_kw_over_groups():
    # NCHW, torch: x [8, 64, 56, 56], w [128, 64, 3, 3], out [8, 128, 56, 56]
    assert conv_flops([[8, 64, 56, 56], [128, 64, 3, 3], [128]], [[8, 128, 56, 56]]) == \
        2 * 8 * 128 * 56 * 56 * 64 * 3 * 3
    # grouped (depthwise, groups = 32): the weight holds Cin/groups = 1
    assert conv_flops([[2, 32, 10, 10], [32, 1, 3, 3]], [[2, 32, 8, 8]]) == 2 * 2 * 32 * 8 * 8 * 1 * 3 * 3
    # NHWC, TensorFlow: filter [Kh, Kw, Cin, Cout]
    assert conv_flops([[4, 28, 28, 3], [5, 5, 3, 16]], [[4, 24, 24, 16]], "NHWC") == 2 * 4 * 24 * 24 * 16 * 3 * 5 * 5
    # Conv3d NCDHW
    assert conv_flops([[1, 4, 8, 8, 8], [6, 4, 3, 3, 3]], [[1, 6, 6, 6, 6]]) == 2 * 6 * 6 * 6 * 6 * 4 * 27
    # Ascend's 5-D NC1HWC0 input with a FRACTAL_Z weight (the real AlexNet run): channels padded, not counted
    row = kernel_flops("Conv2D", "Conv2D", 100.0, "32,1,224,224,8;121,4,16,8;64", "32,8,55,55,8", "FLOAT",
                       "NC1HWC0;FRACTAL_Z;NCHW")
    assert row.flops is None and "NC1HWC0" in row.why
    # a weight whose Cout is not the output's channels is not a convolution we can count
    assert conv_flops([[8, 64, 56, 56], [100, 64, 3, 3]], [[8, 128, 56, 56]]) is None
    assert kernel_flops("Conv2DBackpropInput", "x", 1.0, "4;288,16,16,8", "32,32,13,13,8", "FLOAT").flops is None


def test_attention_flops_are_four_b_h_sq_sk_d_where_the_layout_is_known():
    # torch SDPA (B, H, S, D): q [2, 8, 128, 64], k/v [2, 8, 256, 64]
    assert attention_flops("aten::scaled_dot_product_attention", [[2, 8, 128, 64], [2, 8, 256, 64],
                                                                  [2, 8, 256, 64]]) == 4 * 2 * 8 * 128 * 256 * 64
    # Ascend FlashAttentionScore, 4-D: BNSD and BSND agree only when k's dims 1 and 2 are equal
    assert attention_flops("FlashAttentionScore", [[1, 16, 16, 32], [1, 16, 16, 32]]) == 4 * 1 * 16 * 16 * 16 * 32
    assert attention_flops("FlashAttentionScore", [[1, 8, 512, 64], [1, 8, 512, 64]]) is None
    # 3-D BSH vs SBH: ambiguous unless the two leading dims agree
    assert attention_flops("FlashAttentionScore", [[4, 4, 1024], [4, 4, 1024]]) == 4 * 4 * 4 * 1024 * 4
    row = kernel_flops("FlashAttentionScoreGrad", "x", 1.0, "1,16,16,32;1,16,16,32", "", "DT_BF16")
    assert row.flops is None        # the backward pass is not counted with the forward formula


def test_elementwise_flops_are_the_output_elements():
    row = kernel_flops("Add", "Add", 2.0, "32,4096;32,4096", "32,4096", "FLOAT")
    assert row.flops == 32 * 4096 and row.dtype == "fp32"
    assert kernel_flops("Relu", "Relu", 1.0, "32,64,55,55", "32,64,55,55", "DT_FLOAT16").flops == 32 * 64 * 55 * 55
