"""The second red-team round's wrong kernels (and controls), each built from a task's golden AST by
a minimal edit, as a careless or cheating model would write it. The catalogue files in
tests/redteam/ came from these (their ``why`` rewritten once the harness caught them).

Run from the repository root: ``python tools/redteam_candidates.py [NAME ...] --out DIR`` (default
``redteam_candidates/``), then judge them with ``python tools/redteam_verdicts.py DIR/*.json``.
"""
import copy, json, sys
from pathlib import Path
import yaml

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


def golden(task):
    return copy.deepcopy(yaml.safe_load((BENCH / f"{task}.yaml").read_text())["golden"])


class Round:
    """One round's candidates: ``kernel`` registers a function that writes its file(s) with
    ``write`` into ``out``; ``main`` writes those named on the command line (all without names)
    into ``out`` or the folder after ``--out``. Every round's script is one of these."""

    def __init__(self) -> None:
        self.kernels = {}
        self.out = Path("redteam_candidates")

    def kernel(self, fn):
        self.kernels[fn.__name__] = fn
        return fn

    def write(self, task, what, outcome, why, kernel, code=None):
        """One file; ``code``: the first diagnostic's code the harness gave it, where recorded."""
        name = f"{task.split('/')[1]}_{what}"
        entry = {"task": task, "outcome": outcome, "why": why, "kernel": kernel}
        if code is not None:
            entry = {"task": task, "outcome": outcome, "code": code, "why": why, "kernel": kernel}
        (self.out / f"{name}.json").write_text(json.dumps(entry, indent=1) + "\n")

    def main(self, argv) -> None:
        args = list(argv)
        if "--out" in args:
            at = args.index("--out")
            self.out = Path(args[at + 1])
            del args[at:at + 2]
        self.out.mkdir(parents=True, exist_ok=True)
        for n in args or list(self.kernels):
            self.kernels[n]()
            print("wrote", n)


ROUND = Round()
kernel, write = ROUND.kernel, ROUND.write


def find_let(body, name):
    """The let statement binding name (searching nested loops and ifs)."""
    for s in body:
        if s.get("op") == "let" and s["name"] == name:
            return s
        for key in ("body", "then", "else"):
            if isinstance(s.get(key), list):
                r = find_let(s[key], name)
                if r is not None:
                    return r
    return None


def find_ops(body, op, found=None):
    """Every statement of this op (searching nested loops and ifs)."""
    found = [] if found is None else found
    for s in body:
        if s.get("op") == op:
            found.append(s)
        for key in ("body", "then", "else"):
            if isinstance(s.get(key), list):
                find_ops(s[key], op, found)
    return found


def find_all_lets(body, name, found=None):
    found = [] if found is None else found
    for s in body:
        if s.get("op") == "let" and s["name"] == name:
            found.append(s)
        for key in ("body", "then", "else"):
            if isinstance(s.get(key), list):
                find_all_lets(s[key], name, found)
    return found


def loops(body):
    return [s for s in body if s.get("op") == "for"]


# ---------------------------------------------------------------- attention without max
@kernel
def attention_f16_no_running_max():
    g = golden("hard/attention_f16")
    for loop, m_name in zip(loops(g["body"]), ("m_i", "m_t")):
        loop["carry"] = [c for c in loop["carry"] if c["name"] not in ("m_i", "m_t")]
        body = loop["body"]
        body[:] = [s for s in body if not (s.get("op") == "let" and s["name"] in ("m_new", "alpha"))]
        find_let(body, "p")["value"] = {"op": "exp2_ftz", "x": {"op": "mul", "lhs": "qk", "rhs": 0.18033688011112042}}
        l_old = "l_i" if m_name == "m_i" else "l_t"
        acc_old = "acc" if m_name == "m_i" else "acc_t"
        find_let(body, "l_new")["value"] = {"op": "add", "lhs": l_old, "rhs": {"op": "sum", "x": "p", "axis": 1}}
        find_let(body, "acc_new")["value"]["acc"] = acc_old
    write("hard/attention_f16", "no_running_max", "wrong_result",
          "online softmax without the running maximum: p = exp2(q.k * scale * log2 e) unshifted, summed and "
          "multiplied into v after rounding p to f16. Exact on the drawn inputs (q, k standard normal: scores "
          "*scale ~ N(0, 1), exp < 2**8), but once a score * scale passes ~11 (ln 65504) p overflows f16 to inf "
          "and the row is inf/NaN; past ~88 the f32 exp overflows too. F.scaled_dot_product_attention subtracts "
          "the row maximum (the prompt: an online softmax). Exposed by q, k of scale ~4 (scores*scale ~ N(0, 16)); "
          "the task has no extreme_domains, so no draw ever has large scores", g)


# ---------------------------------------------------------------- eps guards on zero rows
@kernel
def cosine_similarity_no_eps():
    g = golden("med/cosine_similarity")
    for n in ("x_norm", "y_norm"):
        s = find_let(g["body"], n)
        s["value"] = s["value"]["lhs"]
    write("med/cosine_similarity", "no_eps_floor", "wrong_result",
          "drops the max(||x||, 1e-8) floors the prompt gives: dot / (||x|| * ||y||). A row of x (or y) that is all "
          "zeros (padding) gives 0 / 0 = NaN where F.cosine_similarity gives 0. Exact otherwise. Inputs are standard "
          "normal with isolated zeros (with_zeros) but never an all-zero row (no zero_rows domain), so nothing "
          "shows it", g)


@kernel
def normalize_rows_no_eps():
    g = golden("med/normalize_rows")
    s = find_let(g["body"], "norm")
    s["value"] = s["value"]["lhs"]
    write("med/normalize_rows", "no_eps_floor", "wrong_result",
          "drops the max(norm, 1e-12) guard the prompt asks for: x / ||x||. An all-zero row gives 0/0 = NaN where "
          "F.normalize gives zeros. No draw has an all-zero row (no zero_rows domain; isolated zeros only), so it "
          "passes", g)


# ---------------------------------------------------------------- one-pass variance
@kernel
def group_norm_one_pass_variance():
    g = golden("hard/group_norm")
    stats, norm = g["launches"]
    find_let(stats["body"], "m2")["value"] = {"op": "sum", "x": {"op": "mul", "lhs": "vals", "rhs": "vals"}, "axis": 0}
    stats["body"] = [s for s in stats["body"] if not (s.get("op") == "let" and s["name"] in ("m", "d"))]
    # normalize: acc_q sums the raw squares; var = E[x^2] - mean^2
    find_let(norm["body"], "acc_q2")["value"] = {"op": "add", "lhs": "acc_q", "rhs": {"op": "where", "cond": "q_ok", "x": "qm2", "y": 0.0}}
    loop = loops(norm["body"])[1]
    loop["body"] = [s for s in loop["body"] if not (s.get("op") == "let" and s["name"] in ("qs", "qn", "qdev"))]
    find_let(norm["body"], "inv_std")["value"] = {"op": "rsqrt", "x": {"op": "add", "lhs": {"op": "sub", "lhs": {"op": "div", "lhs": {"op": "sum", "x": "acc_q", "axis": 0}, "rhs": "total"}, "rhs": {"op": "mul", "lhs": "mean", "rhs": "mean"}}, "rhs": "eps"}}
    write("hard/group_norm", "one_pass_variance", "wrong_result",
          "one-pass variance: launch 1 stores each chunk's sum and sum of squares, launch 2 takes "
          "var = E[x^2] - mean^2 in f32. Catastrophic cancellation when the group mean is large against its spread "
          "(activations of mean 100, std 1: var off by ~100%, even negative -> NaN); layernorm_stats and "
          "batchnorm_forward_train have extreme domains (uniform [50, 54], [1000, 1001]) for exactly this, group_norm "
          "has none: x is standard normal in every draw, where the formula is accurate", g)


# ---------------------------------------------------------------- grid axis 1 past 65535
@kernel
def embedding_bf16_tokens_on_grid_axis_1():
    g = golden("hard/embedding_bf16")
    g["meta"] = [{"name": "BLOCK_D", "value": 256}]
    g["grid"] = [{"op": "cdiv", "lhs": "D", "rhs": "BLOCK_D"}, "T"]
    g["body"] = [
        {"op": "let", "name": "token", "value": {"op": "program_id", "axis": 1}},
        {"op": "let", "name": "dims", "value": {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id", "axis": 0}, "rhs": "BLOCK_D"}, "rhs": {"op": "arange", "size": "BLOCK_D"}}},
        {"op": "let", "name": "token_id", "value": {"op": "load", "ptr": {"op": "add", "lhs": "ids", "rhs": "token"}}},
        {"op": "let", "name": "id_valid", "value": {"op": "and", "lhs": {"op": "ge", "lhs": "token_id", "rhs": 0}, "rhs": {"op": "lt", "lhs": "token_id", "rhs": "V"}}},
        {"op": "let", "name": "dim_in_bounds", "value": {"op": "lt", "lhs": "dims", "rhs": "D"}},
        {"op": "let", "name": "row", "value": {"op": "load", "ptr": {"op": "add", "lhs": "weight", "rhs": {"op": "add", "lhs": {"op": "mul", "lhs": "token_id", "rhs": "D"}, "rhs": "dims"}}, "mask": {"op": "and", "lhs": "id_valid", "rhs": "dim_in_bounds"}, "other": 0.0}},
        {"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": {"op": "add", "lhs": {"op": "mul", "lhs": "token", "rhs": "D"}, "rhs": "dims"}}, "value": "row", "mask": "dim_in_bounds"},
    ]
    write("hard/embedding_bf16", "tokens_on_grid_axis_1", "launch_error",
          "one token per program on grid axis 1 (grid [cdiv(D, 256), T]): CUDA allows at most 65535 programs on "
          "axes 1 and 2, and the task allows T up to 65536, so a call with T = 65536 cannot launch (bad_grid). "
          "CPU draws keep T <= cpu_max 300 plus a past-extent draw below 4 * 256, and a size the grid spreads over "
          "gets no range-maximum draw in CPU mode; nothing evaluates the grid at the range's maximum", g)


@kernel
def index_add_rows_tokens_on_grid_axis_1():
    g = golden("expert/index_add_rows")
    scatter = g["launches"][1]
    scatter["grid"] = [{"op": "cdiv", "lhs": "D", "rhs": "BLOCK_D"}, "T"]
    scatter["body"] = [
        {"op": "let", "name": "token", "value": {"op": "program_id", "axis": 1}},
        {"op": "let", "name": "dims", "value": {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id", "axis": 0}, "rhs": "BLOCK_D"}, "rhs": {"op": "arange", "size": "BLOCK_D"}}},
        {"op": "let", "name": "dmask", "value": {"op": "lt", "lhs": "dims", "rhs": "D"}},
        {"op": "let", "name": "target", "value": {"op": "load", "ptr": {"op": "add", "lhs": "index", "rhs": "token"}}},
        {"op": "let", "name": "tile", "value": {"op": "load", "ptr": {"op": "add", "lhs": "src", "rhs": {"op": "add", "lhs": {"op": "mul", "lhs": "token", "rhs": "D"}, "rhs": "dims"}}, "mask": "dmask"}},
        {"op": "atomic_add", "ptr": {"op": "add", "lhs": "out", "rhs": {"op": "add", "lhs": {"op": "mul", "lhs": "target", "rhs": "D"}, "rhs": "dims"}}, "val": "tile", "mask": "dmask", "sem": "relaxed"},
    ]
    g["meta"] = [m for m in g["meta"] if m["name"] != "BLOCK_T"]
    write("expert/index_add_rows", "tokens_on_grid_axis_1", "launch_error",
          "the scatter launch puts one source row per program on grid axis 1 (grid [cdiv(D, 128), T]); CUDA caps "
          "axes 1 and 2 at 65535 programs and the task allows T up to 262144, so most of the task's range cannot "
          "launch (bad_grid). CPU draws keep T <= 2000 (+ a past-extent draw below 4 * 1024) and a gridded size "
          "gets no range-maximum draw in CPU mode", g)


@kernel
def group_norm_last_program_relaxed_atomics():
    e = json.loads((ROOT / "tests" / "redteam" / "group_norm_last_program_one_pass_variance.json").read_text())
    g = e["kernel"]

    def relax(stmts):
        for s in stmts:
            if s.get("op", "").startswith("atomic_"):
                s["sem"] = "relaxed"
            for key in ("body", "then", "else"):
                if isinstance(s.get(key), list):
                    relax(s[key])
    for launch in g["launches"]:
        relax(launch["body"])
    write("hard/group_norm", "last_program_relaxed_atomics", "wrong_result",
          "the catalogue's correct 'last block' group norm (group_norm_last_program_finishes_control) with every "
          "atomic at sem 'relaxed' (a model shaving fences): each program adds its partial sums, then takes a "
          "ticket; the program with the last ticket reads the totals and normalises the group. With relaxed "
          "atomics nothing orders a program's sum adds before its ticket add, so on a GPU the last program can see "
          "its ticket while another program's partial sums are not yet visible (CUDA's threadFenceReduction needs "
          "the fence / release-acquire pair the default acq_rel gives). The interpreter runs atomics sequentially "
          "consistent, in every order it tries, whatever their sem: it cannot tell this from the control. The "
          "checker should refuse a named (old-value) atomic whose result gates reads of other atomically updated "
          "memory under relaxed semantics, or the interpreter should model relaxed visibility", g)


@kernel
def pairwise_distance_no_eps():
    g = golden("med/pairwise_distance")
    s = find_let(g["body"], "difference")
    s["value"]["x"] = s["value"]["x"]["lhs"]
    write("med/pairwise_distance", "no_eps", "wrong_result",
          "drops PyTorch's eps: sqrt(sum (x - y)^2) instead of sqrt(sum (x - y + 1e-6)^2), which the prompt spells "
          "out ('added to each of the N differences'). On independent normal rows the eps moves the distance by "
          "~1e-6 relative, far inside rtol 1e-4, so no draw shows it; where x and y share a row (the distance of "
          "a vector to itself, duplicates in a batch) the reference is sqrt(N) * 1e-6 (5e-5 at N = 2500, past "
          "atol 1e-5) and the kernel gives 0. No domain draws equal rows", g)


@kernel
def attention_f16_first_4096_keys():
    g = golden("hard/attention_f16")
    body = g["body"]
    i = next(k for k, s in enumerate(body) if s.get("op") == "let" and s["name"] == "full_blocks")
    body.insert(i, {"op": "let", "name": "S_keys", "value": {"op": "minimum", "lhs": "S", "rhs": 4096}})
    find_let(body, "full_blocks")["value"] = {"op": "idiv", "lhs": "S_keys", "rhs": "BLOCK_N"}
    tail = loops(body)[1]
    tail["stop"] = "S_keys"
    qk = find_let(tail["body"], "qk")
    qk["value"]["cond"]["x"]["rhs"] = "S_keys"
    write("hard/attention_f16", "first_4096_keys", "wrong_result",
          "attends to the first min(S, 4096) keys only (the key loops stop at S_keys = minimum(S, 4096)): right "
          "for S <= 4096, wrong for every longer sequence (the task allows S up to 16384). The targeted draw past "
          "the kernel's extent (the literal 4096) and the range-maximum draw are the sizes that show it, but the "
          "interpreter cannot afford a quadratic attention past 4096 keys: those draws are left out as unjudged "
          "and the CPU verdict is ok", g)


@kernel
def paged_attention_decode_f16_no_running_max():
    g = golden("expert/paged_attention_decode_f16")
    loop = loops(g["body"])[0]
    loop["carry"] = [c for c in loop["carry"] if c["name"] != "run_max"]
    loop["body"] = [s for s in loop["body"] if not (s.get("op") == "let" and s["name"] in ("new_max", "correction"))]
    find_let(loop["body"], "p")["value"] = {"op": "exp", "x": "scores"}
    find_let(loop["body"], "new_sum")["value"] = {"op": "add", "lhs": "run_sum", "rhs": {"op": "sum", "x": "p", "axis": 0}}
    find_let(loop["body"], "new_acc")["value"]["lhs"] = "acc"
    write("expert/paged_attention_decode_f16", "no_running_max", "wrong_result",
          "softmax without the running maximum: p = exp(score) unshifted, summed, and the weighted sum of v divided "
          "by it. Fine while every score * 0.125 < 88; a score past it overflows exp to inf and the head's output is "
          "NaN (real decode scores reach that; softmax(x) must not depend on a shift). q and the caches are "
          "standard normal in every draw (scores ~ N(0, 1)) and the task has no extreme domains, so it passes", g)

@kernel
def copysign_negates_when_signs_differ():
    g = golden("easy/copysign")
    g["body"] = g["body"][:2] + [
        {"op": "let", "name": "v", "value": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": "offs"}, "mask": "mask"}},
        {"op": "let", "name": "sign_source", "value": {"op": "load", "ptr": {"op": "add", "lhs": "y", "rhs": "offs"}, "mask": "mask"}},
        {"op": "let", "name": "differ", "value": {"op": "ne", "lhs": {"op": "lt", "lhs": "v", "rhs": 0.0}, "rhs": {"op": "lt", "lhs": "sign_source", "rhs": 0.0}}},
        {"op": "store", "ptr": {"op": "add", "lhs": "out", "rhs": "offs"}, "value": {"op": "where", "cond": "differ", "x": {"op": "neg", "x": "v"}, "y": "v"}, "mask": "mask"},
    ]
    write("easy/copysign", "negates_when_signs_differ", "wrong_result",
          "negates x where x < 0 and y < 0 disagree, else passes x through: for x = -0.0 and y > 0 it returns -0.0 "
          "where torch.copysign (and the prompt: |x| with y's sign, positive where y > 0) gives +0.0; the function's "
          "whole job is the sign bit. The extreme draws put +0.0 and -0.0 into x (with_zeros), so the case occurs, "
          "but compare_tensors (kernelgen/task/compare.py) compares floats with torch.isclose, for which -0.0 == "
          "+0.0: a wrong sign of zero is never seen (1 / out would be -inf instead of +inf)", g)


@kernel
def sign_nan_passes_through():
    g = golden("easy/sign")
    body = g["body"]
    v = next(s for s in body if s.get("op") == "let" and s["value"].get("op") == "load")["name"]
    body[:] = [s for s in body if not (s.get("op") == "let" and s["name"] in ("positive", "negative"))]
    store = next(s for s in body if s.get("op") == "store")
    store["value"] = {"op": "where", "cond": {"op": "gt", "lhs": v, "rhs": 0.0}, "x": 1.0,
                      "y": {"op": "where", "cond": {"op": "lt", "lhs": v, "rhs": 0.0}, "x": -1.0, "y": v}}
    write("easy/sign", "nan_passes_through", "wrong_result",
          "1 where x > 0, -1 where x < 0, else x itself: right for +-0.0 (compared equal to 0.0), but NaN comes out "
          "as NaN where the prompt (and torch.sign) says 0.0. easy/sign has no extreme_domains, so no draw holds "
          "a NaN (relu and row_max list nan/inf specials; sign, whose prompt names NaN's result, does not)", g)


@kernel
def index_add_rows_grid_capped_at_4096_programs():
    g = golden("expert/index_add_rows")
    scatter = g["launches"][1]
    scatter["grid"][0] = {"op": "minimum", "lhs": {"op": "cdiv", "lhs": "T", "rhs": "BLOCK_T"}, "rhs": 4096}
    write("expert/index_add_rows", "grid_capped_at_4096_programs", "wrong_result",
          "caps the scatter launch's token axis at 4096 programs (grid [minimum(cdiv(T, 16), 4096), ...]) without "
          "the grid-stride loop that would make programs take several token blocks: source rows past 4096 * 16 = "
          "65536 are never added, and the task allows T up to 262144. block_extent (kernelgen/task/draws.py) "
          "takes the literal 4096 and the 16 x 128 tile (2048) as the extent, so the past-extent draw puts T in "
          "(4096, 16384), all covered; a grid that is partly constant (minimum(..., literal)) is not multiplied "
          "by the block as a fully constant grid is, and a gridded size gets no range-maximum draw in CPU mode", g)


@kernel
def rmsnorm_f16_squares_in_f16():
    g = golden("hard/rmsnorm_f16")
    first = loops(g["body"])[0]
    chunk = find_let(first["body"], "chunk")
    raw = chunk["value"]["x"]
    chunk["value"] = {"op": "cast", "x": {"op": "mul", "lhs": raw, "rhs": raw}, "dtype": "f32"}
    find_let(first["body"], "new_partial_squares")["value"] = {"op": "add", "lhs": "partial_squares", "rhs": "chunk"}
    write("hard/rmsnorm_f16", "squares_in_f16", "wrong_result",
          "squares x in f16 (x * x on the loaded f16 values, then cast to f32 for the sum), where the prompt says "
          "compute everything in f32. For |x| > 256 the square overflows f16 to inf, the row's rsqrt is 0 and the "
          "whole row of y is 0 (LLM activations have such outliers); below it the f16 rounding of each square "
          "(2**-11) averages out far inside rtol 1e-2. x is standard normal in every draw (no extreme_domains; "
          "row_std_f16 has scale 300 for exactly this), so the kernel passes", g)


@kernel
def outer_greater_not_le():
    g = golden("easy/outer_greater")
    store = next(s for s in g["body"] if s.get("op") == "store")
    store["value"] = {"op": "not", "x": {"op": "le", "lhs": "a_col", "rhs": "b_row"}}
    write("easy/outer_greater", "not_le_true_for_nan", "wrong_result",
          "computes a > b as not(a <= b): the same on ordered values, but true where a or b is NaN, and the "
          "prompt says 'false when either is NaN'. easy/outer_greater has no extreme_domains with nan specials, "
          "so a and b never hold a NaN and the kernel passes", g)


@kernel
def embedding_bf16_token_per_program_axis_0_control():
    ROUND.kernels["embedding_bf16_tokens_on_grid_axis_1"]()
    k = json.loads((ROUND.out / "embedding_bf16_tokens_on_grid_axis_1.json").read_text())["kernel"]
    k["grid"] = ["T", {"op": "cdiv", "lhs": "D", "rhs": "BLOCK_D"}]
    k["body"][0]["value"]["axis"] = 0
    k["body"][1]["value"]["lhs"]["lhs"]["axis"] = 1
    write("hard/embedding_bf16", "token_per_program_axis_0_control", "ok",
          "CONTROL (correct): embedding_bf16_tokens_on_grid_axis_1 with the axes swapped: one token per program on "
          "axis 0 (up to 2**31 - 1 programs), the dimension blocks on axis 1 (at most 16). Launchable over the "
          "whole range; a fix that checks grids at the ranges' maxima must pass it", k)


@kernel
def index_add_rows_grid_capped_with_stride_loop_control():
    g = golden("expert/index_add_rows")
    scatter = g["launches"][1]
    scatter["grid"][0] = {"op": "minimum", "lhs": {"op": "cdiv", "lhs": "T", "rhs": "BLOCK_T"}, "rhs": 4096}
    scatter["params"].append({"name": "tblocks", "value": {"op": "cdiv", "lhs": "T", "rhs": "BLOCK_T"}})
    body = scatter["body"]
    dims_row = body[1]
    inner = [s for s in body if s is not dims_row]
    inner[0]["value"]["lhs"]["lhs"] = "tb"
    scatter["body"] = [dims_row, {"op": "for", "var": "tb", "start": {"op": "program_id", "axis": 0}, "stop": "tblocks",
                                  "step": {"op": "num_programs", "axis": 0}, "body": inner}]
    write("expert/index_add_rows", "grid_capped_with_stride_loop_control", "ok",
          "CONTROL (correct): index_add_rows_grid_capped_at_4096_programs with the grid-stride loop it lacks: "
          "program p adds token blocks p, p + 4096, ... (step num_programs), so every source row is added for any "
          "T", g)


@kernel
def sign_nan_to_zero_control():
    ROUND.kernels["sign_nan_passes_through"]()
    k = json.loads((ROUND.out / "sign_nan_passes_through.json").read_text())["kernel"]
    store = next(s for s in k["body"] if s.get("op") == "store")
    store["value"]["y"]["y"] = 0.0
    write("easy/sign", "where_chain_zero_otherwise_control", "ok",
          "CONTROL (correct): sign_nan_passes_through with 0.0 (not x) in the last branch: 1, -1, else 0.0, which "
          "gives 0.0 for zeros and NaN as the prompt says", k)


FIRST_BLOCK = {"op": "minimum", "lhs": "N", "rhs": "BLOCK"}


@kernel
def row_argmax_first_block_only():
    g = golden("med/row_argmax")
    loops(g["body"])[0]["stop"] = FIRST_BLOCK
    write("med/row_argmax", "first_block_only", "wrong_result",
          "the chunk loop stops at minimum(N, BLOCK): only the first 1024 columns are searched, so a row whose "
          "maximum lies past column 1023 gets an index inside the first block. The targeted draw past the extent "
          "(N in (1024, 4096)) and the range maximum (N = 8192) are there to catch one-block kernels, but the "
          "domain is integers in [-20, 20]: a row of more than 1024 such values holds 20 in its first block with "
          "probability 1 - (40/41)**1024 ~ 1 - 1e-11, and the first 20 of the row is then the first 20 of the "
          "block. The ties domain that tests the first-index rule saturates the maximum, hiding truncated scans", g)


@kernel
def top1_mask_first_block_max():
    g = golden("med/top1_mask")
    loops(g["body"])[0]["stop"] = FIRST_BLOCK
    write("med/top1_mask", "first_block_max", "wrong_result",
          "takes the row maximum over the first 1024 columns only (the max loop stops at minimum(N, BLOCK)), then "
          "marks every element equal to it: wrong for any row whose maximum is past the first block. The domain "
          "(integers in [-3, 3]) puts 3 in the first block of every row longer than 1024 (probability "
          "1 - (6/7)**1024), so the past-extent and range-maximum draws agree with the reference", g)


@kernel
def row_any_above_first_block_only():
    g = golden("med/row_any_above")
    loops(g["body"])[0]["stop"] = FIRST_BLOCK
    write("med/row_any_above", "first_block_only", "wrong_result",
          "tests only the first 1024 columns of each row (loop stop minimum(N, BLOCK)): a row whose only element "
          "above the threshold is past column 1023 gives false. With integers in [-3, 3] and thresholds from "
          "{-2, ..., 2.5}, a row of more than 1024 values either has an element above the threshold in its first "
          "block (threshold <= 2: probability 1 - (6/7)**1024) or none anywhere (2.5): the long draws cannot tell "
          "the kernel from the reference", g)


@kernel
def embedding_bag_mean_f16_empty_bag_nan():
    g = golden("expert/embedding_bag_mean_f16")
    c = find_let(g["body"], "count")
    c["value"]["x"] = c["value"]["x"]["lhs"]
    write("expert/embedding_bag_mean_f16", "empty_bag_divides_by_zero", "wrong_result",
          "divides the bag's sum by its size without the max(size, 1) guard: an empty bag (offsets[b] == "
          "offsets[b + 1], which the prompt names: 'an empty bag gives a row of zeros') gives 0 / 0 = NaN. "
          "Offsets are uniform cut points of [0, T] ('starts' domain), so an empty bag needs two equal cuts: "
          "likely at T small against B, rare at T >> B**2; whether any draw has one is luck of the seed", g)


@kernel
def dropout_residual_layernorm_one_pass_variance():
    g = golden("expert/dropout_residual_layernorm")
    first, second, third = loops(g["body"])
    first["carry"].append({"name": "partial_squares", "init": {"op": "full", "shape": ["BLOCK"], "value": 0.0, "dtype": "f32"}, "next": "new_partial_squares"})
    first["body"].append({"op": "let", "name": "hz", "value": {"op": "where", "cond": "in_row", "x": "hs", "y": 0.0}})
    first["body"].append({"op": "let", "name": "new_partial_squares", "value": {"op": "fma", "x": "hz", "y": "hz", "z": "partial_squares"}})
    g["body"].remove(second)
    find_let(g["body"], "rstd")["value"] = {"op": "rsqrt", "x": {"op": "add", "lhs": {"op": "sub", "lhs": {"op": "div", "lhs": {"op": "sum", "x": "partial_squares", "axis": 0}, "rhs": "row_length"}, "rhs": {"op": "mul", "lhs": "mean", "rhs": "mean"}}, "rhs": "eps"}}
    write("expert/dropout_residual_layernorm", "one_pass_variance", "wrong_result",
          "sums h and h**2 in the first pass and takes var = E[h^2] - mean^2 in f32 (one pass fewer over h): "
          "catastrophic cancellation once a row's mean is large against its spread (a residual stream with an "
          "offset of 100 and unit spread: var off by ~100%, or negative and NaN). x and residual are standard "
          "normal in every draw (no domains, no extreme_domains), so the mean is ~0 and the formula is exact "
          "enough; layernorm_stats and batchnorm_forward_train carry large-mean extreme domains for this mistake", g)


@kernel
def paged_attention_decode_f16_exp2_running_max_control():
    g = golden("expert/paged_attention_decode_f16")
    loop = loops(g["body"])[0]
    L2E = 1.4426950408889634
    find_let(loop["body"], "correction")["value"] = {"op": "exp2", "x": {"op": "mul", "lhs": {"op": "sub", "lhs": "run_max", "rhs": "new_max"}, "rhs": L2E}}
    find_let(loop["body"], "p")["value"] = {"op": "exp2", "x": {"op": "mul", "lhs": {"op": "sub", "lhs": "scores", "rhs": "new_max"}, "rhs": L2E}}
    write("expert/paged_attention_decode_f16", "exp2_running_max_control", "ok",
          "CONTROL (correct): the golden online softmax (running maximum, rescaled sum and accumulator) written with "
          "exp2 of (s - m) * log2(e) instead of exp: what paged_attention_decode_f16_no_running_max lacks; a fix "
          "(large-magnitude q/k draws) must keep passing it", g)


@kernel
def log1p_generic_log_of_one_plus_x():
    g = golden("easy/log1p_generic")
    store = next(s for s in g["body"] if s.get("op") == "store")
    store["value"]["x"] = {"op": "log", "x": {"op": "add", "lhs": 1.0, "rhs": "v"}}
    write("easy/log1p_generic", "log_of_one_plus_x", "wrong_result",
          "log(1 + x) instead of log1p(x), the very formula the prompt rules out ('accurate for x near 0'): "
          "1 + x rounds away x's low bits. On the extreme draws' x (normal, scale 1e-4) the f32 result is off by up "
          "to 100% relative (x below 6e-8 gives 0), ~80% of elements beyond rtol 1e-4 (checked in torch), yet by "
          "at most 6e-8 absolute: f32's atol 1e-5 (kernelgen/task/compare.py TOLERANCES) is larger than the "
          "outputs' whole error, so nothing fails; f64 likewise (error 1e-16 absolute against atol 1e-12). The "
          "extreme domain was chosen for exactly this, but the absolute floor of the comparison defeats it", g)


def tanh_by_exp_ratio(z):
    """(exp(2z) - 1) / (exp(2z) + 1): inf / inf = NaN once 2z > 88.7."""
    e = {"op": "exp", "x": {"op": "mul", "lhs": 2.0, "rhs": z}}
    return {"op": "div", "lhs": {"op": "sub", "lhs": e, "rhs": 1.0}, "rhs": {"op": "add", "lhs": e, "rhs": 1.0}}


@kernel
def tanh_f16_exp_ratio():
    g = golden("easy/tanh_f16")
    store = next(s for s in g["body"] if s.get("op") == "store")
    store["value"]["x"] = tanh_by_exp_ratio("v")
    write("easy/tanh_f16", "exp_ratio", "wrong_result",
          "tanh(x) as (exp(2x) - 1) / (exp(2x) + 1) in f32 (a common hand-written tanh): for x > 44.4, exp(2x) "
          "overflows and inf / inf gives NaN where tanh is 1 (f16 inputs reach 65504; activations of 50-100 are "
          "ordinary); within 2.5 ulp elsewhere. x is normal of scale 2 in every draw (no extreme_domains), |x| < "
          "~10, so the kernel passes. mish, softplus and log_sigmoid carry scale-100 extreme domains for this kind "
          "of overflow; tanh_f16 does not", g)


@kernel
def gelu_tanh_exp_ratio():
    g = golden("easy/gelu_tanh")
    store = next(s for s in g["body"] if s.get("op") == "store")
    store["value"]["rhs"]["rhs"] = tanh_by_exp_ratio("inner")
    write("easy/gelu_tanh", "exp_ratio_tanh", "wrong_result",
          "the tanh of the GELU approximation as (exp(2z) - 1) / (exp(2z) + 1) (Triton has had no tl.tanh, and "
          "this is the version much hand-written Triton uses): for x > ~9.3 (z > 44.4) exp(2z) overflows and the tanh "
          "is inf / inf = NaN, so y = NaN where gelu(x) = x (negative x are fine: exp -> 0 gives -1). x is standard normal in "
          "every draw (no extreme_domains), so |x| < 6 and the kernel passes", g)


# (new kernels go above this line)
if __name__ == "__main__":
    ROUND.main(sys.argv[1:])
