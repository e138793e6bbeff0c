"""Deeply nested programs, generated as text: nested whiles, nested cases, call chains."""

from __future__ import annotations

T = "tensor<2x3xf32>"
TT = "tensor<3x2xf32>"


def nested_whiles(depth: int) -> str:
    """``depth`` whiles, each in the body of the one around it; the innermost transposes."""
    lines = [f"func.func @main(%x: {T}) -> {TT} {{"]
    lines.append("  %f = stablehlo.constant dense<false> : tensor<i1>")
    prev = "%x"
    for k in range(depth):
        lines.append(f"  %w{k} = stablehlo.while(%a{k} = {prev}) : {T}")
        lines.append("   cond {")
        lines.append("    stablehlo.return %f : tensor<i1>")
        lines.append("   } do {")
        prev = f"%a{k}"
    lines.append(f"    %t = stablehlo.transpose {prev}, dims = [1, 0] : ({T}) -> {TT}")
    lines.append(f"    %n = stablehlo.negate %t : {TT}")
    lines.append(f"    %b = stablehlo.transpose %n, dims = [1, 0] : ({TT}) -> {T}")
    last = "%b"
    for k in reversed(range(depth)):
        lines.append(f"    stablehlo.return {last} : {T}")
        lines.append("   }")
        last = f"%w{k}"
    lines.append(f"  %r = stablehlo.transpose {last}, dims = [1, 0] : ({T}) -> {TT}")
    lines.append(f"  return %r : {TT}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def nested_cases(depth: int) -> str:
    """``depth`` cases, each in the second branch of the one around it, reading outer values."""
    lines = [f"func.func @main(%x: {T}, %i: tensor<i32>) -> {TT} {{"]
    lines.append(f"  %y = stablehlo.transpose %x, dims = [1, 0] : ({T}) -> {TT}")
    for k in range(depth):
        lines.append(f'  %c{k} = "stablehlo.case"(%i) ({{')
        lines.append(f"    stablehlo.return %y : {TT}")
        lines.append("  }, {")
    lines.append(f"    %n = stablehlo.negate %y : {TT}")
    last = "%n"
    for k in reversed(range(depth)):
        lines.append(f"    stablehlo.return {last} : {TT}")
        lines.append(f"  }}) : (tensor<i32>) -> {TT}")
        last = f"%c{k}"
    lines.append(f"  return {last} : {TT}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def call_chain(depth: int) -> str:
    """@main calls @f0, which calls @f1, ... down to @f{depth-1}, which transposes."""
    lines = [f"func.func @main(%x: {T}) -> {TT} {{",
             f"  %r = func.call @f0(%x) : ({T}) -> {TT}",
             f"  return %r : {TT}", "}"]
    for k in range(depth - 1):
        lines += [f"func.func private @f{k}(%x: {T}) -> {TT} {{",
                  f"  %n = stablehlo.negate %x : {T}",
                  f"  %r = func.call @f{k + 1}(%n) : ({T}) -> {TT}",
                  f"  return %r : {TT}", "}"]
    lines += [f"func.func private @f{depth - 1}(%x: {T}) -> {TT} {{",
              f"  %t = stablehlo.transpose %x, dims = [1, 0] : ({T}) -> {TT}",
              f"  return %t : {TT}", "}"]
    return "\n".join(lines) + "\n"
