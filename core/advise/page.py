"""The advice as text (terminal, rich) and as one self-contained HTML page (or a section of the report).

Example::

    write_advice_page(advice_list, Path("advice.html"))
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any, Sequence

from ..export.svg import CSS, html_table
from ..export.svg import escape as _e
from ..fileio import atomic_write

STATUS_TEXT = {"found": "found", "checked": "checked: nothing found", "not_checked": "not checked",
               "error": "error"}


def _cell(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return _e(json.dumps(value, ensure_ascii=False))
    return "N/A" if value is None else _e(value)


def evidence_groups(rows: list) -> list:
    """Consecutive evidence rows with the same columns, as (columns, rows): one table each (a rule may give
    a summary row, then detail rows)."""
    groups: list = []
    for r in rows:
        keys = list(r)
        if groups and groups[-1][0] == keys:
            groups[-1][1].append(r)
        else:
            groups.append((keys, [r]))
    return groups


def _evidence_table(rows: list) -> str:
    return "".join(html_table(headers, [[_cell(r.get(h)) for h in headers] for r in part])
                   for headers, part in evidence_groups(rows))


def advice_section(advices: Sequence[Any], heading: str = "Advice") -> str:
    """The findings (largest at stake first) with their evidence, then each rule's status, per run."""
    out = [f"<h2>{_e(heading)}</h2>"]
    for adv in advices:
        step = "N/A" if adv.step_ms is None else f"{adv.step_ms:.3f} ms"
        out.append(f'<p class="meta">{_e(adv.run)}: {adv.steps} step(s), mean step {step}; findings below '
                   f'{adv.min_ms:g} ms per step: {adv.below_min}</p>')
        if adv.partial:
            out.append("<p><b>data quality: partial</b></p><ul>" +
                       "".join(f"<li>{_e(i['subject'])}: {_e(i['problem'])}</li>"
                               for i in adv.data_quality.get("issues", [])) + "</ul>")
        for f in adv.findings:
            share = "N/A" if f.share_of_step is None else f"{f.share_of_step * 100:.1f}%"
            out.append(f"<h3>[{_e(f.severity)}] {_e(f.title)}</h3>"
                       f"<p>rule <code>{_e(f.rule)}</code> &middot; at stake {f.at_stake_ms:.3f} ms per step "
                       f"({share} of the step)</p><p>{_e(f.advice)}</p>")
            if f.affected_by_quality:
                out.append("<p><i>data quality: " + _e("; ".join(f.affected_by_quality)) + "</i></p>")
            out.append(_evidence_table(f.evidence))
        out.append(html_table(["rule", "title", "status", "needs / error"],
                              [[_e(o.rule), _e(o.title), _e(STATUS_TEXT.get(o.status, o.status)),
                                _e(o.needs or o.error)] for o in adv.outcomes]))
    return "\n".join(out)


def write_advice_page(advices: Sequence[Any], path: Path) -> Path:
    """One self-contained HTML page of the advice."""
    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    html = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>npuprof advise</title><style>{CSS}</style>"
            f"</head><body><h1>npuprof advise</h1><p class='meta'>{_e(stamp)}</p>{advice_section(advices)}"
            f"</body></html>")
    atomic_write(path, html)
    return path


def print_advice(advices: Sequence[Any], console: Any) -> None:
    """The findings and the rules' status on a rich console."""
    from rich.table import Table as RichTable

    for adv in advices:
        step = "N/A" if adv.step_ms is None else f"{adv.step_ms:.3f} ms"
        console.rule(f"{adv.run}  ({adv.steps} step(s), mean step {step})")
        for f in adv.findings:
            share = "N/A" if f.share_of_step is None else f"{f.share_of_step * 100:.1f}%"
            from rich.markup import escape

            console.print(f"[bold]{f.at_stake_ms:10.3f} ms[/bold] ({share}) {escape(f'[{f.severity}]')} {f.rule}: "
                          f"{escape(f.title)}", markup=True, highlight=False)
            console.print(f"    {f.advice}", highlight=False, markup=False)
            if f.affected_by_quality:
                console.print(f"    data quality: {'; '.join(f.affected_by_quality)}", markup=False)
            for headers, part in evidence_groups(f.evidence):
                t = RichTable(show_edge=False, pad_edge=False)
                for h in headers:
                    t.add_column(str(h))
                for r in part[:10]:
                    t.add_row(*[_plain(r.get(h)) for h in headers])
                console.print(t)
                if len(part) > 10:
                    console.print(f"    ... {len(part) - 10} more row(s) (--json has them all)", markup=False)
        if adv.below_min:
            console.print(f"{adv.below_min} finding(s) below --min-ms {adv.min_ms:g}", markup=False)
        for o in adv.outcomes:
            if o.status != "found":
                tail = f": needs {o.needs}" if o.needs else f": {o.error}" if o.error else ""
                console.print(f"  {o.rule}: {STATUS_TEXT.get(o.status, o.status)}{tail}", markup=False,
                              highlight=False)


def _plain(value: Any) -> str:
    if value is None:
        return "N/A"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
