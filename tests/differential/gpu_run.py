"""Differential test against XLA:GPU's layout assignment, one report per GPU.

    python -m tests.differential.gpu_run --count 300 --seed 0 --gpu a100,h100 [--jobs 2]
        [--corpus all|generated|models] [--start 0] [--only 3,7] [--cache DIR] [--refresh]
        [--timeout 180] [--json OUT] [--report OUT.txt] [--show 12]

Generates GPU programs (``gpu_programs.py``) and builds the model-library
programs (``models.py``: flax linen / nnx, haiku, equinox, optax), compiles each deviceless with
XLA:GPU for every ``--gpu`` (a shipped name from ``stablehlo_layout/targets/gpus/`` or
a ``GpuTargetConfigProto`` file) keeping the layout-assignment dumps
(``gpu_oracle.py``; cached under
``bench/cache/gpu-differential/<generator hash>/<gpu>/s<seed>/<index>/``), runs
our ``xla-gpu`` target with the matching ``gpu`` on the raw BEFORE dump and
compares it with XLA's AFTER dump (``compare.py``).

Per GPU the report gives: named rank>=2 values agreeing; the same over the
non-trivial ones (XLA's layout is not row-major); XLA's copies matched by
(source value, target layout), and ours that XLA does not make; copy bytes;
errors (compile, our pass, the harness); the kinds of difference; and the
first differences with both sides shown.  Exit status 0 whatever the
agreement (it is a measuring tool); 2 when the oracle cannot be loaded.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections import Counter
from typing import Any

from tests.support import ROOT

from .gpu_oracle import GPU_ORACLE_VERSION, config_path, gpu_name, oracle_available

HERE = os.path.dirname(os.path.abspath(__file__))  # this harness's folder: its program sources
DEFAULT_CACHE = os.path.join(ROOT, "bench", "cache", "gpu-differential")
DEFAULT_GPUS = "a100,h100"


def generator_hash() -> str:
    """Changes whenever the programs or the way XLA:GPU is run change."""
    h = hashlib.sha1()
    for name in ("programs.py", "gpu_programs.py"):
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(f.read())
    h.update(str(GPU_ORACLE_VERSION).encode())
    try:
        import importlib.metadata as md

        for pkg in ("jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt"):
            h.update(md.version(pkg).encode())
    except Exception:
        pass
    return h.hexdigest()[:10]


def _gpu_dir(gpu: str) -> str:
    """The GPU's name and a hash of its config (an edited config compiles anew)."""
    with open(config_path(gpu), "rb") as f:
        return f"{gpu_name(gpu)}-{hashlib.sha1(f.read()).hexdigest()[:6]}"


def program_dir(cache: str, gpu: str, seed: int, index: int) -> str:
    return os.path.join(cache, generator_hash(), _gpu_dir(gpu), f"s{seed}", f"{index:04d}")


def model_dir(cache: str, gpu: str, name: str) -> str:
    from .models import corpus_hash

    return os.path.join(cache, f"models-{corpus_hash()}-{generator_hash()}", _gpu_dir(gpu), name)


def process(seed: int, index: int, cache: str, gpu: str, refresh: bool = False,
            model: str | None = None) -> dict[str, Any]:
    """Oracle (cached) + comparison for one program (generated, or ``model`` of models.py) on one GPU.

    Never raises: failures come back as a result with their status.
    """
    from .compare import compare_dumps
    from .gpu_oracle import run_gpu_oracle
    from .run import compare_one

    ident = f"models/{model}" if model is not None else f"s{seed}/{index}"
    base: dict[str, Any] = {"seed": seed, "index": index, "gpu": gpu_name(gpu), "id": ident}
    if model is not None:
        base["model"] = model

    def build() -> Any:
        if model is not None:
            from .models import build

            return build(model)
        from .gpu_programs import generate

        return generate(seed, index)

    return compare_one(base, lambda: model_dir(cache, gpu, model) if model is not None else
                       program_dir(cache, gpu, seed, index), refresh, build,
                       lambda program, d: run_gpu_oracle(program, gpu, d),
                       lambda res: compare_dumps(res.before, res.after, target="xla-gpu", gpu=gpu, unique_keys=True))


# -- report ----------------------------------------------------------------------------------

def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.2f}%" if b else "n/a"


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in results if r["status"] == "ok"]
    total = lambda key: sum(r.get(key, 0) for r in ok)  # noqa: E731
    return {
        "programs": len(results),
        "compared": len(ok),
        "skipped": Counter(r.get("reason", "")[:120] for r in results if r["status"] == "skipped"),
        "tool_errors": [r for r in results if r["status"] == "tool-error"],
        "harness_errors": [r for r in results if r["status"] == "harness-error"],
        "late_xla_errors": Counter(r["jax_error"][:100] for r in ok if r.get("jax_error")),
        "values": total("values"), "agree": total("agree"),
        "nontrivial": total("nontrivial"), "nontrivial_agree": total("nontrivial_agree"),
        "xla_copies": total("xla_copies"), "xla_copies_matched": total("xla_copies_matched"),
        "our_copies": total("our_copies"), "our_copies_unmatched": total("our_copies_unmatched"),
        "xla_bytes": total("xla_copy_bytes"), "our_bytes": total("our_copy_bytes"),
        "agreeing_programs": sum(1 for r in ok if r.get("agrees")),
        "more_copies": [r["id"] for r in ok if r.get("our_copies", 0) > r.get("xla_copies", 0)],
        "more_bytes": [r["id"] for r in ok if r.get("our_copy_bytes", 0) > r.get("xla_copy_bytes", 0)],
        "equivalent": sum(1 for r in ok for d in r["diffs"] if d["kind"] == "layout" and d.get("equivalent")),
    }


def _layout_kind(r: dict[str, Any], d: dict[str, Any]) -> str:
    op = r.get("_opcodes", {}).get(d["name"].split("{")[0], d["op"])
    same = " (the same bytes: they differ only in size-1 dims)" if d.get("equivalent") else ""
    return f"layout of {op}: {d['pattern']}{same}"


def difference_kinds(results: list[dict[str, Any]], copies: tuple[str, str] = ("xla_copy_info", "our_copy_info"),
                     extra: Any = None) -> Counter:
    """Differences by kind: layouts, ``extra(r)``'s further kinds (the TPU report's tiles), and
    the copies under the result keys ``copies`` (XLA's, ours)."""
    kinds: Counter = Counter()
    for r in results:
        if r["status"] != "ok":
            continue
        for d in r["diffs"]:
            if d["kind"] == "layout":
                kinds[_layout_kind(r, d)] += 1
        if extra is not None:
            kinds.update(extra(r))
        count_copy_kinds(r, kinds, r.get(copies[0], []), r.get(copies[1], []))
    return kinds


def count_copy_kinds(r: dict[str, Any], kinds: Counter, xla_copies: list[dict[str, Any]],
                     our_copies: list[dict[str, Any]]) -> None:
    """The copy differences of one program, by kind and the op copied (the GPU and TPU reports)."""
    for c in xla_copies:
        if not c["matched"]:
            what = "no relayout" if c["src_layout"] == c["dst"] else "relayout"
            kinds[f"XLA copy we do not make ({what}) of {_opcode_of(r, c['src'])}"] += 1
    for c in our_copies:
        if not c["in_xla"]:
            kinds[f"our copy XLA does not make, of {_opcode_of(r, c['src'])}"] += 1


def _opcode_of(r: dict[str, Any], key: str) -> str:
    return r.get("_opcodes", {}).get(key.split("{")[0], "value")


def format_report(results: list[dict[str, Any]], gpu: str, show: int = 12,
                  elapsed: float | None = None, title: str | None = None) -> str:
    s = summarize(results)
    _annotate_opcodes(results)
    from .run import status_lines

    L = status_lines(s, title or f"XLA:GPU {gpu}", elapsed)
    L.append(f"named rank>=2 values agreeing:   {s['agree']}/{s['values']} = {_pct(s['agree'], s['values'])}"
             f"  (of the others, {s['equivalent']} differ only in size-1 dims)")
    L.append(f"non-trivial (XLA not row-major): {s['nontrivial_agree']}/{s['nontrivial']} = "
             f"{_pct(s['nontrivial_agree'], s['nontrivial'])}")
    L.append(f"XLA copies matched by (source, layout): {s['xla_copies_matched']}/{s['xla_copies']} = "
             f"{_pct(s['xla_copies_matched'], s['xla_copies'])};  ours {s['our_copies']}, "
             f"of which XLA does not make {s['our_copies_unmatched']}")
    L.append(f"copy bytes: ours {s['our_bytes']}  XLA {s['xla_bytes']}")
    for label in ("copies", "bytes"):
        ids = s[f"more_{label}"]
        L.append(f"programs where ours has MORE {label} than XLA: {len(ids)}" + (f": {', '.join(ids[:8])}" if ids else ""))
    L.append(f"programs agreeing fully: {s['agreeing_programs']}/{s['compared']}")
    kinds = difference_kinds(results)
    if kinds:
        L.append("")
        L.append("difference kinds (count):")
        for k, n in kinds.most_common(show):
            L.append(f"  {n:5d}  {k}")
    from .run import unmatched_copies, unmatched_copy_lines

    unmatched = unmatched_copies(results)
    if unmatched:
        L.append("")
        L.extend(unmatched_copy_lines(unmatched, lambda r, key: f"{_opcode_of(r, key)} {key}"))
    L.append("")
    L.append(f"first {show} differences (ours | XLA):")
    n = 0
    for r in results:
        if r["status"] != "ok" or n >= show:
            continue
        info = r.get("program", {})
        prog = ("; ".join(info.get("steps", [])) or info.get("description", ""))[:150]
        lines: list[str] = []
        for d in r["diffs"]:
            if d["kind"] == "layout":
                lines.append(f"    {d['name']} ({d['op']}): ours {d['ours']} | XLA {d['xla']}")
                lines.append(f"      XLA: {d['line']}")
        for c in r.get("xla_copy_info", []):
            if not c["matched"]:
                lines.append(f"    XLA copy of {c['src']} {c['src_layout']} -> {c['dst']} ({c['bytes']} B): ours none")
                lines.append(f"      XLA: {c['line']}")
        for c in r.get("our_copy_info", []):
            if not c["in_xla"]:
                lines.append(f"    our copy of {c['src']} {c['src_layout']} -> {c['dst']}: XLA none")
        if lines:
            n += 1
            L.append(f"  [{r['id']}] {prog}")
            L.extend(lines[:12])
            if len(lines) > 12:
                L.append(f"    ... {len(lines) - 12} more lines; dumps in {r.get('dir', '?')}")
    return "\n".join(L)


def _annotate_opcodes(results: list[dict[str, Any]]) -> None:
    """Opcode of every copied source, for the difference kinds (read from the AFTER dump)."""
    from .oracle import parse_hlo

    for r in results:
        if r["status"] != "ok" or not r.get("dir") or "_opcodes" in r:
            continue
        try:
            with open(os.path.join(r["dir"], "after.txt")) as f:
                hlo = parse_hlo(f.read())
        except (OSError, ValueError):
            continue
        names = {c["src"].split("{")[0] for c in r.get("xla_copy_info", []) + r.get("our_copy_info", [])}
        names |= {d["name"].split("{")[0] for d in r["diffs"] if d["kind"] == "layout"}
        r["_opcodes"] = {n: _describe(hlo, n) for n in names if n in hlo.instrs}


def _describe(hlo: Any, name: str) -> str:
    ins = hlo.instrs[name]
    if ins.opcode == "custom-call":
        import re

        m = re.search(r'custom_call_target="([^"]+)"', ins.attrs)
        return f"custom-call {m.group(1)}" if m else "custom-call"
    where = "" if hlo.comps[ins.comp].is_entry else " (in a called computation)"
    if ins.opcode == "parameter":
        return "entry parameter" if not where else "parameter" + where
    return ins.opcode + where


def main(argv: list[str] | None = None) -> int:
    from .run import corpus_arguments, output_arguments

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_arguments(ap)
    ap.add_argument("--gpu", default=DEFAULT_GPUS, help=f"comma-separated GPU names or config files ({DEFAULT_GPUS})")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per program")
    output_arguments(ap, DEFAULT_CACHE)
    a = ap.parse_args(argv)
    ok, why = oracle_available()
    if not ok:
        print(f"gpu_run: {why}", file=sys.stderr)
        return 2
    gpus = [g for g in a.gpu.split(",") if g]
    for g in gpus:
        try:
            config_path(g)
        except FileNotFoundError as e:
            print(f"gpu_run: {e}", file=sys.stderr)
            return 2
    from .run import corpora_of, run_parallel, write_results

    corpora, why = corpora_of(a)
    if why:
        print(f"gpu_run: {why}", file=sys.stderr)
        return 2

    reports, everything = [], {}
    for g in gpus:
        for corpus, items in corpora:
            tasks = [{**t, "cache": a.cache, "gpu": g, "refresh": a.refresh} for t in items]
            t0 = time.monotonic()
            results = run_parallel(tasks, a.jobs, a.timeout)
            reports.append(format_report(results, f"{gpu_name(g)}, {corpus} corpus", a.show, time.monotonic() - t0))
            everything[f"{gpu_name(g)}/{corpus}"] = results
    text = "\n\n".join(reports)
    print(text)
    if a.report:
        with open(a.report, "w") as f:
            f.write(f"$ python -m tests.differential.gpu_run {' '.join(argv if argv is not None else sys.argv[1:])}\n")
            f.write(text + "\n")
    write_results(everything, a.json or os.path.join(a.cache, f"last_run_s{a.seed}.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
